"""The evaluation worker: a child process that imports, checks and times untrusted candidates.

Run as `python -m htam_engine.evaluate.worker`; the engine (process.py) starts it with
two pipe descriptors in `HTAM_WORKER_FDS` ("read,write"). It evaluates one request at a
time and stays alive for the next while it is healthy. Order matters here: the timing
clock is bound and the guards are installed before any candidate code is imported.
"""

from __future__ import annotations

import os
import sys

# RLIMIT_CPU of every worker process unless HTAM_WORKER_CPU_S says otherwise (6 hours).
DEFAULT_CPU_S = 6 * 3600


def _apply_limits() -> None:
    """Resource limits the engine asked for, applied before anything heavy is imported."""
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    as_mb = os.environ.get("HTAM_WORKER_AS_MB")
    if as_mb:
        limit = int(as_mb) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # A backstop, not the timeout: CPU seconds any one process of the tree may burn, so a
    # child that escaped every kill (its own session, re-parented) still ends one day.
    cpu_s = int(os.environ.get("HTAM_WORKER_CPU_S") or DEFAULT_CPU_S)
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard == resource.RLIM_INFINITY or hard > cpu_s:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))


def _adopt_orphans() -> None:
    """Become a child subreaper (Linux): a candidate's grandchild whose parent exits is
    re-parented to this worker instead of init, so killing the worker's tree still finds it
    even after it left the process group with setsid()."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_child_subreaper = 36
    try:
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_child_subreaper, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # without it, an escaped grandchild still meets RLIMIT_CPU


def _kill_descendants() -> None:
    try:
        import psutil

        family = psutil.Process().children(recursive=True)
    except Exception:  # noqa: BLE001 - best effort on the way out; the group kill follows
        return
    for child in family:
        try:
            child.kill()
        except psutil.Error:
            pass


def _watch_parent() -> None:
    """Never outlive the engine: if the parent goes away, take the whole process group down."""
    import signal
    import threading
    import time

    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                _kill_descendants()  # those that left the group with setsid() too
                os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, name="htam-parent-watch", daemon=True).start()


def main() -> int:
    rfd, wfd = (int(x) for x in os.environ["HTAM_WORKER_FDS"].split(","))
    _apply_limits()
    _adopt_orphans()
    _watch_parent()
    import faulthandler

    faulthandler.enable()  # a segfaulting kernel leaves a Python stack in the captured log
    # Binds perf_counter_ns, CUDA events and synchronize before any candidate code exists.
    from htam_engine.evaluate import timing  # noqa: F401
    from htam_engine.evaluate.protocol import ProtocolError, recv_request, send_reply
    from htam_engine.evaluate.runner import Runner

    device = os.environ.get("HTAM_WORKER_DEVICE", "cpu")
    threads = os.environ.get("HTAM_WORKER_CPU_THREADS")
    if threads:
        import torch

        torch.set_num_threads(int(threads))  # before the guards snapshot torch's settings
    runner = Runner(device, lambda msg: send_reply(wfd, msg))
    send_reply(wfd, {"t": "ready", "pid": os.getpid(), "device": device})
    try:
        while True:
            try:
                req = recv_request(rfd)
            except (ProtocolError, OSError, EOFError):
                return 0
            if req.get("op") != "eval":
                return 0
            result, healthy = runner.evaluate(req["problem"], req["code"], req["config"], req["backend"], req["key"])
            send_reply(wfd, {"t": "result", "result": result.to_dict(), "healthy": healthy})
            if not healthy:
                return 0
    finally:
        # Children a candidate left running would be re-parented away once this process exits.
        _kill_descendants()


if __name__ == "__main__":
    sys.exit(main())
