"""A toy search whose answer is known: test doubles for the proposer and the evaluator.

No kernel is written, compiled or timed. A toy candidate is the list of directions applied
to reach it; the toy proposer builds on the session's best candidate by appending the step's
direction. The toy evaluator gives each candidate a speedup that only one direction sequence
maximises: CHAIN, in that order. Each chain direction taken when it is the next one due
multiplies the speedup by GAIN; any other move costs WASTE (a correct but slower candidate,
so the session's best stays where it was and the next step builds on it again).

So a perfect searcher reaches GAIN ** len(CHAIN) in len(CHAIN) steps; a searcher that draws
directions at random needs, on average, as many draws per link as there are directions that
apply. Memory can only help by learning, on bank problems, which direction follows which in
which state: the chain is the same for every toy problem of the family.
"""

from __future__ import annotations

from htam_engine.evaluate.result import EvalResult, Status
from htam_engine.families import Family
from htam_engine.problems.model import Problem, TensorSpec
from htam_engine.propose.base import Proposal

CHAIN = ("operator_fusion", "vectorization", "memory_access")
GAIN = 1.5
WASTE = 0.97
HEAD = "# toy candidate: "


def toy_problem(name: str) -> Problem:
    return Problem(id=f"toy:{name}", name=name, source=f"# toy problem {name}\n", level=1,
                   family=Family.ELEMENTWISE, inputs=[TensorSpec([1 << 20], "float32")])


def path_of(code: str | None) -> list[str]:
    if not code or not code.startswith(HEAD):
        return []
    rest = code[len(HEAD):].strip()
    return rest.split(",") if rest else []


def speedup_of(path: list[str]) -> float:
    due, s = 0, 1.0
    for d in path:
        if due < len(CHAIN) and d == CHAIN[due]:
            due += 1
            s *= GAIN
        else:
            s *= WASTE
    return s


class ToyProposer:
    """Proposer test double: the best candidate's path plus this step's direction."""

    name = "toy"

    async def propose(self, request, on_token=None) -> Proposal:
        path = path_of(request.best_code) + [request.selection.direction]
        return Proposal(code=HEAD + ",".join(path) + "\n", model=self.name)

    async def reflect(self, request, code, result):
        return None


class ToyEvaluator:
    """Evaluator test double (a worker pool's evaluate()): the toy speedup of the candidate's path."""

    def __init__(self) -> None:
        self.evaluated: list[tuple[str, str]] = []  # (problem id, candidate), in the order asked

    async def evaluate(self, problem, code, config=None, on_progress=None) -> EvalResult:
        self.evaluated.append((problem.id, code))
        s = speedup_of(path_of(code))
        return EvalResult(status=Status.OK, correct=True, runtime_ms=1.0 / s, ref_runtime_ms=1.0, speedup_eager=s,
                          device="cuda", backend="triton")

    async def close(self) -> None:
        pass
