"""shm_sweep: what appeared in /dev/shm while a sandbox lived and nobody holds goes with it."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys

from cheats.harness import as_an_ordinary_user, in_forked_child
from htam_engine.evaluate import shm_sweep


def _holder(code: str) -> subprocess.Popen:
    """A process that runs `code` (which opens or maps a file), says so, and waits to be killed."""
    p = subprocess.Popen([sys.executable, "-c", code + "\nprint('ready', flush=True)\nimport time\ntime.sleep(60)"],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


def test_what_appeared_and_nobody_holds_is_removed_and_the_rest_stays(tmp_path):
    old = tmp_path / "old"
    old.write_bytes(b"x" * 100)
    before = shm_sweep.present(tmp_path)
    left = tmp_path / "left"
    left.write_bytes(b"y" * 4096)
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "inside").write_bytes(b"z" * 1000)
    opened, mapped = tmp_path / "opened", tmp_path / "mapped"
    opened.write_bytes(b"o" * 10)
    mapped.write_bytes(b"m" * mmap.PAGESIZE)
    holders = [_holder(f"f = open({str(opened)!r}, 'rb')"),
               _holder(f"import mmap\nf = open({str(mapped)!r}, 'r+b')\nm = mmap.mmap(f.fileno(), 0)\nf.close()")]
    try:
        removed = shm_sweep.remove_left(before, tmp_path)
    finally:
        for p in holders:
            p.kill()
            p.wait()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mapped", "old", "opened"]
    assert removed == 4096 + 1000


def test_nothing_new_means_nothing_looked_at_or_removed(tmp_path):
    (tmp_path / "a").write_bytes(b"a")
    assert shm_sweep.remove_left(shm_sweep.present(tmp_path), tmp_path) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["a"]


def test_a_folder_left_without_the_owners_bits_is_removed_all_the_same(tmp_path):
    """Red-team pass 26: a folder of 1.5 GB made read-only outlived a sweep that could not empty it
    (owned_tree)."""
    def sweep() -> dict:
        as_an_ordinary_user()
        before = shm_sweep.present(tmp_path)
        folder = tmp_path / "torch_1"
        (folder / "inner").mkdir(parents=True)
        for name in ("a", "inner/b"):
            (folder / name).write_bytes(b"s" * 2048)
        os.chmod(folder / "inner", 0o000)
        os.chmod(folder, 0o555)
        removed = shm_sweep.remove_left(before, tmp_path)
        return {"removed": removed, "left": sorted(p.name for p in tmp_path.iterdir())}

    assert in_forked_child(sweep) == {"removed": 4096, "left": []}


def test_what_a_live_sandbox_opens_between_the_two_looks_stays(tmp_path, monkeypatch):
    """A sandbox beside the reaped one, filling a folder it made, may hold nothing there for an
    instant: a sweep that looked once removed its folder from under it (seen across test workers)."""
    before = shm_sweep.present(tmp_path)
    making = tmp_path / "making"
    making.mkdir()
    (making / "part").write_bytes(b"p" * 4096)  # written and closed: nobody holds it at the first look
    left = tmp_path / "left"
    left.write_bytes(b"l" * 4096)
    looks, kept = [], []
    real_held = shm_sweep._held

    def held_then_opened(device: int) -> set[int]:
        seen = real_held(device)
        looks.append(device)
        if len(looks) == 1:  # the sibling goes on with its work between the looks
            kept.append(open(making / "part", "rb"))
        return seen

    monkeypatch.setattr(shm_sweep, "_held", held_then_opened)
    monkeypatch.setattr(shm_sweep, "SECOND_LOOK_S", 0.0)
    try:
        removed = shm_sweep.remove_left(before, tmp_path)
    finally:
        for f in kept:
            f.close()
    assert len(looks) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["making"] and removed == 4096
