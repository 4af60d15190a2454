"""The ablation experiment on the toy search whose answer is known (tests/support/toy_search.py).

    python3 tests/bench/toy_ablation.py [--select '{"retry_penalty": 0}'] [--problems 10] [--seeds 3]

Every arm on toy problems, cold and warm (a bank learned on disjoint toy problems), 6 steps;
prints the ablation table. No kernel is written or timed: the toy evaluator gives each direction
sequence a speedup that only CHAIN, in order, maximises, so a searcher that knows the chain
needs len(CHAIN) steps. --select tries selection settings other than the defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    from htam_engine.evaluate.config import EvalConfig
    from htam_engine.experiment import EvalTable, Experiment, ExperimentSpec, TablePool
    from htam_engine.experiment.report import render_markdown
    from tests.support.toy_search import CHAIN, ToyEvaluator, ToyProposer, toy_problem

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--problems", type=int, default=10, help="test problems (the bank gets 6 others)")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--select", type=json.loads, default={}, metavar="JSON")
    args = p.parse_args(argv)
    test = [toy_problem(f"t{i}") for i in range(args.problems)]
    bank = [toy_problem(f"b{i}") for i in range(6)]
    spec = ExperimentSpec(test=[x.id for x in test], bank=[x.id for x in bank], seeds=list(range(args.seeds)),
                          select=args.select)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as out:
        exp = Experiment(spec, out, pool=TablePool(EvalTable(None, {}), ToyEvaluator()), proposer=ToyProposer(),
                         eval_config=EvalConfig(device="cuda", backend="triton"),
                         evaluator="the toy evaluator (test double: no kernel)")
        outcome = asyncio.run(exp.run({x.id: x for x in test + bank}))
        print(render_markdown(outcome))
    print(f"toy chain {' -> '.join(CHAIN)} ({len(CHAIN)} steps); selection settings {args.select or 'default'}; "
          f"{time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
