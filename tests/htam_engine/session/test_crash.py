"""Crash consistency: a process killed with SIGKILL at random moments while saving always leaves
a session file that loads, holding either the previous or the new state."""

import dataclasses
import os
import random
import signal
import time

import pytest
from session_builders import build_session

from htam_engine.session import load_session, save_session

KILLS = 120


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_kill_9_mid_save_always_leaves_a_loadable_file(tmp_path):
    s, _ = build_session(40, seed=2, code_size=2000)  # big enough that a save takes milliseconds
    shorter = dataclasses.replace(s, steps=s.steps[:-1])
    path = tmp_path / "crash.htam"
    save_session(s, path)
    rng = random.Random(0)
    t0 = time.perf_counter()
    save_s = time.perf_counter()
    save_session(s, path)
    save_s = time.perf_counter() - save_s
    seen, mid_write = set(), 0
    for i in range(KILLS):
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: save the session and a one-step-shorter version, alternately, forever
            try:
                os.close(ready_r)
                n = i  # children start with alternating versions
                while True:
                    save_session(shorter if n % 2 else s, path)
                    if n == i:  # one whole save done: the kill may come from now on
                        os.write(ready_w, b"1")
                    n += 1
            finally:
                os._exit(0)
        os.close(ready_w)
        # Wait for the child's first complete save (a fork can take longer than a save on a quiet
        # machine), so kills land among the child's saves rather than before its first one.
        os.read(ready_r, 1)
        os.close(ready_r)
        time.sleep(rng.uniform(0, 2 * save_s))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        mid_write += any(n.startswith(".crash.htam.tmp-") for n in os.listdir(tmp_path))
        back = load_session(path)  # must never raise
        assert back.steps in (s.steps, shorter.steps)
        seen.add(len(back.steps))
    assert len(seen) > 1  # kills really landed between different saves
    assert mid_write >= KILLS // 10  # ... and often in the middle of writing one
    # temp files of killed writers are cleared by the next save
    save_session(s, path)
    assert os.listdir(tmp_path) == ["crash.htam"]
    assert time.perf_counter() - t0 < 60
