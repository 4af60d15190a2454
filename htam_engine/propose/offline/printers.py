"""Print region expressions as C++/CUDA or Triton source.

Each printer turns one expression (given its arguments' already-printed names)
into source text; the kernel generators decide where values live.
"""

from __future__ import annotations

import math
from typing import Callable

from htam_engine.propose.offline.ir import COMPARE, Expr, Region

Ref = Callable[[int], str]


def c_float(v: float) -> str:
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    text = repr(float(v))
    if "e" not in text and "." not in text:
        text += ".0"
    return f"{text}f" if v >= 0 else f"({text}f)"


def py_float(v: float) -> str:
    if math.isnan(v):
        return 'float("nan")'
    if math.isinf(v):
        return 'float("inf")' if v > 0 else '(-float("inf"))'
    return repr(float(v)) if v >= 0 else f"({float(v)!r})"


class CPrinter:
    """C++ (CPU) and CUDA device code; `fast` selects approximate intrinsics."""

    def __init__(self, cuda: bool, fast: bool, vexp: bool = False):
        self.cuda, self.fast = cuda, fast
        self.vexp = vexp and not cuda  # CPU: polynomial exp that vectorises (accurate to about 1 ulp)

    def lit(self, v: float) -> str:
        return c_float(v)

    def _exp(self, a: str) -> str:
        if self.fast:
            return f"__expf({a})" if self.cuda else f"htam_exp({a})"
        return f"htam_exp({a})" if self.vexp else f"expf({a})"

    def _div(self, a: str, b: str) -> str:
        return f"__fdividef({a}, {b})" if self.cuda and self.fast else f"({a} / {b})"

    def expr(self, e: Expr, a: list[str]) -> str:
        op = e.op
        if op == "neg":
            return f"(-{a[0]})"
        if op == "abs":
            return f"fabsf({a[0]})"
        if op == "exp":
            return self._exp(a[0])
        if op == "log":
            if self.fast:
                return f"__logf({a[0]})" if self.cuda else f"htam_log({a[0]})"
            return f"logf({a[0]})"
        if op == "sqrt":
            return f"sqrtf({a[0]})"
        if op == "rsqrt":
            return f"rsqrtf({a[0]})" if self.cuda else f"(1.0f / sqrtf({a[0]}))"
        if op == "tanh":
            if self.fast or self.vexp:
                # tanh(x) = 1 - 2 / (exp(2x) + 1): one exp, exact limits at +-inf
                e2x = self._exp("2.0f * " + a[0])
                return "(1.0f - " + self._div("2.0f", f"({e2x} + 1.0f)") + ")"
            return f"tanhf({a[0]})"
        if op == "sigmoid":
            return self._div("1.0f", "(1.0f + " + self._exp("-" + a[0]) + ")")
        if op == "erf":
            return f"htam_erf({a[0]})" if (self.fast or self.vexp) and not self.cuda else f"erff({a[0]})"
        if op == "log1p":
            if self.fast and not self.cuda:
                return f"htam_log(1.0f + {a[0]})"
            return f"log1pf({a[0]})"
        if op == "expm1":
            return f"({self._exp(a[0])} - 1.0f)" if self.fast else f"expm1f({a[0]})"
        if op == "recip":
            return self._div("1.0f", a[0])
        if op == "add":
            return f"({a[0]} + {a[1]})"
        if op == "sub":
            return f"({a[0]} - {a[1]})"
        if op == "mul":
            return f"({a[0]} * {a[1]})"
        if op == "div":
            return self._div(a[0], a[1])
        if op in ("max", "min"):
            if self.cuda:
                return f"{'fmaxf' if op == 'max' else 'fminf'}({a[0]}, {a[1]})"
            # a select, not fmaxf/fminf: those only vectorise under finite-math assumptions
            sym = ">" if op == "max" else "<"
            return f"({a[0]} {sym} {a[1]} ? {a[0]} : {a[1]})"
        if op == "pow":
            return f"powf({a[0]}, {a[1]})"
        if op in COMPARE:
            sym = {"gt": ">", "ge": ">=", "lt": "<", "le": "<=", "eq": "=="}[op]
            return f"({a[0]} {sym} {a[1]})"
        if op == "where":
            return f"({a[0]} ? {a[1]} : {a[2]})"
        raise ValueError(f"no C form for {op}")

    def ctype(self, e: Expr) -> str:
        return "bool" if e.op in COMPARE else "float"


