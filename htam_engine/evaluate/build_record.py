"""The judge's own record of what each candidate's extension build left in the shared build
cache, checked before the same source is built again.

Every sandbox can write the build cache. A library built over another candidate's (its mtime
put back, so ninja finds nothing to rebuild) would replace the code of every later evaluation of
that source. The judge hashes the objects and libraries under a candidate's build folder once a
build it asked for succeeded, keeps the digests in its own memory (no file a sandbox can write),
and before it asks for that build again compares: a folder that changed is removed, so it is
built anew. A folder this judge never saw built (another worker's, an earlier run's) is used as
it is: only a sandbox with a read-only view of the cache closes that (README, "What the judge
guarantees").
"""

from __future__ import annotations

import collections
import hashlib
from pathlib import Path

from htam_engine.evaluate import owned_tree
from htam_engine.evaluate.cache import build_dir

# What a build's loader runs (linked libraries) and what ninja links them from (objects).
_ARTIFACTS = (".so", ".o")
_KEPT = 512


def artifact_digests(folder: Path) -> dict[str, str]:
    """{path relative to folder: sha256} of every object and library under `folder`."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.suffix in _ARTIFACTS and path.is_file() and not path.is_symlink():
            out[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


class BuildRecords:
    def __init__(self) -> None:
        self._digests: collections.OrderedDict[str, dict[str, str]] = collections.OrderedDict()

    def record(self, key: str) -> None:
        """After a build of `key` this judge asked for succeeded."""
        self._digests[key] = artifact_digests(build_dir(key))
        self._digests.move_to_end(key)
        while len(self._digests) > _KEPT:
            self._digests.popitem(last=False)

    def check(self, key: str) -> bool:
        """Before asking for a build of `key`, holding its build lock (cache.build_lock_name): False
        (and the folder removed, to be built anew) where what this judge recorded there has
        changed since."""
        recorded = self._digests.get(key)
        if recorded is None:
            return True
        if artifact_digests(build_dir(key)) == recorded:
            return True
        owned_tree.remove(build_dir(key))
        del self._digests[key]
        return False
