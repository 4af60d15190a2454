"""Untrusted-code limits: a candidate that reads its own resource limits and environment
sees RLIMIT_CORE=0, bounded open files and CPU time, the configured address-space limit,
and no secret; a site's HTAM_WORKER_WRAPPER wraps the sandboxes (through their zygote); the
judge and the zygote are non-dumpable."""

from __future__ import annotations

import json
import resource

import pytest
from fault_support import HONEST, candidate, load_test_problem, quick_config, wait_until, worker_processes

from htam_engine.evaluate.evaluator import Evaluator
from htam_engine.evaluate.result import Status

SECRET = "sk-htam-isolation-7f3a9c"
PROBE = (
    "import json, os, resource\n"
    "_lim = {n: resource.getrlimit(getattr(resource, n)) for n in ('RLIMIT_CORE', 'RLIMIT_NOFILE', 'RLIMIT_CPU', 'RLIMIT_AS')}\n"
    "print('HTAM-PROBE ' + json.dumps({'limits': _lim, 'env': dict(os.environ)}), flush=True)\n"
)
SECRETS = {"OPENAI_API_KEY": SECRET, "HTAM_API_KEY": SECRET, "AWS_SECRET_ACCESS_KEY": SECRET,
           "GITHUB_TOKEN": SECRET, "DB_PASSWORD": SECRET}


def _probe(monkeypatch, **config):
    for k, v in SECRETS.items():
        monkeypatch.setenv(k, v)
    ev = Evaluator("cpu")
    try:
        r = ev.evaluate(load_test_problem(), candidate(header=PROBE), quick_config(**config))
    finally:
        ev.close()
    assert wait_until(lambda: not worker_processes(), 10)
    lines = [ln for ln in r.diagnostics.log.splitlines() if ln.startswith("HTAM-PROBE ")]
    assert lines, (r.status, r.diagnostics.message, r.diagnostics.log[-2000:])
    return r, json.loads(lines[-1][len("HTAM-PROBE "):])


def test_worker_runs_with_limits_and_a_scrubbed_environment(monkeypatch, figures):
    r, seen = _probe(monkeypatch, memory_limit_mb=6000)
    limits, env = seen["limits"], seen["env"]
    ok = False
    try:
        assert r.status is Status.OK, r.diagnostics.message
        assert limits["RLIMIT_CORE"] == [0, 0]  # no core dumps of candidate memory
        assert 0 < limits["RLIMIT_NOFILE"][0] <= 4096
        assert limits["RLIMIT_CPU"][0] != resource.RLIM_INFINITY and limits["RLIMIT_CPU"][0] > 0
        assert limits["RLIMIT_AS"][0] == 6000 * 1024 * 1024
        assert not set(SECRETS) & set(env), sorted(set(SECRETS) & set(env))
        assert not [k for k, v in env.items() if SECRET in v]
        ok = True
    finally:
        figures.add("worker limits and environment", tried=1, survived=int(ok))


def test_without_a_memory_setting_there_is_no_address_space_limit(monkeypatch):
    # (GPU workers never get one: CUDA maps far more address space than it uses.)
    _r, seen = _probe(monkeypatch)
    assert seen["limits"]["RLIMIT_AS"][0] == resource.RLIM_INFINITY


def test_wrapper_prefixes_the_worker_command(monkeypatch, figures):
    monkeypatch.setenv("HTAM_WORKER_WRAPPER", "env HTAM_WRAPPED=yes")
    r, seen = _probe(monkeypatch)
    assert r.status is Status.OK, r.diagnostics.message
    assert seen["env"].get("HTAM_WRAPPED") == "yes"
    figures.add("worker limits and environment", tried=1, survived=1)


@pytest.mark.parametrize("wrapper", ["/nonexistent/htam-sandbox --", "bwrap '--unbalanced"])
def test_a_broken_wrapper_is_a_clear_harness_error(monkeypatch, wrapper):
    problem = load_test_problem()
    monkeypatch.setenv("HTAM_WORKER_WRAPPER", wrapper)
    ev = Evaluator("cpu")
    try:
        r = ev.evaluate(problem, HONEST, quick_config())
        assert r.status is Status.HARNESS_ERROR and not r.status.blames_candidate
        assert "sandbox" in r.diagnostics.message.lower() and len(r.diagnostics.message.splitlines()) == 1
    finally:
        ev.close()
    assert not worker_processes()


def test_candidate_cannot_read_the_judges_or_the_engines_environment(monkeypatch, figures):
    """The sandbox's environment is scrubbed, but a same-user candidate could read its
    ancestors' (the zygote's, the judge's, the engine's) environment, descriptors or memory through
    /proc: all three make themselves non-dumpable, which closes that (for every user but root)."""
    import ctypes
    import os

    probe = ("import os\npid = os.getpid()\nfor _ in range(3):\n"
             "    pid = int(open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[1])\n"
             "    try:\n        open(f'/proc/{pid}/environ', 'rb').read(1)\n        print('HTAM-PEEK read', pid, flush=True)\n"
             "    except OSError as exc:\n        print('HTAM-PEEK denied', pid, type(exc).__name__, flush=True)\n"
             "import ctypes\nprint('HTAM-DUMPABLE', ctypes.CDLL(None).prctl(3, 0, 0, 0, 0), flush=True)\n")
    ev = Evaluator("cpu")
    try:
        r = ev.evaluate(load_test_problem(), candidate(header=probe), quick_config())
        judge_dumpable = ev._worker.ready.get("dumpable") if ev._worker else None
    finally:
        ev.close()
    pr_get_dumpable = 3
    assert ctypes.CDLL(None).prctl(pr_get_dumpable, 0, 0, 0, 0) == 0  # this process started a judge
    assert judge_dumpable is False  # the judge said so when it started
    lines = r.diagnostics.log.splitlines()
    peek = [ln for ln in lines if ln.startswith("HTAM-PEEK")]
    assert len(peek) == 3, r.diagnostics.log[-2000:]  # zygote, judge, engine
    assert [ln for ln in lines if ln.startswith("HTAM-DUMPABLE")] == ["HTAM-DUMPABLE 0"]  # forked from the zygote
    if os.geteuid() != 0:  # root reads any process's /proc entries whatever their state
        assert all(ln.startswith("HTAM-PEEK denied") for ln in peek), peek
    figures.add("worker limits and environment", tried=1, survived=1)
