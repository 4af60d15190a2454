"""procstate: what another process of the same user changed in a sandbox from outside."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from htam_engine.evaluate.procstate import ProcessState, changes

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prlimit and sched_* are Linux's")


@pytest.fixture
def sibling():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc.pid
    proc.kill()
    proc.wait()


def test_an_untouched_process_reads_unchanged(sibling):
    assert changes(ProcessState.read(sibling), sibling) == ""


def test_a_lowered_priority_and_a_capped_limit_are_named(sibling):
    before = ProcessState.read(sibling)
    os.setpriority(os.PRIO_PROCESS, sibling, 7)
    soft, hard = resource.prlimit(sibling, resource.RLIMIT_NOFILE)
    resource.prlimit(sibling, resource.RLIMIT_NOFILE, (min(soft, 64), min(hard, 64)))
    said = changes(before, sibling)
    assert "nice 0 -> 7" in said and "RLIMIT_NOFILE" in said, said


def test_a_gone_process_reads_as_nothing_to_say(sibling):
    before = ProcessState.read(sibling)
    os.kill(sibling, 9)
    os.waitpid(sibling, 0)
    assert ProcessState.read(sibling) is None and changes(before, sibling) == ""
