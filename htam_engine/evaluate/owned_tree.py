"""Reading and removing what a sandbox wrote, whatever shape and modes it left it in.

A sandbox runs as the judge's user and sets the modes of what it makes: a folder made without the
owner's write or search bit (mkdir's mode, the umask) cannot be emptied, and shutil.rmtree with
ignore_errors left such a folder of 1.5 GB in /dev/shm without a word (red-team pass 26,
cheat_shm_chmod_leftover; seccomp.py now refuses the chmod it used, not a mode given at
creation). The owner may always change a mode, so the owner's bits are given back as the walk
meets each folder. And a chain of folders 4,000 deep, made by an honest-looking candidate in its
temporary folder, outran Python's recursion (shutil.rmtree and os.walk recurse once a level on
Python 3.11) and every path length: the RecursionError took the zygote down, and every later zygote,
which removes what a dead one left, died at its start (red-team pass 27, cheat_deep_private_tree).
So the walk here keeps no recursion and no paths: it holds one folder open at a time and moves
between folders by descriptor (a child by name, the parent through ".."). A link is never
followed: it is counted or removed itself.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Callable

# What the owner needs of a folder to list and empty it, and of a file to open it for writing.
FOLDER_BITS = stat.S_IRWXU
FILE_BITS = stat.S_IRUSR | stat.S_IWUSR
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def give_back_bits(path: str | Path, dir_fd: int | None = None) -> None:
    """The owner's bits (FOLDER_BITS for a folder, FILE_BITS for a file) added to the mode of
    `path` (relative to the folder open as `dir_fd`, if given) where missing; a link, or what is
    not this user's, is left as it is."""
    with contextlib.suppress(OSError):
        st = os.lstat(path, dir_fd=dir_fd)
        if stat.S_ISLNK(st.st_mode) or st.st_uid != os.getuid():
            return
        want = FOLDER_BITS if stat.S_ISDIR(st.st_mode) else FILE_BITS
        if st.st_mode & want != want:
            os.chmod(path, stat.S_IMODE(st.st_mode) | want, dir_fd=dir_fd)


def _listing(fd: int) -> list[os.DirEntry]:
    with contextlib.suppress(OSError), os.scandir(fd) as entries:
        return list(entries)
    return []


def _opened(parent: int, entry: os.DirEntry) -> int | None:
    """Folder `entry` of the folder open as `parent`, opened (its owner's bits given back first
    where missing), or None where it cannot be."""
    give_back_bits(entry.name, dir_fd=parent)
    try:
        return os.open(entry.name, _FOLDER, dir_fd=parent)
    except OSError:
        return None


def _walk(top: str, visit: Callable[[int, os.DirEntry], None], remove: bool) -> None:
    """visit(folder's descriptor, entry) for every entry beneath folder `top`, depth first; with
    `remove`, each non-folder is unlinked after its visit and each folder removed once emptied.
    What cannot be opened or removed is passed over."""
    give_back_bits(top)
    fd = os.open(top, _FOLDER)
    above: list[tuple[str, list[os.DirEntry]]] = []  # per folder on the way down: the one entered, what is left
    pending = _listing(fd)
    try:
        while True:
            while pending:
                entry = pending.pop()
                try:
                    visit(fd, entry)
                    folder = entry.is_dir(follow_symlinks=False)
                    if not folder and remove:
                        os.unlink(entry.name, dir_fd=fd)
                except OSError:
                    continue
                if not folder:
                    continue
                child = _opened(fd, entry)
                if child is not None:
                    above.append((entry.name, pending))
                    os.close(fd)
                    fd, pending = child, _listing(child)
                    break
            else:  # this folder is done: back up to its parent
                if not above:
                    return
                name, pending = above.pop()
                parent = os.open("..", _FOLDER, dir_fd=fd)
                os.close(fd)
                fd = parent
                if remove:
                    with contextlib.suppress(OSError):
                        os.rmdir(name, dir_fd=fd)
    finally:
        os.close(fd)


def contents(path: str | Path) -> tuple[set[int], int]:
    """The inodes of `path` and of everything beneath a folder, and the bytes of its files (OSError
    where `path` cannot be read at all)."""
    path = os.fspath(path)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):  # a file, or a link (not followed)
        return {st.st_ino}, st.st_size
    inodes, size = {st.st_ino}, 0

    def count(_fd: int, entry: os.DirEntry) -> None:
        nonlocal size
        inodes.add(entry.inode())
        if not entry.is_dir(follow_symlinks=False):
            size += entry.stat(follow_symlinks=False).st_size

    _walk(path, count, remove=False)
    return inodes, size


def remove(path: str | Path) -> bool:
    """Remove the file, link or folder tree at `path`; True when nothing is left there."""
    path = os.fspath(path)
    for _ in range(2):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return True
        except OSError:  # its parent cannot be searched
            give_back_bits(os.path.dirname(path))
            continue
        with contextlib.suppress(OSError):
            if stat.S_ISDIR(st.st_mode):
                _walk(path, lambda _fd, _entry: None, remove=True)
                os.rmdir(path)
            else:
                os.unlink(path)
        if not os.path.lexists(path):
            return True
        give_back_bits(os.path.dirname(path))  # unlinking needs the parent's write bit
    return not os.path.lexists(path)
