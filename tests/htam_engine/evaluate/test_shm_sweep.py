"""shm_sweep: what appeared in /dev/shm while a sandbox lived and nobody holds goes with it."""

from __future__ import annotations

import mmap
import subprocess
import sys

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
