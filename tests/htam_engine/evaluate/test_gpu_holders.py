"""Who holds a GPU's memory, by the kind of htam process: read from the device's process list.

The device's list comes from a stand-in `nvidia-smi` (a test double: a shell script on PATH
printing what the real one prints for `--query-compute-apps=pid,used_memory`), since no GPU is
here; the processes it names are real, and name themselves as the judge's processes do.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from htam_engine.evaluate import gpu_holders
from htam_engine.evaluate.gpu_holders import Holder

GIB = 1 << 30


def test_the_listing_gives_each_process_its_bytes_and_skips_what_it_cannot_read():
    listing = "123, 1024\n456, 2048\nNo running processes found\n789, [N/A]\n"
    assert gpu_holders.parse(listing) == [(123, 1 << 30), (456, 2 << 30)]


def test_the_summary_puts_the_kinds_holding_most_first_with_their_count_and_largest():
    found = [Holder(1, "htam-judge", GIB), Holder(2, "htam-candidate", 3 * GIB), Holder(3, "htam-candidate", 5 * GIB),
             Holder(4, "other", GIB // 2)]
    assert gpu_holders.summary(found) == ("htam-candidate 2 (8.0 GiB, at most 5.0), htam-judge 1 (1.0 GiB, at most 1.0), "
                                          "other 1 (0.5 GiB, at most 0.5)")
    assert gpu_holders.summary([]) == "" and gpu_holders.summary(None) == ""


def _named(role: str) -> subprocess.Popen:
    """A process that names itself as the judge's processes do, then waits."""
    code = (f"from htam_engine.evaluate.limits import name_process; name_process({role!r}); "
            "import sys, time; print('named', flush=True); time.sleep(60)")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "named"
    return p


def test_a_process_named_by_its_role_is_told_apart_in_the_device_list(tmp_path: Path, monkeypatch):
    sandbox, stranger = _named("candidate"), subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        fake = tmp_path / "nvidia-smi"
        fake.write_text(f"#!/bin/sh\necho '{sandbox.pid}, 3072'\necho '{stranger.pid}, 512'\necho '999999999, 64'\n")
        fake.chmod(0o755)
        monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
        found = gpu_holders.holders()
        assert found is not None
        assert {(h.pid, h.kind, h.bytes) for h in found} == {(sandbox.pid, "htam-candidate", 3 << 30),
                                                             (stranger.pid, "other", 512 << 20),
                                                             (999999999, "other", 64 << 20)}
        assert gpu_holders.described() == (" (held on the device then: htam-candidate 1 (3.0 GiB, at most 3.0), "
                                            "other 2 (0.6 GiB, at most 0.5))")
    finally:
        for p in (sandbox, stranger):
            p.kill()
            p.wait()


def test_without_a_device_list_nothing_is_said(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert gpu_holders.holders() is None and gpu_holders.described() == ""
    hung = tmp_path / "nvidia-smi"
    hung.write_text("#!/bin/sh\nexec sleep 30\n")
    hung.chmod(0o755)
    monkeypatch.setattr(gpu_holders, "QUERY_TIMEOUT_S", 0.5)
    t = time.monotonic()
    assert gpu_holders.holders() is None
    assert time.monotonic() - t < 5
