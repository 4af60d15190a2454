"""Why htam times a short forward slower than KernelBench does: a call right after its process
woke up is slower than the same call back to back. Prints, for the built-in relu problem at a
small size on the CPU (median milliseconds of the forward alone):

  htam eager baseline   htam eval's eager time, measured in its reference sandbox: each run of
                        up to 5 timed calls is announced (wire.Arm: the sandbox warms up), its
                        inputs written, then run back to back on one Go; the run's mean is a
                        sample. Its calls also poison freed memory and read fresh inputs each,
                        which the in-process rows below do not (size 4x64 leaves out the data)
  back to back          the same Model called in a loop in this process, as KernelBench times it
  after a recv          each call right after a blocking read that a second process answers once
                        it has done some work of its own (what a sandbox does between trials)
  after a sleep         each call after time.sleep(SLEEP)
  after a spin          after the read, a 0.5 ms busy wait first (is it the core's clock?)
  after a warm call     after the read, an untimed call of the same Model on other inputs first
                        (is it the forward's own code and data going cold?)
  warm call, recv, call the untimed call before the read instead: what a sandbox could do before
                        the judge writes the trial's inputs (after that, a call before the timed
                        one could read them and have the answer ready)
  warm call, polled recv, call   the same with the read's wait a busy poll of the socket (the
                        core never sleeps between the warm-up and the call)

On the H200 the sandbox's forward of 1/88's export spent 0.20-0.31 ms of host time against
0.07-0.10 ms back to back (README, "htam verify"); this shows the same on any CPU. From the
repository root:

    python3 tests/bench/cpu_cold_call.py [--size 64x1024] [--calls 200]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CANDIDATE = ROOT / "tests" / "htam_engine" / "evaluate" / "cheats" / "honest_relu_cpp.py"


def _peer(conn, calls: int) -> None:
    import torch

    for _ in range(calls):
        torch.rand(200_000).sum()  # a judge's work between two trials
        conn.send_bytes(b"x")


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples), 4)


def in_process(rows: int, cols: int, calls: int, sleep_s: float) -> dict[str, float]:
    import torch

    torch.set_num_threads(1)  # as the sandboxes (HTAM_WORKER_CPU_THREADS), one core per worker
    model = torch.nn.ReLU()
    x, other = torch.randn(rows, cols), torch.randn(rows, cols)

    def timed() -> float:
        t0 = time.perf_counter_ns()
        model(x)
        return (time.perf_counter_ns() - t0) / 1e6

    def spin() -> None:
        end = time.perf_counter_ns() + 500_000
        while time.perf_counter_ns() < end:
            pass

    for _ in range(20):
        model(x)
    out = {"back to back": _median_ms([timed() for _ in range(calls)])}
    variants = (("after a recv", None, None, False), ("after a spin", None, spin, False),
                ("after a warm call", None, lambda: model(other), False),
                ("warm call, recv, call", lambda: model(other), None, False),
                ("warm call, polled recv, call", lambda: model(other), None, True))
    for label, before_recv, after_recv, polled in variants:
        mine, theirs = mp.Pipe()
        peer = mp.get_context("fork").Process(target=_peer, args=(theirs, calls))
        peer.start()
        samples = []
        for _ in range(calls):
            if before_recv is not None:
                before_recv()
            while polled and not mine.poll(0):  # a busy wait on the socket instead of sleeping in the read
                pass
            mine.recv_bytes()
            if after_recv is not None:
                after_recv()
            samples.append(timed())
        peer.join()
        out[label] = _median_ms(samples)
    samples = []
    for _ in range(calls // 4):
        time.sleep(sleep_s)
        samples.append(timed())
    out[f"after a sleep ({sleep_s * 1e3:g} ms)"] = _median_ms(samples)
    return out


def htam_eager(rows: int, cols: int, trials: int) -> float | None:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-c", "import sys; from htam_engine.cli import entry; sys.exit(entry())", "eval", "builtin:relu", str(CANDIDATE), "--device", "cpu",
               "--set", f"batch_size={rows}", "--set", f"dim={cols}", "--trials", str(trials),
               "--no-compile-baseline", "--json"]
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600,
                              env={**os.environ, "HTAM_CACHE_DIR": str(Path(tmp) / "cache")})
    try:
        doc = json.loads(done.stdout)
    except json.JSONDecodeError:
        print(f"htam eval failed: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return doc.get("ref_runtime_ms")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="64x1024", help="ROWSxCOLS of the relu input")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--trials", type=int, default=100, help="htam eval's timed trials")
    ap.add_argument("--sleep", type=float, default=0.01, help="seconds of the sleep variant")
    a = ap.parse_args()
    rows, cols = (int(v) for v in a.size.lower().split("x"))
    print(f"relu on {rows}x{cols} float32, CPU, one thread; median ms of the forward", flush=True)
    eager = htam_eager(rows, cols, a.trials)
    print(f"  htam eager baseline        {round(eager, 4) if eager is not None else '-'}", flush=True)
    for label, ms in in_process(rows, cols, a.calls, a.sleep).items():
        print(f"  {label:<26} {ms}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
