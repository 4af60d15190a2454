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
import functools
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


_READ: dict[int, tuple[Callable[..., Any], "_Source"]] = {}  # id(fn) -> (fn, what its source names)


class _Source:
    """What a kernel's source names: its parameters, the constexpr ones, the module-level names
    and attribute chains its body reads (their values are looked up at every launch: a global
    may be rebound between launches)."""

    def __init__(self, fn: Callable[..., Any]):
        self.name = getattr(fn, "__name__", "kernel")
        self.params = list(inspect.signature(fn).parameters)  # in order, to bind a launch's arguments
        self.constexprs: frozenset[str] = frozenset()
        self.names: list[str] = []
        self.chains: list[ast.Attribute] = []
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        except (OSError, TypeError, SyntaxError):
            return  # no source to read (the interpreter needs it too)
        node = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)), None)
        if node is None:
            return
        arguments = node.args.args + node.args.kwonlyargs
        params = {a.arg for a in arguments}
        self.constexprs = frozenset(a.arg for a in arguments
                                    if a.annotation is not None and "constexpr" in ast.unparse(a.annotation))
        body = [n for statement in node.body for n in ast.walk(statement)]  # not the signature's annotations
        local = params | {t.id for n in body for t in _targets(n) if isinstance(t, ast.Name)}
        for n in body:
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in local:
                self.names.append(n.id)
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and _chain(n)[0] not in local:
                self.chains.append(n)
            if isinstance(n, ast.Call) and not isinstance(n.func, (ast.Name, ast.Attribute)):
                raise InterpretedEscape(f"kernel {self.name} calls the result of an expression "
                                        f"({ast.unparse(n.func)}), which a compiled kernel cannot")


def check_launch(fn: Callable[..., Any], args: tuple, kwargs: dict) -> None:
    """Raise InterpretedEscape where kernel `fn` (the interpreted function's Python function),
    launched with `args` and `kwargs`, does what a compiled kernel could not: its source and the
    sources of the jit functions it names, read once each; the values of what they name and of
    every argument, at every launch."""
    source = _checked_body(fn, set())
    bound = {**dict(zip(source.params, args)), **{k: v for k, v in kwargs.items() if k in source.params}}
    for name, value in bound.items():
        if name in source.constexprs:
            if not _plain(value):
                raise InterpretedEscape(f"kernel {source.name}: constexpr argument {name} is a {type(value).__name__}; "
                                        "a compiled kernel takes numbers, strings, dtypes and jit functions there")
        elif not _launch_value(value):
            raise InterpretedEscape(f"kernel {source.name}: argument {name} is a {type(value).__name__}; a compiled "
                                    "kernel takes tensors, numbers, booleans and None")


def _checked_body(fn: Callable[..., Any], seen: set[int]) -> "_Source":
    """fn's source (read once), with what it names checked now, and so for every jit function it
    names (a helper it calls runs through the interpreter unlaunched)."""
    read = _READ.get(id(fn))
    if read is None or read[0] is not fn:
        read = _READ[id(fn)] = (fn, _Source(fn))
    source = read[1]
    seen.add(id(fn))
    glob = getattr(fn, "__globals__", {})
    for name in source.names:
        value = glob.get(name, getattr(builtins, name, _MISSING))
        if not _allowed_global(name, value):
            raise InterpretedEscape(f"kernel {source.name} uses {name} (a {type(value).__name__}), which a compiled "
                                    "kernel cannot: only Triton, jit functions, constexprs and plain values")
        helper = getattr(value, "fn", None) if callable(value) and _of_triton(value) else None
        if helper is not None and inspect.isfunction(helper) and id(helper) not in seen:
            _checked_body(helper, seen)
    for chain in source.chains:
        value = _resolved(chain, glob)
        if value is not _MISSING and not (isinstance(value, types.ModuleType) or _plain(value)):
            raise InterpretedEscape(f"kernel {source.name} uses {ast.unparse(chain)} (a {type(value).__name__}), "
                                    "which a compiled kernel cannot: only Triton, jit functions, constexprs "
                                    "and plain values")
    return source


def _chain(node: ast.Attribute) -> tuple[str, list[str]]:
    """`a.b.c` as ("a", ["b", "c"]); the root "" where it is no plain name (a call's result)."""
    attrs: list[str] = []
    base: ast.AST = node
    while isinstance(base, ast.Attribute):
        attrs.append(base.attr)
        base = base.value
    return (base.id if isinstance(base, ast.Name) else ""), attrs[::-1]


def _launch_value(value: Any) -> bool:
    """An argument a compiled kernel takes: a tensor of torch's own classes, a number, a bool,
    None, one of Triton's objects (a tensor descriptor), or a tuple of those; exact types, so a
    subclass's methods (an int whose __bool__ computes) never run."""
    import torch

    if type(value) in (torch.Tensor, torch.nn.Parameter, int, float, bool, type(None)):
        return True
    if type(value) is tuple:
        return all(_launch_value(v) for v in value)
    return _of_triton(value)


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


def _resolved(node: ast.Attribute, globals_: dict) -> Any:
    """What an attribute chain rooted at a module-level name refers to now (_MISSING where its root
    is no such name)."""
    root, attrs = _chain(node)
    if root not in globals_:
        return _MISSING
    value = globals_[root]
    for attr in attrs:
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
    return _plain(value)


def _plain(value: Any) -> bool:
    """A value a compiled kernel takes as a constexpr: a number, string, bool, None, a dtype, a jit
    function, or a tuple or list of those."""
    import torch

    if type(value) in (bool, int, float, str, torch.dtype, type(None)):  # exact: no subclass's methods run
        return True
    if type(value) in (tuple, list):
        return all(_plain(v) for v in value)
    return _of_triton(value)


def _of_triton(value: Any) -> bool:
    """Made by Triton's own code: an instance of one of its classes (tl.constexpr, tl.dtype, a jit
    or interpreted function, the candidate's included) or one of its functions, by where their
    code lives. (A candidate that forges that, rewriting a code object's file name or Triton's
    modules, gets through: it runs in the process this guard runs in.)"""
    home = _triton_home()
    if isinstance(value, type):
        return _defined_in(value, home)
    code = getattr(value, "__code__", None)
    if code is not None:
        return code.co_filename.startswith(home)
    return _defined_in(type(value), home)


@functools.cache
def _triton_home() -> str:
    import triton

    return triton.__path__[0]


def _defined_in(kind: type, home: str) -> bool:
    import sys

    module = sys.modules.get(kind.__module__)
    return getattr(module, "__file__", None) is not None and module.__file__.startswith(home) and \
        getattr(module, kind.__name__, None) is kind
