"""Removing what a sandbox wrote, whatever modes it left on it.

A sandbox runs as the judge's user and sets the modes of what it makes: a folder made without the
owner's write or search bit (mkdir's mode, the umask) cannot be emptied, and shutil.rmtree with
ignore_errors leaves it in place without a word. A /dev/shm folder of 1.5 GB so made outlived the
sweep meant to remove it (red-team pass 26, cheat_shm_chmod_leftover; seccomp.py now refuses the
chmod it used, not a mode given at creation). The owner may always change a mode, so the judge
gives the owner's bits back, top down, and removes the tree again. A link is removed itself,
never what it points to.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from pathlib import Path

# What the owner needs of a folder to list and empty it, and of a file to open it for writing.
FOLDER_BITS = stat.S_IRWXU
FILE_BITS = stat.S_IRUSR | stat.S_IWUSR


def give_back_bits(path: str | Path, bits: int | None = None) -> None:
    """The owner's bits (FOLDER_BITS for a folder, FILE_BITS for a file, or `bits`) added to the
    mode of `path` where missing; a link, or what is not this user's, is left as it is."""
    with contextlib.suppress(OSError):
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode) or st.st_uid != os.getuid():
            return
        want = bits if bits is not None else FOLDER_BITS if stat.S_ISDIR(st.st_mode) else FILE_BITS
        if st.st_mode & want != want:
            os.chmod(path, stat.S_IMODE(st.st_mode) | want)


def open_all(top: str | Path) -> None:
    """Every folder beneath `top`, `top` included, given the owner's bits, top down (a folder
    must be searchable before what is in it can be read)."""
    stack = [os.fspath(top)]
    while stack:
        folder = stack.pop()
        give_back_bits(folder, FOLDER_BITS)
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            stack += [e.path for e in entries if e.is_dir(follow_symlinks=False)]


def remove(path: str | Path) -> bool:
    """Remove the file, link or folder tree at `path`; True when nothing is left there."""
    path = os.fspath(path)
    for attempt in range(2):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return True
        except OSError:  # its parent cannot be searched
            give_back_bits(os.path.dirname(path), FOLDER_BITS)
            continue
        with contextlib.suppress(OSError):
            if stat.S_ISDIR(st.st_mode):
                if attempt:
                    open_all(path)
                shutil.rmtree(path)
            else:
                os.unlink(path)
        if not os.path.lexists(path):
            return True
        give_back_bits(os.path.dirname(path), FOLDER_BITS)  # unlinking needs the parent's write bit
    return not os.path.lexists(path)
