"""Removing what a sandbox wrote whatever modes it left (owned_tree.py). Permission bits bind only
a process without CAP_DAC_OVERRIDE: where the suite runs as root, each case runs in a forked child
that has given up the capabilities that pass them (as the judge of an ordinary user has none)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from cheats.harness import as_an_ordinary_user, in_forked_child
from cheats.part_deep_chain import deep_chain
from htam_engine.evaluate import owned_tree

def _locked_tree(root: Path) -> Path:
    """A tree as a sandbox may leave it: files in a folder without the owner's write bit, beneath
    a folder without any bits, and a link to a file outside it."""
    top = root / "left"
    (top / "shut" / "inner").mkdir(parents=True)
    (top / "shut" / "inner" / "blob").write_bytes(b"x" * 4096)
    (root / "outside").write_text("kept")
    (top / "link").symlink_to(root / "outside")
    os.chmod(top / "shut" / "inner", 0o500)
    os.chmod(top / "shut", 0o000)
    return top


def test_a_tree_left_without_the_owners_bits_is_removed_and_a_link_in_it_only_itself(tmp_path):
    def removals() -> dict:
        as_an_ordinary_user()
        top = _locked_tree(tmp_path / "plain")
        shutil.rmtree(top, ignore_errors=True)
        plain_left = top.exists()
        top = _locked_tree(tmp_path / "owned")
        removed = owned_tree.remove(top)
        return {"plain_left": plain_left, "removed": removed, "left": top.exists(),
                "outside": (tmp_path / "owned" / "outside").read_text()}

    seen = in_forked_child(removals)
    assert seen == {"plain_left": True, "removed": True, "left": False, "outside": "kept"}, seen
    owned_tree.remove(tmp_path / "plain")  # what the plain removal left, for pytest's own cleanup


def test_a_file_or_link_is_removed_and_a_missing_path_is_nothing_left(tmp_path):
    (tmp_path / "f").write_text("x")
    (tmp_path / "l").symlink_to(tmp_path / "nowhere")
    assert owned_tree.remove(tmp_path / "f") and owned_tree.remove(tmp_path / "l")
    assert owned_tree.remove(tmp_path / "never") and not list(tmp_path.iterdir())


def test_a_chain_of_folders_deeper_than_recursion_and_paths_go_is_counted_and_removed(tmp_path):
    """Red-team pass 27: 4,000 nested folders in a sandbox's scratch folder made shutil.rmtree (and
    os.walk) raise RecursionError on Python 3.11, which took the zygote down, and every later one."""
    top = tmp_path / "deep"
    top.mkdir()
    deep_chain(str(top), 4000)  # made by descriptor: the whole path outruns PATH_MAX
    (top / "end").write_bytes(b"e" * 100)
    inodes, size = owned_tree.contents(top)
    assert (len(inodes), size) == (1 + 4000 + 1, 100)
    assert owned_tree.remove(top) and not top.exists()
