"""The zygote's housekeeping of its sandboxes' compile-cache folders (zygote.private_folder)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from htam_engine.evaluate import zygote


def test_the_folders_of_a_zygote_killed_outright_are_removed_by_the_next_and_no_others(monkeypatch, tmp_path):
    """A zygote killed with its worker's tree (a cancel, a timeout) cannot remove its sandboxes' folders;
    the next zygote to start removes every one whose zygote is gone, and leaves a live zygote's, an
    unrelated folder, and an older folder with no zygote in its name."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    mine = zygote.private_folder("candidate")  # this process stands for a live zygote
    assert os.path.basename(mine).startswith(f"htam-candidate-compile-{os.getpid()}-")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    orphan = tmp_path / f"htam-reference-compile-{gone.pid}-x1y2"
    (orphan / "caches-1" / "inductor").mkdir(parents=True)
    older, other = tmp_path / "htam-candidate-compile-abc123", tmp_path / f"htam-verify-{gone.pid}-z"
    older.mkdir()
    other.mkdir()
    assert zygote.remove_orphaned_private_folders() == 1
    assert not orphan.exists() and os.path.isdir(mine) and older.exists() and other.exists()


def test_a_zygote_ending_its_sandboxes_removes_their_folders_and_what_they_left_in_dev_shm(tmp_path):
    """kill_all (the judge gone, or the channel broken): each sandbox is killed, its compile caches'
    folder removed, and what appeared in /dev/shm since the oldest fork and nobody holds goes; what
    was there before stays."""
    import socket

    from htam_engine.evaluate import shm_sweep

    older = shm_sweep.SHM / f"htam-test-killall-older-{os.getpid()}"
    older.write_bytes(b"o")
    ours, theirs = socket.socketpair()
    z = zygote.Zygote(ours.detach())
    sandbox = subprocess.Popen(["sleep", "60"], start_new_session=True)  # stands for a forked sandbox
    private = tmp_path / "private"
    private.mkdir()
    z.sandboxes[sandbox.pid] = zygote.Forked(str(private), shm_sweep.present())
    left = shm_sweep.SHM / f"htam-test-killall-left-{os.getpid()}"
    left.write_bytes(b"l" * 4096)
    try:
        z.kill_all()
        assert sandbox.wait(timeout=10) == -9
        assert not private.exists() and not left.exists() and older.exists()
        assert z.sandboxes == {}
    finally:
        sandbox.kill()
        for path in (older, left):
            path.unlink(missing_ok=True)
        z.sock.close()
        theirs.close()
