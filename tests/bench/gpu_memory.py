"""Peak memory of one htam evaluation for the largest KernelBench level-1 problems at their
official sizes, against the bytes of one input set plus its output (issue 13: target <= 6x).

Run on a CUDA machine (one H200 is enough; ~4-6 min for the default six problems):

    HTAM_KERNELBENCH=/path/to/KernelBench python3 tests/bench/gpu_memory.py [--top 6] [--backend triton]

and here, on the CPU, at small sizes (the same problems shrunk to --budget-mb of inputs):

    HTAM_KERNELBENCH=/work/kb python3 tests/bench/gpu_memory.py --top 3

The problems are the largest of `htam problems KernelBench/level1 --json` by input bytes, down
to the --top-th that the offline proposer covers; the candidate for each is the proposer's first
(its default template); the larger ones it does not cover are listed with the reason. Memory is sampled from outside the evaluation while
it runs: on CUDA the device's used memory (torch.cuda.mem_get_info, every millisecond or so, all
processes: the judge, its sandboxes, their CUDA contexts) and, where nvidia-smi exists, each
process's own figure; on the CPU the resident size of the evaluation's process tree (psutil).
The peak is over what was in use just before the evaluation started (its worker already up).
Beside it, on CUDA, the judge process's own peak as torch counts it (allocated, and reserved by
its caching allocator; EvalResult.stages.gpu_peak_*_gib), and its ratio to input + output.
Prints one row per problem and writes $OUT/gpu_memory.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kb_problems import gib, listed, output_bytes, problem_input_bytes, shrunk_copy  # noqa: E402

TARGET = 6.0  # issue 13: peak within 6x one input set plus its output


class Sampler:
    """Peak of `read()` over a background loop, above the value when it started."""

    def __init__(self, read: Callable[[], int], every_s: float):
        self.read, self.every_s = read, every_s
        self.base = self.peak = read()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.read())
            time.sleep(self.every_s)

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.read())

    @property
    def extra(self) -> int:
        return self.peak - self.base


def device_used(device: str) -> Callable[[], int]:
    import torch

    index = torch.device(device).index or 0

    def read() -> int:
        free, total = torch.cuda.mem_get_info(index)
        return total - free

    return read


def tree_rss() -> int:
    """Resident bytes of this process's descendants (the evaluation's worker and sandboxes)."""
    import psutil

    total = 0
    for child in psutil.Process().children(recursive=True):
        try:
            total += child.memory_info().rss
        except psutil.Error:
            pass
    return total


class PerProcess:
    """Each process's peak GPU memory from nvidia-smi (coarse: every 0.2 s), where it exists."""

    def __init__(self, say_every_s: float | None = None):
        self.say_every_s = say_every_s  # print what each kind of process holds now, this often
        self.peaks: dict[int, int] = {}
        self.total_peak = 0  # the largest sum over the processes of one sample (bytes)
        self.commands: dict[int, str] = {}  # each process's command line, read when first seen
        self.names: dict[int, str] = {}  # each process's kind (gpu_holders: htam-<role>, else other)
        self.ok = shutil.which("nvidia-smi") is not None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        from htam_engine.evaluate import gpu_holders  # the judge's own reading of the device's holders

        said = time.monotonic()
        while not self._stop.is_set():
            found = gpu_holders.holders()
            if found is None:
                return
            for h in found:
                if h.pid not in self.commands:
                    try:
                        with open(f"/proc/{h.pid}/cmdline", "rb") as fh:
                            self.commands[h.pid] = fh.read().replace(b"\0", b" ").decode(errors="replace")
                    except OSError:
                        self.commands[h.pid] = "gone"
                self.names[h.pid] = h.kind  # each time: a fork names itself after it first shows
                self.peaks[h.pid] = max(self.peaks.get(h.pid, 0), h.bytes)
            total = sum(h.bytes for h in found)
            self.total_peak = max(self.total_peak, total)
            if self.say_every_s and time.monotonic() >= said + self.say_every_s:
                said = time.monotonic()
                print(f"    GPU memory now: {gib(total)} in all; {gpu_holders.summary(found)}", flush=True)
            time.sleep(0.2)

    def __enter__(self) -> "PerProcess":
        if self.ok:
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self.ok:
            self._thread.join()

    def described(self) -> str:
        import psutil

        parts = []
        for pid, peak in sorted(self.peaks.items(), key=lambda kv: -kv[1]):
            try:
                name = " ".join(psutil.Process(pid).cmdline()[1:3])[-40:]
            except psutil.Error:
                name = "gone"
            parts.append(f"{pid} ({name}) {gib(peak)}")
        return "; ".join(parts)


def problems_to_run(root: Path, top: int, backend: str, budget: int | None, work: Path) -> list[dict[str, Any]]:
    """The largest level-1 problems by input bytes down to the `top`-th one the offline proposer
    covers; the larger ones it does not cover come back with the reason."""
    from htam_engine.problems import load_problem
    from htam_engine.propose.offline import Unsupported, generate

    docs = sorted((d for d in listed(root / "level1") if d.get("input_bytes")), key=lambda d: -d["input_bytes"])
    chosen, covered = [], 0
    for d in docs:
        if covered == top:
            break
        try:
            generate(load_problem(d["path"]), backend)
        except Unsupported as exc:
            chosen.append({**d, "skip": f"the offline proposer does not cover it on {backend}: {exc}"})
            continue
        covered += 1
        if budget is not None:
            small = shrunk_copy(Path(d["path"]), budget, work / "problems")
            if small is None:
                chosen.append({**d, "skip": f"no size of it fits {budget} bytes"})
                continue
            d = {**d, "official_input_bytes": d["input_bytes"], "path": str(small)}
        chosen.append(d)
    return chosen


