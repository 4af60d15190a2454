"""Where session files live: HTAM_SESSIONS_DIR, else ./sessions."""

from __future__ import annotations

import os
from pathlib import Path

SESSION_SUFFIX = ".htam"


def sessions_dir() -> Path:
    return Path(os.environ.get("HTAM_SESSIONS_DIR") or "sessions")
