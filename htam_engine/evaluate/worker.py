"""The evaluation worker: a child process that imports, checks and times untrusted candidates.

Run as `python -m htam_engine.evaluate.worker`; the engine (process.py) starts it with
two pipe descriptors in `HTAM_WORKER_FDS` ("read,write"). It evaluates one request at a
time and stays alive for the next while it is healthy. Order matters here: the timing
clock is bound and the guards are installed before any candidate code is imported.
"""

from __future__ import annotations

import os
import sys


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
                os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, name="htam-parent-watch", daemon=True).start()


def main() -> int:
    rfd, wfd = (int(x) for x in os.environ["HTAM_WORKER_FDS"].split(","))
    _apply_limits()
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


if __name__ == "__main__":
    sys.exit(main())