def measure(doc: dict[str, Any], device: str, backend: str, trials: int, evaluator: Any) -> dict[str, Any]:
    from htam_engine.evaluate import EvalConfig
    from htam_engine.problems import load_problem
    from htam_engine.propose.offline import Unsupported, generate

    problem = load_problem(doc["path"])
    row: dict[str, Any] = {"problem": doc["id"], "input_bytes": problem_input_bytes(problem),
                           "output_bytes": output_bytes(problem)}
    try:
        candidate = generate(problem, backend)
    except Unsupported as exc:
        return {**row, "skip": f"the offline proposer does not cover it on {backend}: {exc}"}
    config = EvalConfig(device=device, backend=backend, trials=trials)
    evaluator.warm(config)
    time.sleep(0.5)  # the worker's start settles before the baseline is read
    gpu = device.startswith("cuda")
    with Sampler(device_used(device) if gpu else tree_rss, 0.001 if gpu else 0.01) as s, PerProcess() as per:
        result = evaluator.evaluate(problem, candidate.code, config)
    row.update(template=candidate.move, status=result.status.value, message=result.diagnostics.message[:160],
               peak_bytes=s.extra, baseline_bytes=s.base, per_process=per.described() if gpu else "")
    total = row["input_bytes"] + (row["output_bytes"] or 0)
    row["ratio"] = s.extra / total if total and row["output_bytes"] is not None else None
    # The judge's own peak (torch's counters in the judge process, reset at the evaluation's start).
    for kind in ("allocated", "reserved"):
        peak_gib = getattr(result.stages, f"gpu_peak_{kind}_gib", None)
        row[f"judge_{kind}_bytes"] = None if peak_gib is None else int(peak_gib * 2**30)
        row[f"judge_{kind}_ratio"] = (row[f"judge_{kind}_bytes"] / total
                                      if peak_gib is not None and total and row["output_bytes"] is not None else None)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernelbench", default=os.environ.get("HTAM_KERNELBENCH"), help="checkout (or its KernelBench folder)")
    ap.add_argument("--top", type=int, default=6,
                    help="measure the largest level-1 problems down to the N-th the offline proposer covers")
    ap.add_argument("--device", default=None, help="default: cuda when visible, else cpu")
    ap.add_argument("--backend", default="triton", choices=["triton", "cuda", "cpp"])
    ap.add_argument("--trials", type=int, default=None, help="timed trials (default: htam's on CUDA, 3 on the CPU)")
    ap.add_argument("--budget-mb", type=float, default=None,
                    help="shrink each problem's inputs to this many MiB (default: official sizes on CUDA, 4 on the CPU)")
    args = ap.parse_args()
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if not args.kernelbench:
        sys.exit("set HTAM_KERNELBENCH (or --kernelbench) to a KernelBench checkout")
    root = Path(args.kernelbench)
    root = root / "KernelBench" if (root / "KernelBench").is_dir() else root
    budget_mb = args.budget_mb if args.budget_mb is not None else (None if device.startswith("cuda") else 4)
    budget = None if budget_mb is None else int(budget_mb * 2**20)
    trials = args.trials or (30 if device.startswith("cuda") else 3)

    from htam_engine.evaluate.evaluator import Evaluator

    work = Path(tempfile.mkdtemp(prefix="htam-gpu-memory-"))
    docs = problems_to_run(root, args.top, args.backend, budget, work)
    print(f"device {device}, backend {args.backend}, {trials} timed trials, sizes: "
          + ("official" if budget is None else f"shrunk to {budget_mb:g} MiB of inputs"), flush=True)
    print("problems (largest inputs first): " + ", ".join(d["id"] for d in docs), flush=True)
    rows = []
    evaluator = Evaluator(device)
    try:
        for d in docs:
            t0 = time.monotonic()
            row = {"problem": d["id"], "skip": d["skip"]} if "skip" in d else measure(d, device, args.backend, trials,
                                                                                    evaluator)
            row["wall_s"] = round(time.monotonic() - t0, 1)
            rows.append(row)
            print_row(row)
    finally:
        evaluator.close()
    ratios = [r["ratio"] for r in rows if r.get("ratio") is not None]
    print(f"\nworst peak / (input + output): {max(ratios):.2f} (target <= {TARGET:g}); "
          f"{sum(r <= TARGET for r in ratios)} of {len(ratios)} within" if ratios else "\nno figure measured")
    out = Path(os.environ.get("OUT") or ".") / "gpu_memory.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"device": device, "backend": args.backend, "trials": trials, "budget_bytes": budget,
                               "target": TARGET, "rows": rows}, indent=2))
    print(f"written: {out}")
    return 0


def print_row(r: dict[str, Any]) -> None:
    if "skip" in r:
        print(f"{r['problem']:55} skipped: {r['skip']}", flush=True)
        return
    ratio = "-" if r.get("ratio") is None else f"{r['ratio']:.2f}"
    print(f"{r['problem']:55} in {gib(r['input_bytes'])}  out {gib(r['output_bytes'])}  peak {gib(r['peak_bytes'])}"
          f"  peak/(in+out) {ratio}  {r['status']} ({r['wall_s']} s){'  ' + r['message'] if r['message'] else ''}",
          flush=True)
    if r.get("per_process"):
        print(f"    per process (nvidia-smi): {r['per_process']}", flush=True)
    if r.get("judge_allocated_bytes") is not None:
        def ratio(kind: str) -> str:
            return "-" if r.get(f"judge_{kind}_ratio") is None else f"{r[f'judge_{kind}_ratio']:.2f}"

        print(f"    judge alone (torch): allocated peak {gib(r['judge_allocated_bytes'])} ({ratio('allocated')}x in+out), "
              f"reserved peak {gib(r['judge_reserved_bytes'])} ({ratio('reserved')}x in+out)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
