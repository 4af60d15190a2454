"""Where htam's time for a short kernel parts from KernelBench's (issue 13: on `1/88_MinGPTNewGelu`
htam's events gave 0.39 ms where KernelBench's gave 0.19 ms, while both timed eager alike).

Times one solution's ModelNew and the problem's Model under each variant of the protocol, from
KernelBench's own timing function down to htam's whole evaluation, so the variant where the time
jumps names what htam adds. Run on a CUDA machine, from the repository root:

    HTAM_KERNELBENCH=/path/to/KernelBench python3 tests/bench/gpu_probe_timing.py SOLUTION.py PROBLEM.py

Prints, per variant, the median and the quartiles of 20 trials (ms) for ModelNew and Model, and
the host time of its forward calls (a kernel shorter than the host's launch path is timed with
the GPU waiting on the host, in every protocol that records the start event before the call).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pickle
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from htam_engine.evaluate.shared import Layout, SharedStorage, attach, new_pool, view  # noqa: E402
from htam_engine.evaluate.timing import L2Flusher, run_trial  # noqa: E402

TRIALS = 20


def load_module(path: str, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def figures(ms: list[float]) -> str:
    q = statistics.quantiles(ms, n=4)
    return f"median {statistics.median(ms):7.4f}  q1 {q[0]:7.4f}  q3 {q[2]:7.4f}"


def models(solution: str, problem: str) -> tuple[Any, Any, list[Any]]:
    prob = load_module(problem, "probe_problem")
    sol = load_module(solution, "probe_solution")
    torch.manual_seed(42)
    init = prob.get_init_inputs()
    ref = prob.Model(*init).cuda()
    torch.manual_seed(42)
    new = sol.ModelNew(*init).cuda()
    torch.manual_seed(1)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in prob.get_inputs()]
    return new, ref, inputs


def htam_trials(fn: Callable[..., Any], args: list[Any], poison_sizes: list[int] = (),
                before: Callable[[], None] | None = None) -> tuple[list[float], float]:
    """htam's trials of `fn` (after three warm-ups) and the median host time of its forward
    calls; before(), untimed, ahead of each trial (a fresh input, a pause as a sandbox has)."""
    flusher = L2Flusher("cuda")
    for _ in range(3):
        run_trial(fn, args, "cuda", 0.0, poison_sizes, flusher)
    times, hosts = [], []

    def host_timed(*a: Any) -> Any:
        t0 = time.perf_counter_ns()
        out = fn(*a)
        hosts.append((time.perf_counter_ns() - t0) / 1e6)
        return out
    for _ in range(TRIALS):
        if before is not None:
            before()
            torch.cuda.synchronize()
        ms = run_trial(host_timed, args, "cuda", 0.0, poison_sizes, flusher).ms
        times.append(ms)
    return times, statistics.median(hosts)


def head_start_trials(fn: Callable[..., Any], args: list[Any], cycles: int) -> list[float]:
    """KernelBench's trial with a device-side sleep of `cycles` between the flush and the start
    event: the host's launch path then ends before the device reaches the start event, so the
    events time the device's work alone (what the forward costs with its launch hidden)."""
    flusher = L2Flusher("cuda")
    times = []
    with torch.no_grad():
        for k in range(3 + TRIALS):
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            flusher()
            torch.cuda._sleep(cycles)
            start.record()
            fn(*args)
            end.record()
            end.synchronize()
            if k >= 3:
                times.append(start.elapsed_time(end))
    return times


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def kernelbench_trials(fn: Callable[..., Any], args: list[Any]) -> list[float] | None:
    root = os.environ.get("HTAM_KERNELBENCH")
    if not root:
        return None
    src = Path(root) / "src"
    sys.path.insert(0, str(src))
    from htam_engine.verify.kb_child import install_stand_ins
    install_stand_ins()
    from kernelbench.timing import time_execution_with_cuda_event  # type: ignore
    with torch.no_grad():
        return time_execution_with_cuda_event(fn, args, num_warmup=3, num_trials=TRIALS, verbose=False,
                                              device=torch.device("cuda"))


TURNS = r"""
import pickle, sys, statistics
sys.path.insert(0, sys.argv[1])
import torch
from htam_engine.evaluate.shared import attach, view
from htam_engine.evaluate.timing import L2Flusher, run_trial
sys.path.insert(0, sys.argv[2])
import gpu_probe_timing as probe
exported, layout, solution, problem = pickle.loads(bytes.fromhex(sys.stdin.readline().strip()))
new, ref, inputs = probe.models(solution, problem)
x = view(attach(exported, None, "cuda"), layout, "cuda")
flusher = L2Flusher("cuda")
args = [x, *inputs[1:]]
for _ in range(3):
    run_trial(new, args, "cuda", 0.0, [], flusher)
times = []
for _ in range(probe.TRIALS):
    sys.stdin.readline()  # the parent's turn is over
    ms = run_trial(new, args, "cuda", 0.0, [], flusher).ms
    times.append(ms)
    print("done", flush=True)
print("  ipc input, parent works between trials, " + probe.figures(times), file=sys.stderr, flush=True)
"""


