"""Problems: KernelBench-format operator files, the built-in suite, overrides, discovery.

    load_problem(ref, overrides=None, *, device="cpu") -> Problem
    instantiate(problem, device="cpu") -> ProblemInstance   (in the worker process)
    parse_overrides(["NAME=VALUE", ...]) -> dict
    unseen_shape_overrides(problem) -> dict | None
    discover(paths) -> list[Problem | ProblemError]
    builtin_names(), builtin_path(name), DEMO_PROBLEM
    classify_family(source, level=None) -> Family
"""

from htam_engine.problems.builtin import DEMO_PROBLEM, builtin_names, builtin_path
from htam_engine.problems.discover import discover
from htam_engine.problems.family import classify_family
from htam_engine.problems.loader import ProblemInstance, instantiate, load_problem, with_overrides
from htam_engine.problems.model import Problem, ProblemError, TensorSpec
from htam_engine.problems.overrides import parse_overrides
from htam_engine.problems.shapes import unseen_shape_overrides

__all__ = [
    "DEMO_PROBLEM",
    "Problem",
    "ProblemError",
    "ProblemInstance",
    "TensorSpec",
    "builtin_names",
    "builtin_path",
    "classify_family",
    "discover",
    "instantiate",
    "load_problem",
    "parse_overrides",
    "unseen_shape_overrides",
    "with_overrides",
]