class TritonPrinter:
    """Triton device code (also runs under TRITON_INTERPRET=1)."""

    def __init__(self, fast: bool):
        self.fast = fast

    def lit(self, v: float) -> str:
        return py_float(v)

    def _exp(self, a: str) -> str:
        # exp2 maps to one hardware instruction; the scale is folded by the compiler
        return f"tl.exp2({a} * 1.4426950408889634)" if self.fast else f"tl.exp({a})"

    def expr(self, e: Expr, a: list[str]) -> str:
        op = e.op
        if op == "neg":
            return f"(-{a[0]})"
        if op == "abs":
            return f"tl.abs({a[0]})"
        if op == "exp":
            return self._exp(a[0])
        if op == "log":
            return f"tl.log({a[0]})"
        if op == "sqrt":
            return f"tl.sqrt({a[0]})"
        if op == "rsqrt":
            return f"tl.rsqrt({a[0]})"
        if op == "tanh":
            return "(2.0 / (1.0 + " + self._exp("-2.0 * " + a[0]) + ") - 1.0)"
        if op == "sigmoid":
            return "(1.0 / (1.0 + " + self._exp("-" + a[0]) + "))"
        if op == "erf":
            return f"tl.erf({a[0]})"
        if op == "log1p":
            # log(1 + x) loses digits for tiny x; the series term keeps them
            return f"tl.where(tl.abs({a[0]}) < 1e-4, {a[0]} - 0.5 * {a[0]} * {a[0]}, tl.log(1.0 + {a[0]}))"
        if op == "expm1":
            return f"tl.where(tl.abs({a[0]}) < 1e-5, {a[0]} + 0.5 * {a[0]} * {a[0]}, {self._exp(a[0])} - 1.0)"
        if op == "recip":
            return f"(1.0 / {a[0]})"
        if op == "add":
            return f"({a[0]} + {a[1]})"
        if op == "sub":
            return f"({a[0]} - {a[1]})"
        if op == "mul":
            return f"({a[0]} * {a[1]})"
        if op == "div":
            return f"({a[0]} / {a[1]})"
        if op == "max":
            return f"tl.maximum({a[0]}, {a[1]})"
        if op == "min":
            return f"tl.minimum({a[0]}, {a[1]})"
        if op == "pow":
            return f"tl.exp2({a[1]} * tl.log2({a[0]}))"
        if op in COMPARE:
            sym = {"gt": ">", "ge": ">=", "lt": "<", "le": "<=", "eq": "=="}[op]
            return f"({a[0]} {sym} {a[1]})"
        if op == "where":
            return f"tl.where({a[0]}, {a[1]}, {a[2]})"
        if op in ("triu", "tril"):  # in a GEMM epilogue: row rm and column rn of the tile
            keep = ">=" if op == "triu" else "<="
            return f"tl.where(rn[None, :] - rm[:, None] {keep} {int(e.value)}, {a[0]}, 0.0)"
        raise ValueError(f"no Triton form for {op}")


def leaf_ref(region: Region, printer: CPrinter | TritonPrinter, count_name: str, load: Ref, name: Ref) -> Ref:
    """A reference function: literals and the row length print inline, loads via `load`, the rest by name."""

    def ref(i: int) -> str:
        e = region.exprs[i]
        if e.op == "const":
            return printer.lit(float(e.value))
        if e.op == "count":
            return count_name
        if e.op == "pos":  # the element's position along the reduced row (the loop's index `r`)
            return "r"
        if e.op == "load":
            return load(int(e.value))
        return name(i)

    return ref


def emit_defs(region: Region, ids: list[int], printer: CPrinter | TritonPrinter, ref: Ref, target: Ref,
              decl: Callable[[str, str, str], str]) -> list[str]:
    """Lines defining each id (skipping leaves), via decl(ctype, name, value)."""
    lines = []
    for i in ids:
        e = region.exprs[i]
        if e.op in ("const", "count", "load", "pos"):
            continue
        value = printer.expr(e, [ref(a) for a in e.args])
        ctype = printer.ctype(e) if isinstance(printer, CPrinter) else ""
        lines.append(decl(ctype, target(i), value))
    return lines
