"""Embed the problem's Model (by source) into a candidate module as `_ProblemModel`.

ModelNew subclasses it, so the constructor signature, submodules and parameter
creation order are the problem's own: seeding gives identical weights.
"""

from __future__ import annotations

import ast
import functools
import inspect
from pathlib import Path
from typing import Any

from htam_engine.problems.model import Problem
from htam_engine.propose.offline import runtime
from htam_engine.propose.offline.decompose import Unsupported

BASE_NAME = "_ProblemModel"
_SKIP_FUNCS = {"get_inputs", "get_init_inputs"}


class _Rename(ast.NodeTransformer):
    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        if node.name == "Model":
            node.name = BASE_NAME
        self.generic_visit(node)
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == "Model":
            return ast.copy_location(ast.Name(id=BASE_NAME, ctx=node.ctx), node)
        return node


def _names_used(nodes: list[ast.stmt]) -> set[str]:
    """Global names the definitions read (function parameters are local, not constants)."""
    used: set[str] = set()
    params: set[str] = set()
    for n in nodes:
        for sub in ast.walk(n):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                used.add(sub.id)
            elif isinstance(sub, ast.arg):
                params.add(sub.arg)
    return used - params


def problem_pieces(problem: Problem) -> str:
    """Imports, helper classes/functions and the renamed Model, plus constants they read."""
    try:
        tree = ast.parse(problem.source)
    except SyntaxError as exc:
        raise Unsupported(f"problem source does not parse ({exc.msg})") from None
    if not any(isinstance(n, ast.ClassDef) and n.name == "Model" for n in tree.body):
        raise Unsupported("problem has no top-level class Model")
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    defs = [
        n for n in tree.body
        if isinstance(n, ast.ClassDef) or (isinstance(n, ast.FunctionDef) and n.name not in _SKIP_FUNCS)
    ]
    used = _names_used(defs)
    consts: list[ast.stmt] = []
    for n in tree.body:
        if isinstance(n, ast.Assign) and all(isinstance(t, ast.Name) for t in n.targets):
            names = [t.id for t in n.targets if t.id in used and t.id != "GPU_SIZES"]
            for name in names:
                value: Any = problem.overrides.get(name, None)
                expr = ast.parse(repr(value), mode="eval").body if name in problem.overrides else n.value
                consts.append(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=expr, lineno=0))
    module = ast.Module(body=imports + consts + defs, type_ignores=[])
    module = ast.fix_missing_locations(_Rename().visit(module))
    return ast.unparse(module) + "\n"


@functools.cache  # a pure function of this package's files; every candidate embeds it
def runtime_source() -> str:
    """The launch helpers (runtime.py) without their module docstring and imports."""
    return _definitions(inspect.getsource(runtime))


@functools.cache
def layout_source() -> str:
    """runtime_layout.py's helpers, the same way; read as text, since importing it needs Triton."""
    return _definitions((Path(__file__).parent / "runtime_layout.py").read_text())


def _definitions(source: str) -> str:
    body = [n for n in ast.parse(source).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    return "\n\n".join(ast.unparse(n) for n in body) + "\n"
