"""Fixtures for the evaluation tests: the test problem at two sizes and one reusable evaluator."""

from __future__ import annotations

import pytest
from harness_core_support import PROBLEM_PATH, SMALL


@pytest.fixture(scope="module")
def small_problem():
    from htam_engine.problems import load_problem

    return load_problem(str(PROBLEM_PATH), dict(SMALL))


@pytest.fixture(scope="module")
def full_problem():
    from htam_engine.problems import load_problem

    return load_problem(str(PROBLEM_PATH))


@pytest.fixture(scope="module")
def evaluator():
    from htam_engine.evaluate.evaluator import Evaluator

    ev = Evaluator("cpu")
    yield ev
    ev.close()
