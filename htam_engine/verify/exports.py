"""`htam batch --verify`: every problem's best kernel exported (DIR/solutions/), each verified
against KernelBench one at a time (two evaluations timing one GPU must not overlap), the
table written to DIR/verify.json and added to the batch report."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from htam_engine.problems import load_problem
from htam_engine.problems.model import Problem
from htam_engine.verify import report
from htam_engine.verify.checkout import KernelBenchCheckout
from htam_engine.verify.settings import KernelBenchSettings
from htam_engine.storage import atomic_write_text
from htam_engine.verify.side_by_side import Verification, verify_solution

if TYPE_CHECKING:
    from htam_engine.loop.batch import Batch

SOLUTIONS_DIR = "solutions"
VERIFY_FILE = "verify.json"


@dataclass(slots=True)
class BatchVerification:
    verifications: list[Verification] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # problem id -> why it has nothing to verify

    def to_dict(self) -> dict[str, Any]:
        return {"summary": report.summary(self.verifications), "rows": [v.to_dict() for v in self.verifications],
                "skipped": dict(self.skipped)}

    def markdown(self) -> str:
        text = report.markdown(self.verifications)
        if self.skipped:
            text += "\nNot verified:\n\n" + "".join(f"- {p}: {why}\n" for p, why in self.skipped.items())
        return text


def export_bests(batch: Batch, problems: list[Problem]) -> tuple[list[tuple[Problem, Path]], dict[str, str]]:
    """(problem, exported solution) for each problem with a correct best; why not for the others."""
    from htam_engine.loop.setup import safe_name
    from htam_engine.session import export_best, load_session
    from htam_engine.session.ops import SessionError

    folder = batch.out / SOLUTIONS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    exported, skipped = [], {}
    for problem in problems:
        path = batch.session_path(problem)
        if not path.exists():
            skipped[problem.id] = "no session"
            continue
        try:
            exported.append((problem, export_best(load_session(path), folder / f"{safe_name(problem.id)}.py")))
        except SessionError as exc:
            skipped[problem.id] = str(exc)
    return exported, skipped


def verify_batch(batch: Batch, problems: list[Problem], checkout: KernelBenchCheckout,
                 settings: KernelBenchSettings | None = None,
                 on_done: Callable[[int, int, Verification], None] | None = None) -> dict[str, Any]:
    """Export, verify, write DIR/verify.json, set batch.verification and rewrite the batch's
    results with it; the new results.json document."""
    exported, skipped = export_bests(batch, problems)
    out = BatchVerification(skipped=skipped)
    for i, (problem, solution) in enumerate(exported, 1):
        # KernelBench runs the file as it is: so does htam here, whatever sizes the batch used.
        as_shipped = load_problem(problem.path) if problem.path else problem
        v = verify_solution(str(solution), solution.read_text(encoding="utf-8"), as_shipped, checkout,
                            batch.spec.device, settings)
        out.verifications.append(v)
        if on_done is not None:
            on_done(i, len(exported), v)

    atomic_write_text(batch.out / VERIFY_FILE, json.dumps(out.to_dict(), indent=2, default=str))
    batch.verification = out
    return batch.write_results(problems)
