"""Reflection: ask for a short reusable lesson after a notable step, and read it back."""

from __future__ import annotations

import json
import re

from htam_engine.evaluate.result import EvalResult
from htam_engine.propose.base import Lesson, ProposalRequest
from htam_engine.propose.prompt import BuiltPrompt, feedback, template

MAX_CODE_CHARS = 12_000
_FIELD_LIMITS = {"direction": 60, "title": 120, "description": 800, "pitfalls": 400}


def build_reflection_prompt(request: ProposalRequest, code: str, result: EvalResult) -> BuiltPrompt:
    strategies = ", ".join(s.title for s in request.retrieval.strategies) or "none"
    if len(code) > MAX_CODE_CHARS:
        code = code[:MAX_CODE_CHARS] + "\n# ... [trimmed]"
    user = template("reflect").substitute(
        problem_name=request.problem.name,
        family=request.problem.family.value,
        backend=request.backend.value,
        direction=request.selection.direction or "none",
        strategies=strategies,
        outcome=feedback(result, 12, "evaluation").strip(),
        code=code.rstrip(),
    )
    system = "You distill kernel optimization experience into short lessons. Answer with JSON only."
    return BuiltPrompt(system, user)


def parse_lesson(reply: str, default_direction: str, known_directions: set[str] = frozenset()) -> Lesson | None:
    """A Lesson from a JSON object in `reply` (fenced or bare); None when there is none.
    The lesson stays under `default_direction` unless it names another known direction."""
    for match in re.finditer(r"\{.*\}", reply, re.DOTALL):
        try:
            doc = json.loads(match.group(0))
        except ValueError:
            continue
        if isinstance(doc, dict):
            return _lesson(doc, default_direction, known_directions)
    return None


def _lesson(doc: dict, default_direction: str, known: set[str]) -> Lesson | None:
    values = {k: " ".join(str(doc.get(k) or "").split())[:limit] for k, limit in _FIELD_LIMITS.items()}
    if not values["title"] or not values["description"]:
        return None
    return Lesson(
        direction=values["direction"] if values["direction"] in known else default_direction,
        title=values["title"],
        description=values["description"],
        pitfalls=values["pitfalls"],
    )
