"""Where session files live: the `sessions_dir` setting (HTAM_SESSIONS_DIR), else ./sessions."""

from __future__ import annotations

from pathlib import Path

from htam_engine import settings

SESSION_SUFFIX = ".htam"


def sessions_dir() -> Path:
    return settings.path_value("sessions_dir")
