"""What a compiled Triton kernel cannot do, refused where the CPU runs kernels through Triton's
interpreter (TRITON_INTERPRET=1).

The interpreter runs a @triton.jit function's body as plain Python: a `tl.constexpr` argument may
be any object, and the body may call any Python function or object it can name, so a "kernel"
could call torch.softmax on tensors a closure holds and PyTorch would do the work under a custom
kernel's name (cheat_interp_escape). Compiling for a GPU refuses both. Before a kernel's first
launch its source is read once: every name it calls or reads from its module must be Triton's
(the `triton` package, a jit function, a constexpr), a builtin a kernel may use, or a plain value
(a number, a string, a dtype); every launch's constexpr arguments must be plain values or jit
functions. A kernel breaking either raises InterpretedEscape, in every call alike.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import types
from typing import Any, Callable

# The builtins a kernel body may call or read (Triton's code generator supports these).
_BUILTINS = frozenset({"range", "min", "max", "len", "int", "float", "bool", "isinstance", "print", "abs", "tuple",
                       "enumerate", "zip", "getattr", "hasattr", "type", "ValueError", "AssertionError",
                       "RuntimeError", "TypeError", "True", "False", "None"})


class InterpretedEscape(TypeError):
    """A kernel reaches Python a compiled kernel could not (this module's docstring)."""


_CHECKED: dict[int, tuple[Callable[..., Any], frozenset[str]]] = {}  # id(fn) -> (fn, its constexpr parameters)


def check_launch(fn: Callable[..., Any], args: tuple, kwargs: dict) -> None:
    """Raise InterpretedEscape where kernel `fn` (the interpreted function's Python function),
    launched with `args` and `kwargs`, does what a compiled kernel could not."""
    seen = _CHECKED.get(id(fn))
    if seen is None or seen[0] is not fn:
        seen = _CHECKED[id(fn)] = (fn, _checked_source(fn))
    constexprs = seen[1]
    names = list(inspect.signature(fn).parameters)
    bound = {**dict(zip(names, args)), **{k: v for k, v in kwargs.items() if k in names}}
    for name in constexprs:
        if name in bound and not _plain(bound[name]):
            raise InterpretedEscape(f"kernel {fn.__name__}: constexpr argument {name} is a {type(bound[name]).__name__}; "
                                    "a compiled kernel takes numbers, strings, dtypes and jit functions there")


def _checked_source(fn: Callable[..., Any]) -> frozenset[str]:
    """The kernel's constexpr parameters, once its source names nothing but what a kernel may."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return frozenset()  # no source to read (the interpreter needs it too)
    node = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)), None)
    if node is None:
        return frozenset()
    params = {a.arg for a in node.args.args + node.args.kwonlyargs}
    constexprs = frozenset(a.arg for a in node.args.args + node.args.kwonlyargs
                           if a.annotation is not None and "constexpr" in ast.unparse(a.annotation))
    body = [n for statement in node.body for n in ast.walk(statement)]  # not the signature's annotations
    assigned = {t.id for n in body for t in _targets(n) if isinstance(t, ast.Name)}
    for n in body:
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in params | assigned:
            value = fn.__globals__.get(n.id, getattr(builtins, n.id, _MISSING))
            if not _allowed_global(n.id, value):
                raise InterpretedEscape(f"kernel {fn.__name__} uses {n.id} (a {type(value).__name__}), which a "
                                        "compiled kernel cannot: only Triton, jit functions, constexprs and plain values")
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load):
            value = _resolved(n, fn.__globals__, params | assigned)
            if value is not _MISSING and not (isinstance(value, types.ModuleType) or _plain(value)):
                raise InterpretedEscape(f"kernel {fn.__name__} uses {ast.unparse(n)} (a {type(value).__name__}), "
                                        "which a compiled kernel cannot: only Triton, jit functions, constexprs "
                                        "and plain values")
        if isinstance(n, ast.Call) and not isinstance(n.func, (ast.Name, ast.Attribute)):
            raise InterpretedEscape(f"kernel {fn.__name__} calls the result of an expression "
                                    f"({ast.unparse(n.func)}), which a compiled kernel cannot")
    return constexprs


_MISSING = object()


def _targets(node: ast.AST) -> list[ast.AST]:
    """The names a statement binds (assignments, loop variables, with-as)."""
    if isinstance(node, ast.Assign):
        return [e for t in node.targets for e in ast.walk(t)]
    if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.comprehension)):
        return list(ast.walk(node.target))
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return list(ast.walk(node.optional_vars))
    return []


def _resolved(node: ast.Attribute, globals_: dict, local: set[str]) -> Any:
    """What an attribute chain rooted at a module-level name refers to (_MISSING where it is rooted
    at a local or parameter: a tensor's method, checked by the launch's constexpr rule)."""
    chain: list[str] = []
    base: ast.AST = node
    while isinstance(base, ast.Attribute):
        chain.append(base.attr)
        base = base.value
    if not isinstance(base, ast.Name) or base.id in local or base.id not in globals_:
        return _MISSING
    value = globals_[base.id]
    for attr in reversed(chain):
        value = getattr(value, attr, _MISSING)
        if value is _MISSING:
            return _MISSING  # not there now: the interpreter fails on it as a compile would
    return value


def _allowed_global(name: str, value: Any) -> bool:
    if value is _MISSING:
        return False
    if value is getattr(builtins, name, _MISSING):
        return name in _BUILTINS
    if isinstance(value, types.ModuleType):
        return value.__name__.split(".")[0] == "triton"
    return _plain(value) or _of_triton(value)


def _plain(value: Any) -> bool:
    """A value a compiled kernel takes as a constexpr: a number, string, bool, None, a dtype, a jit
    function, or a tuple or list of those."""
    import torch

    if value is None or isinstance(value, (bool, int, float, str, torch.dtype)):
        return True
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    return _of_triton(value)


def _of_triton(value: Any) -> bool:
    """Made by Triton's own code: an instance of one of its classes (tl.constexpr, tl.dtype, a jit
    or interpreted function, the candidate's included) or one of its functions, by where their
    code lives. (A candidate that forges that, rewriting a code object's file name or Triton's
    modules, gets through: it runs in the process this guard runs in.)"""
    import triton

    home = triton.__path__[0]
    if isinstance(value, type):
        return _defined_in(value, home)
    code = getattr(value, "__code__", None)
    if code is not None:
        return code.co_filename.startswith(home)
    return _defined_in(type(value), home)


def _defined_in(kind: type, home: str) -> bool:
    import sys

    module = sys.modules.get(kind.__module__)
    return getattr(module, "__file__", None) is not None and module.__file__.startswith(home) and \
        getattr(module, kind.__name__, None) is kind
