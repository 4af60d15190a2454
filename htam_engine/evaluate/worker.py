"""The judge process: evaluates requests from the engine, one at a time, without ever importing
or running candidate code (that happens in sandboxes it forks through its zygote).

Run as `python -m htam_engine.evaluate.worker`; the engine (process.py) starts it with two pipe
descriptors in `HTAM_WORKER_FDS` ("read,write"). It makes itself non-dumpable first, so a sandbox
running as the same user cannot open its descriptors or memory through /proc, nor ptrace it.
"""

from __future__ import annotations

import os
import sys

from htam_engine.evaluate import limits


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
    """Never outlive the engine: if the parent goes away, take the whole tree down."""
    import signal
    import threading
    import time

    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                _kill_descendants()  # the zygote and sandboxes, in sessions of their own
                os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, name="htam-parent-watch", daemon=True).start()


def main() -> int:
    rfd, wfd = (int(x) for x in os.environ.pop("HTAM_WORKER_FDS").split(","))
    limits.name_process("judge")
    limits.make_non_dumpable()
    limits.no_core_files()
    limits.adopt_orphans()
    _watch_parent()
    import faulthandler

    faulthandler.enable()
    from htam_engine.evaluate.zygote_client import ZygoteProcess

    zygote = ZygoteProcess(dict(os.environ))
    try:
        zygote.launch()  # its imports run beside this process's own (torch, the judge)
    except Exception:  # noqa: BLE001 - the judge reports a zygote that cannot start, per evaluation
        pass
    from htam_engine.evaluate.judge import Judge
    from htam_engine.evaluate.protocol import ProtocolError, recv_request, send_reply

    device = os.environ.get("HTAM_WORKER_DEVICE", "cpu")
    judge = Judge(device, lambda msg: send_reply(wfd, msg), zygote=zygote)
    send_reply(wfd, {"t": "ready", "pid": os.getpid(), "device": device, "dumpable": limits.dumpable()})
    try:
        while True:
            try:
                req = recv_request(rfd)
            except (ProtocolError, OSError, EOFError):
                return 0
            if req.get("op") != "eval":
                return 0
            result, healthy = judge.evaluate(req["problem"], req["code"], req["config"], req["backend"], req["key"],
                                             float(req.get("memory_mb") or 0.0))
            send_reply(wfd, {"t": "result", "result": result.to_dict(), "healthy": healthy})
            if not healthy:
                return 0
    finally:
        judge.close()
        _kill_descendants()


if __name__ == "__main__":
    sys.exit(main())
