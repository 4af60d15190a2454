"""Input shapes a candidate was not shown: perturb sizes that only get_inputs uses."""

from __future__ import annotations

import ast
from typing import Any

from htam_engine.problems.model import Problem, ProblemError
from htam_engine.problems.overrides import target_names


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _dependencies(tree: ast.Module) -> tuple[dict[str, set[str]], dict[str, ast.FunctionDef]]:
    """Top-level name -> names its value reads; and the top-level functions by name."""
    deps: dict[str, set[str]] = {}
    funcs: dict[str, ast.FunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            used = _names_in(node.value)
            for t in node.targets:
                for name in target_names(t):
                    deps.setdefault(name, set()).update(used)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            for name in target_names(node.target):
                deps.setdefault(name, set()).update(_names_in(node.value))
        elif isinstance(node, ast.FunctionDef):
            funcs[node.name] = node
    return deps, funcs


def _closure(start: set[str], deps: dict[str, set[str]], funcs: dict[str, ast.FunctionDef]) -> set[str]:
    seen: set[str] = set()
    todo = list(start)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(deps.get(name, ()))
        if name in funcs:
            todo.extend(_names_in(funcs[name]))
    return seen


def _globals_read_by_classes(tree: ast.Module) -> set[str]:
    """Module names the classes read at run time (loads that are not their functions' locals)."""
    read: set[str] = set()
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for fn in (n for n in ast.walk(cls) if isinstance(n, (ast.FunctionDef, ast.Lambda))):
            args = fn.args
            local = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
            local |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
            names = [n for n in ast.walk(fn) if isinstance(n, ast.Name)]
            local |= {n.id for n in names if isinstance(n.ctx, ast.Store)}
            read |= {n.id for n in names if isinstance(n.ctx, ast.Load)} - local
    return read


# An unseen-shape set over this many bytes may be at most UNSEEN_GROWTH times the main set: the
# judge holds a set, its shared copy and its float64 copy at once, so every size bumped at
# KernelBench's official sizes made 45_Average_Pooling_2D's unseen set 1.25x and
# 46_Average_Pooling_3D's 1.39x the main one, and the evaluation's memory peak with it.
UNSEEN_CAPPED_BYTES = 1 << 30
UNSEEN_GROWTH = 1.10


def _bump(value: int) -> int:
    # an odd step off round sizes: 128 -> 131 (not a multiple of any tile width)
    return value + 3 if value >= 4 else value + 1


def fewer_bumps(bumped: dict[str, int], current: dict[str, Any]) -> list[dict[str, int]]:
    """`bumped` with its bumps dropped one at a time, the one that grows its size the most
    first (16 -> 19 before 2048 -> 2051), down to the single bump that grows its size least:
    the variants to try, in turn, when the full set of bumps makes too large an input set."""
    order = sorted(bumped, key=lambda n: bumped[n] / current[n] if current.get(n) else float("inf"), reverse=True)
    return [{n: bumped[n] for n in order[k:]} for k in range(1, len(order))]


def bumped_sizes(tree: ast.Module, constants: dict[str, Any], overrides: dict[str, Any]) -> dict[str, int]:
    """Int constants read by get_inputs but not by get_init_inputs (so the model's weights keep
    their shapes) nor by the classes, each bumped by a small odd step from its current value.
    Empty when there is none. Reads the parsed file only: nothing runs."""
    deps, funcs = _dependencies(tree)
    if "get_inputs" not in funcs or "get_init_inputs" not in funcs:
        return {}
    for_inputs = _closure({"get_inputs"}, deps, funcs)
    for_init = _closure({"get_init_inputs"}, deps, funcs)
    # a size the model itself reads from the module would change under the reference only
    # (a candidate keeps its own copy), so it cannot tell an honest candidate from a cheat
    candidates = sorted(n for n in for_inputs - for_init - _globals_read_by_classes(tree) if n in deps)
    current = {**constants, **overrides}
    return {
        n: _bump(current[n])
        for n in candidates
        if isinstance(current.get(n), int) and not isinstance(current.get(n), bool) and current[n] > 0
    }


def unseen_shape_overrides(problem: Problem) -> dict[str, Any] | None:
    """Overrides that change input shapes (see bumped_sizes). None when no such constant exists
    or shapes do not change.
    """
    from htam_engine.problems.loader import parse_source, with_overrides

    tree = parse_source(problem.source, problem.path or problem.id)
    bumped = bumped_sizes(tree, problem.constants, problem.overrides)
    if not bumped:
        return None
    try:
        variant = with_overrides(problem, bumped)
    except ProblemError:
        return None
    if [t.shape for t in variant.inputs] == [t.shape for t in problem.inputs]:
        return None
    return bumped
