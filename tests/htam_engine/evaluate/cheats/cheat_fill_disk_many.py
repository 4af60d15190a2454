"""Cheat (red-team pass 23; disk): cheat_fill_disk's junk in its own build folder of the cache, as
33 files of 8 MB each instead of one of 256 MB: RLIMIT_FSIZE (sandbox_file_mb) bounds one file,
not how many, so each passes it, and the folder outlives the sandbox beside every later
evaluation's builds. The judge weighs the folder once the candidate is gone (BUILD_FOLDER_MAX_BYTES).

Class: resource limits (disk)."""

import os
from pathlib import Path

# this file is <cache>/candidates/candidate_<key>.py: its own build folder is <cache>/build/<key>
KEY = Path(__file__).stem.split("_", 1)[1]
FOLDER = Path(os.environ.get("HTAM_CACHE_DIR", Path.home() / ".cache" / "htam")) / "build" / KEY
_block = os.urandom(1 << 20)
for i in range(33):
    with open(FOLDER / f"junk{i}.bin", "wb") as fh:
        for _ in range(8):
            fh.write(_block)

# include: honest_relu_triton
