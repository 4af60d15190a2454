"""The memory-value experiment (the paper's ablation table) on KernelBench, in one call.

On the H200 (the figures for the README):

    HTAM_KERNELBENCH=/path/to/KernelBench python3 tests/bench/gpu_ablation.py --deadline 480

runs TEST (30 level 1-2 problems at official sizes) under the six arms x 3 seeds x 6 steps with
the offline proposer and Triton, cold (seed memory) and warm (a bank learned on BANK, a disjoint
set of 30 problems), on one GPU through htam's worker pool. Every distinct candidate is
evaluated once: a persistent evaluation table ($OUT/ablation/table.jsonl) is shared by all arms
and seeds. At the deadline it stops and reports what finished. It prints the distinct candidates
the proposer can write for these problems (an upper bound) and the count the runs evaluated,
then the ablation table; it writes $OUT/ablation/{report.md, experiment.json, runs.jsonl, ...}.

Other modes (the report says which produced it):

    --replay TABLE   run the searches again against a table measured earlier (e.g. the H200's),
                     on any machine, evaluating nothing: the statistics, or a changed selection
                     formula, recomputed on a CPU. Candidates not in the table are counted.
    --synthetic      made-up timings for the real proposer's candidates (tests/support/
                     synthetic_timings.py): search dynamics and candidate counts on a CPU.
    --direct         each candidate measured KernelBench's way in long-lived processes
                     (htam_engine/experiment/direct.py) rather than through the judge: its
                     output checked against the reference on fixed-seed sets, then timed
                     with the sandbox's protocol. For the offline proposer's own candidates;
                     an order of magnitude cheaper on the device than the judge.
    --device cpu --small --test-limit 2 --bank-limit 2 --seeds 1 --steps 2
                     a real end-to-end run on this CPU at small sizes (Triton interpreter).

Any mode: --out DIR, --arms full,random,..., --starts cold,warm, --workers N, --trials N,
--select JSON (selection settings other than the defaults, e.g. to replay a formula variant).
Rerunning into the same --out with the same settings resumes (finished runs are kept).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "bench"))

# Test problems: level 1 (elementwise, normalization, reduction) and level 2 (fused chains).
TEST = [
    *(f"kernelbench:level1/{n}" for n in (
        "12_Matmul_with_diagonal_matrices_", "20_LeakyReLU", "22_Tanh", "26_GELU_", "28_HardSigmoid", "30_Softsign",
        "32_HardTanh", "23_Softmax", "36_RMSNorm_", "38_L1Norm_", "40_LayerNorm",
        "47_Sum_reduction_over_a_dimension", "49_Max_reduction_over_a_dimension", "94_MSELoss")),
    *(f"kernelbench:level2/{n}" for n in (
        "1_Conv2D_ReLU_BiasAdd", "3_ConvTranspose3d_Sum_LayerNorm_AvgPool_GELU", "5_ConvTranspose2d_Subtract_Tanh",
        "7_Conv3d_ReLU_LeakyReLU_GELU_Sigmoid_BiasAdd", "9_Matmul_Subtract_Multiply_ReLU",
        "11_ConvTranspose2d_BatchNorm_Tanh_MaxPool_GroupNorm", "13_ConvTranspose3d_Mean_Add_Softmax_Tanh_Scaling",
        "15_ConvTranspose3d_BatchNorm_Subtract", "17_Conv2d_InstanceNorm_Divide",
        "20_ConvTranspose3d_Sum_ResidualAdd_Multiply_ResidualAdd", "22_Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish",
        "24_Conv3d_Min_Softmax", "26_ConvTranspose3d_Add_HardSwish", "28_BMM_InstanceNorm_Sum_ResidualAdd_Multiply",
        "30_Gemm_GroupNorm_Hardtanh", "32_Conv2d_Scaling_Min")),
]
# Bank problems: the same families, none of the test problems. The warm bank is learned on these.
BANK = [
    *(f"kernelbench:level1/{n}" for n in (
        "19_ReLU", "21_Sigmoid", "25_Swish", "27_SELU_", "29_Softplus", "31_ELU", "88_MinGPTNewGelu",
        "24_LogSoftmax", "37_FrobeniusNorm_", "39_L2Norm_",
        "48_Mean_reduction_over_a_dimension", "53_Min_reduction_over_a_dimension", "100_HingeLoss")),
    *(f"kernelbench:level2/{n}" for n in (
        "2_ConvTranspose2d_BiasAdd_Clamp_Scaling_Clamp_Divide", "4_Conv2d_Mish_Mish",
        "6_Conv3d_Softmax_MaxPool_MaxPool",
        "8_Conv3d_Divide_Max_GlobalAvgPool_BiasAdd_Sum", "10_ConvTranspose2d_MaxPool_Hardtanh_Mean_Tanh",
        "12_Gemm_Multiply_LeakyReLU", "14_Gemm_Divide_Sum_Scaling", "16_ConvTranspose2d_Mish_Add_Hardtanh_Scaling",
        "19_ConvTranspose2d_GELU_GroupNorm", "21_Conv2d_Add_Scale_Sigmoid_GroupNorm", "23_Conv3d_GroupNorm_Mean",
        "25_Conv2d_Min_Tanh_Tanh", "27_Conv3d_HardSwish_GroupNorm_Mean", "29_Matmul_Mish_Mish",
        "31_Conv2d_Min_Add_Multiply", "33_Gemm_Scale_BatchNorm", "34_ConvTranspose3d_LayerNorm_GELU_Scaling")),
]
assert not set(TEST) & set(BANK), "the warm bank must be learned on problems disjoint from the test problems"
assert len(set(TEST)) == len(TEST) and len(set(BANK)) == len(BANK)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="experiment folder (default $OUT/ablation, or ./ablation-out)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--backend", default="triton")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--arms", help="comma-separated arms (default all six)")
    p.add_argument("--starts", default="cold,warm")
    p.add_argument("--workers", type=int, help="evaluation workers (default: one per core)")
    p.add_argument("--concurrency", type=int, help="sessions in flight (default 8 per worker)")
    p.add_argument("--deadline", type=float, default=480.0, help="seconds for the whole experiment")
    p.add_argument("--trials", type=int, help="timed trials per evaluation (harness default)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per evaluation")
    p.add_argument("--table", help="evaluation table file (default OUT/table.jsonl)")
    p.add_argument("--replay", metavar="TABLE", help="replay against this table; evaluate nothing")
    p.add_argument("--synthetic", action="store_true", help="made-up timings (a CPU study of the search)")
    p.add_argument("--direct", action="store_true",
                   help="measure each candidate directly, KernelBench's way, in long-lived processes "
                        "(experiment/direct.py: the offline proposer's own candidates only) instead of through "
                        "htam's judge")
    p.add_argument("--small", action="store_true", help="shrink the problems (a CPU run of real kernels)")
    p.add_argument("--max-elems", type=int, default=1 << 14, help="with --small: elements per input at most")
    p.add_argument("--test-limit", type=int, help="only the first N test problems")
    p.add_argument("--bank-limit", type=int, help="only the first N bank problems")
    from htam_engine.experiment import Arm

    p.add_argument("--bank-arm", default=Arm.FULL.value, choices=[a.value for a in Arm],
                   help="how the bank sessions choose (default full)")
    p.add_argument("--bank-seeds", type=int, default=1, help="bank sessions per bank problem (default 1)")
    p.add_argument("--warm-bank", help="use this bank file as the warm memory instead of learning one")
    p.add_argument("--select", type=json.loads, default={}, metavar="JSON",
                   help='selection settings other than the defaults, e.g. \'{"retry_penalty": 0}\' (a replay of a '
                        "measured table can try formula variants)")
    p.add_argument("--proposer-processes", type=int,
                   help="processes writing proposals (default: a quarter of the cores on a GPU box, else 0: "
                        "in the event loop's process)")
    return p.parse_args(argv)


def load(ids: list[str], device: str, small: bool, max_elems: int) -> dict[str, Any]:
    from htam_engine.problems import load_problem

    out = {}
    for pid in ids:
        overrides = {}
        if small:
            from cpu_offline import shrink_overrides
            from htam_engine.problems.loader import resolve_ref

            overrides = shrink_overrides(str(resolve_ref(pid)), max_elems, "cpu")
        out[pid] = load_problem(pid, overrides, device=device)
    return out


def candidate_bound(problems: dict[str, Any], backend: str) -> tuple[int, dict[str, int]]:
    """Settings in each problem's design space on this backend (the product of its knobs' domains):
    an upper bound on the distinct candidates any arm can write for it."""
    from htam_engine.families import Backend
    from htam_engine.propose.offline import Unsupported, plan_problem, plan_space

    per: dict[str, int] = {}
    for pid, problem in problems.items():
        try:
            space = plan_space(plan_problem(problem, backend), Backend(backend))
            per[pid] = math.prod(len(spec.values) for spec in space)
        except Unsupported:
            per[pid] = 0
    return sum(per.values()), per


def make_pool(args: argparse.Namespace, out: Path, eval_config: Any) -> tuple[Any, str]:
    from htam_engine.evaluate.pool import WorkerPool
    from htam_engine.experiment import EvalTable, TablePool, table_settings

    if args.replay:
        return TablePool(EvalTable(args.replay)), f"replay of {args.replay}"
    table_path = Path(args.table) if args.table else out / "table.jsonl"
    if args.synthetic:
        from tests.support.synthetic_timings import SyntheticTimings

        inner = SyntheticTimings()
        return TablePool(EvalTable(table_path, {"synthetic": inner.name}), inner), inner.name
    where = args.device
    if args.device.startswith("cuda"):
        import torch

        where = f"{args.device} ({torch.cuda.get_device_name(0)})"
    if args.direct:
        from htam_engine.experiment.direct import NAME, DirectPool, pool_size

        workers = args.workers or pool_size(args.device)
        settings = {**table_settings(eval_config), "evaluator": "direct"}
        return (TablePool(EvalTable(table_path, settings), DirectPool(workers, args.device, eval_config.cpu_threads)),
                f"{NAME}, {workers} processes on {where}")
    workers = args.workers or os.cpu_count() or 1
    return (TablePool(EvalTable(table_path, table_settings(eval_config)), WorkerPool(workers, args.device)),
            f"htam's worker pool ({workers} workers on {where})")


def main(argv: list[str] | None = None) -> int:
    from htam_engine.evaluate.config import EvalConfig
    from htam_engine.experiment import Arm, Experiment, ExperimentSpec, Start
    from htam_engine.experiment.parallel import ProcessProposer
    from htam_engine.experiment.report import render_markdown
    from htam_engine.propose.offline import OfflineProposer

    args = parse_args(argv)
    out = Path(args.out or Path(os.environ.get("OUT") or "ablation-out") / "ablation")
    if args.device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    test, bank = TEST[: args.test_limit], BANK[: args.bank_limit]
    starts = [Start(s) for s in args.starts.split(",")]
    spec = ExperimentSpec(test=test, bank=bank if Start.WARM in starts else [],
                          arms=[Arm(a) for a in args.arms.split(",")] if args.arms else list(Arm),
                          seeds=list(range(args.seeds)), starts=starts, steps=args.steps,
                          backend=args.backend, device=replay_device(args.replay) if args.replay else args.device,
                          select=args.select, bank_arm=Arm(args.bank_arm), bank_seeds=args.bank_seeds)
    print(f"test problems ({len(test)}): {', '.join(test)}", flush=True)
    print(f"bank problems ({len(spec.bank)}, disjoint): {', '.join(spec.bank)}", flush=True)
    t0 = time.monotonic()
    problems = load(test + spec.bank, spec.device, args.small, args.max_elems)
    bound, per = candidate_bound(problems, args.backend)
    print(f"loaded {len(problems)} problems in {time.monotonic() - t0:.1f} s; the offline proposer can write "
          f"{bound} distinct {args.backend} candidates for them ({sum(per[p] for p in test)} for the test "
          f"problems); a run proposes at most {args.steps}", flush=True)
    eval_config = EvalConfig(backend=args.backend, device=spec.device, timeout_s=args.timeout,
                             time_compile_baseline=False, **({"trials": args.trials} if args.trials else {}))
    pool, evaluator = make_pool(args, out, eval_config)
    workers = getattr(pool.inner, "size", 1) if pool.inner is not None else 1
    last = {"t": 0.0}

    def progress(p: Any) -> None:
        now = time.monotonic()
        if now - last["t"] < 10 and p.done != p.total:
            return
        last["t"] = now
        c = p.table
        print(f"[{p.elapsed_s:6.0f} s] {p.done}/{p.total} runs ({p.phase}); evaluated {c.evaluated} distinct, "
              f"{c.hits} from the table, {c.joined} joined in flight, {c.missing} missing", flush=True)

    procs = args.proposer_processes
    if procs is None:
        measured_on_gpu = spec.device.startswith("cuda") and not (args.replay or args.synthetic)
        procs = (os.cpu_count() or 1) // 4 if measured_on_gpu else 0
    proposer = ProcessProposer(OfflineProposer, procs) if procs > 0 else OfflineProposer()
    print(f"proposals written {f'by {procs} processes' if procs > 0 else 'in this process'}", flush=True)
    exp = Experiment(spec, out, pool=pool, proposer=proposer, eval_config=eval_config,
                     concurrency=args.concurrency or 8 * workers, warm_bank=args.warm_bank, evaluator=evaluator,
                     on_progress=progress)
    try:
        outcome = asyncio.run(exp.run(problems, deadline_s=args.deadline))
    finally:
        if isinstance(proposer, ProcessProposer):
            proposer.close()
    report = render_markdown(outcome)
    (out / "report.md").write_text(report, encoding="utf-8")
    print(report, flush=True)
    print(f"written: {out}/report.md, experiment.json, runs.jsonl; `htam compare {out}` prints the tables again",
          flush=True)
    return 0


def replay_device(table: str) -> str:
    """The device the table was measured on: the replayed runs must key their lookups like the originals."""
    from htam_engine.experiment import EvalTable

    devices = sorted(EvalTable(table).devices())
    if len(devices) != 1:
        raise SystemExit(f"{table}: results for {len(devices)} devices ({', '.join(devices)}); replay needs one")
    return devices[0]


if __name__ == "__main__":
    raise SystemExit(main())