def turns_variant(solution: str, problem: str, x: torch.Tensor) -> None:
    """As the judge does: between the second process's trials, this one writes a fresh input and
    runs a reference-sized computation of its own."""
    storage = SharedStorage(x.numel() * x.element_size(), "cuda", pool=new_pool("cuda"))
    layout = Layout.of(x)
    shared = view(storage.bytes, layout, "cuda")
    shared.copy_(x)
    torch.cuda.synchronize()
    child = subprocess.Popen([sys.executable, "-c", TURNS, str(ROOT), str(Path(__file__).parent)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    child.stdin.write(pickle.dumps((storage.export(), layout, solution, problem)).hex() + "\n")
    child.stdin.flush()
    work = [torch.empty_like(x) for _ in range(4)]
    for _ in range(TRIALS):
        shared.uniform_()
        for w in work:  # a reference's intermediates, then a comparison
            torch.tanh(shared, out=w)
        (work[0] - work[1]).abs().max().item()
        torch.cuda.synchronize()
        child.stdin.write("go\n")
        child.stdin.flush()
        child.stdout.readline()
    child.wait(timeout=60)


CHILD = r"""
import pickle, sys, statistics
sys.path.insert(0, sys.argv[1])
import torch
from htam_engine.evaluate.shared import attach, view
from htam_engine.evaluate.timing import L2Flusher, run_trial
sys.path.insert(0, sys.argv[2])
import gpu_probe_timing as probe
exported, layout, solution, problem = pickle.load(sys.stdin.buffer)
new, ref, inputs = probe.models(solution, problem)
flat = attach(exported, None, "cuda")
x = view(flat, layout, "cuda")
for name, m in (("ModelNew", new), ("Model", ref)):
    print(f"  ipc input, htam run_trial, {name:8s}: " + probe.figures(probe.htam_trials(m, [x, *inputs[1:]])[0]), flush=True)
"""


def ipc_variant(solution: str, problem: str, x: torch.Tensor) -> None:
    """The input in a judge-style shared storage, opened through CUDA IPC by a second process."""
    storage = SharedStorage(x.numel() * x.element_size(), "cuda", pool=new_pool("cuda"))
    layout = Layout.of(x)
    view(storage.bytes, layout, "cuda").copy_(x)
    torch.cuda.synchronize()
    payload = pickle.dumps((storage.export(), layout, solution, problem))
    subprocess.run([sys.executable, "-c", CHILD, str(ROOT), str(Path(__file__).parent)], input=payload, check=False,
                   timeout=300)


def print_trace(path: Path) -> None:
    """Median milliseconds of each phase of a sandbox's calls, per role and model (HTAM_SANDBOX_TRACE)."""
    import json
    rows: dict[tuple[str, str], list[dict[str, float]]] = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        doc = json.loads(line)
        if doc.get("kernels", "run") != "run":  # the work check's calls do the switch's work besides
            continue
        rows.setdefault((doc["role"], doc["model"]), []).append({**doc["phases_ms"], "trial_ms": doc["trial_ms"],
                                                                 "tail_ms": doc["tail_ms"],
                                                                 "flush_ms": doc.get("flush_ms", 0.0)})
    for (role, model), calls in rows.items():
        calls = [c for c in calls if "trial" in c][-TRIALS:]  # the timed rounds (the checked calls come first)
        phases = {k: statistics.median(c[k] for c in calls) for k in calls[0]}
        print(f"  sandbox {role}/{model} ({len(calls)} calls), median ms: " +
              ", ".join(f"{k} {v:.4f}" for k, v in phases.items()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("solution")
    ap.add_argument("problem")
    ap.add_argument("--no-evaluate", action="store_true", help="skip htam's whole evaluation")
    ap.add_argument("--evaluate-only", action="store_true", help="only htam's whole evaluation, traced")
    a = ap.parse_args()
    if a.evaluate_only:
        return evaluate_traced(a.solution, a.problem)
    new, ref, inputs = models(a.solution, a.problem)
    sizes = [t.numel() * t.element_size() for t in inputs if isinstance(t, torch.Tensor)]
    with torch.no_grad():
        out_bytes = ref(*inputs).numel() * 4
    print(f"device {torch.cuda.get_device_name()}; torch {torch.__version__}; inputs {sizes} bytes")
    for name, m in (("ModelNew", new), ("Model", ref)):
        print(f"{name}:")
        kb = kernelbench_trials(m, inputs)
        if kb:
            print(f"  KernelBench time_execution_with_cuda_event: {figures(kb)}")
        # awake 50 ms: the device idles as long as a judge's checks between two runs while the host
        # stays hot, so a slower kernel there is the device's (its clocks), not the host's launch path
        for what, pause in (("back to back", None), ("asleep 3 ms before each", lambda: time.sleep(0.003)),
                            ("awake 3 ms before each", lambda: spin(0.003)),
                            ("asleep 50 ms before each", lambda: time.sleep(0.05)),
                            ("awake 50 ms before each", lambda: spin(0.05))):
            times, host = htam_trials(m, inputs, before=pause)
            print(f"  htam run_trial, same inputs, {what}: {figures(times)}; forward's host time {host:.4f} ms")
        print(f"  htam run_trial, poisoned sizes:            {figures(htam_trials(m, inputs, sizes + [out_bytes])[0])}")
        x0 = inputs[0]
        staged = torch.empty_like(x0)
        g = torch.Generator(device="cuda")

        def fresh() -> None:
            staged.uniform_(generator=g)
        print(f"  htam run_trial, fresh input each trial:    {figures(htam_trials(m, [staged] + inputs[1:], before=fresh)[0])}")
        flat = SharedStorage(x0.numel() * x0.element_size(), "cuda", pool=new_pool("cuda"))
        shared_view = view(flat.bytes, Layout.of(x0), "cuda")
        shared_view.copy_(x0)
        print(f"  htam run_trial, input in a private pool:   {figures(htam_trials(m, [shared_view] + inputs[1:])[0])}")

        def hot() -> None:  # two forwards right before the trial, as KernelBench's loop has before each
            m(*inputs)
            m(*inputs)
        print(f"  htam run_trial, two forwards before each:  {figures(htam_trials(m, inputs, before=hot)[0])}")
        print(f"  device sleep 0.2 ms after the flush:        {figures(head_start_trials(m, inputs, 400_000))}")
        kb = kernelbench_trials(m, inputs)
        if kb:
            print(f"  KernelBench time_execution_with_cuda_event, again: {figures(kb)}")
    for variant in (ipc_variant, turns_variant):  # one that fails leaves the others' figures
        try:
            variant(a.solution, a.problem, inputs[0])
        except Exception as exc:  # noqa: BLE001 - a probe: say what failed and go on
            print(f"  {variant.__name__} failed: {type(exc).__name__}: {exc}")
    from htam_engine.evaluate.checks.guards import install_guards
    from htam_engine.evaluate.kernel_switch import KernelSwitch
    KernelSwitch().install()
    install_guards("cuda")
    times, host = htam_trials(new, inputs)
    print(f"  with the sandbox's kernel switch and guards installed, ModelNew: "
          f"{figures(times)}; host time {host:.4f} ms")
    if a.no_evaluate:
        return 0
    # the judge's evaluation needs the device's memory this process holds (1/94's 8 GiB inputs and
    # their copies ran it out of memory beside them on the H100)
    del new, ref, m, inputs, x0, staged, flat, shared_view
    torch.cuda.empty_cache()
    return evaluate_traced(a.solution, a.problem)


def evaluate_traced(solution: str, problem_path: str) -> int:
    """htam's whole evaluation of the solution, with its sandboxes' phases traced."""
    from htam_engine.evaluate import evaluate
    from htam_engine.evaluate.config import EvalConfig
    from htam_engine.problems.loader import load_problem
    from htam_engine.settings import SANDBOX_TRACE_ENV as TRACE_ENV
    trace = Path(os.environ.get("OUT", "/tmp")) / "sandbox_trace.jsonl"
    trace.unlink(missing_ok=True)
    os.environ[TRACE_ENV] = str(trace)  # the judge and its sandboxes inherit it
    problem = load_problem(problem_path, device="cuda")
    r = evaluate(problem, Path(solution).read_text(), EvalConfig(device="cuda", trials=TRIALS,
                                                                    time_compile_baseline=False))
    print(f"htam evaluate: {r.status.value}; ModelNew {r.runtime_ms} ms {r.runtime_spread}; "
          f"Model {r.ref_runtime_ms} ms {r.ref_spread}; {r.diagnostics.message}")
    print(f"  reported ModelNew median {statistics.median(r.timings or [0.0]):.4f} ms; clock {r.clock}; "
          f"findings {[(f.rule, f.message) for f in r.integrity]}")
    print_trace(trace)
    return 0


if __name__ == "__main__":
    sys.exit(main())
