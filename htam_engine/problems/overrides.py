"""`--set NAME=VALUE`: parse overrides and apply them while a problem module's top level runs.

An override replaces the right-hand side of each top-level assignment to NAME, so constants
derived later from NAME follow it (``bias_shape = (out_channels, 1, 1)``), while the other
targets of a chained assignment (``height = width = 128``) keep the original expression.
"""

from __future__ import annotations

import ast
from typing import Any

from htam_engine.errors import UsageError

# Name under which the override values sit in the module's globals while its top level runs.
OVERRIDES_GLOBAL = "__htam_overrides__"


def parse_overrides(items: list[str] | None) -> dict[str, Any]:
    """``["batch_size=16", "mode=fast"]`` -> ``{"batch_size": 16, "mode": "fast"}``.

    Values are Python literals where they parse as one (ints, floats, tuples, True...),
    else plain strings. A malformed item raises UsageError.
    """
    out: dict[str, Any] = {}
    for item in items or []:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise UsageError(f"--set expects NAME=VALUE with NAME a Python identifier, got {item!r}")
        text = text.strip()
        try:
            value: Any = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            value = text
        out[name] = value
    return out


def target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in target_names(elt)]
    if isinstance(target, ast.Starred):
        return target_names(target.value)
    return []


def top_level_assigned(tree: ast.Module) -> set[str]:
    """Names bound by top-level assignments (the module's constants)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                names.update(target_names(t))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            names.update(target_names(node.target))
    return names


def _override_expr(name: str, like: ast.AST) -> ast.expr:
    expr = ast.Subscript(
        value=ast.Name(id=OVERRIDES_GLOBAL, ctx=ast.Load()),
        slice=ast.Constant(value=name),
        ctx=ast.Load(),
    )
    return ast.copy_location(expr, like)


def _assign(name: str, like: ast.AST) -> ast.stmt:
    node = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=_override_expr(name, like))
    return ast.fix_missing_locations(ast.copy_location(node, like))


def apply_overrides(tree: ast.Module, names: set[str]) -> tuple[ast.Module, set[str]]:
    """Rewrite top-level assignments to `names`; return the new tree and the names not found.

    The values themselves are looked up at run time in the OVERRIDES_GLOBAL dict, so any
    Python object can be an override.
    """
    if not names:
        return tree, set()
    found: set[str] = set()
    body: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            simple = [t for t in node.targets if isinstance(t, ast.Name)]
            hit = [t.id for t in simple if t.id in names]
            others = [t for t in node.targets if not (isinstance(t, ast.Name) and t.id in names)]
            nested = [n for t in others for n in target_names(t) if n in names]
            if not hit and not nested:
                body.append(node)
                continue
            if others:
                # the remaining targets keep the original right-hand side
                keep = ast.Assign(targets=others, value=node.value)
                body.append(ast.copy_location(keep, node))
            for name in hit + nested:
                body.append(_assign(name, node))
                found.add(name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id in names:
            body.append(_assign(node.target.id, node))
            found.add(node.target.id)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id in names:
            # `x += 1` after `x = ...`: the override is the final value, so drop the update
            found.add(node.target.id)
        else:
            body.append(node)
    new = ast.Module(body=body, type_ignores=tree.type_ignores)
    return ast.fix_missing_locations(new), names - found
