"""Lower a traced Model into a plan: PyTorch-kept operations plus fused regions.

Walking the fx graph in order, fusable nodes (activations, arithmetic, reductions,
normalizations) are grouped greedily into regions; a library operation kept in
PyTorch (linear, conv, matmul, pooling, views) closes the open region. Each
region becomes one custom kernel; ModelNew.forward is Python that calls the kept
operations and the regions' kernels in the original order.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx
from torch.fx.node import _get_qualified_name

from htam_engine.propose.offline.conv_bias import FUNCTIONAL, TRANSPOSED_FUNCTIONS
from htam_engine.propose.offline.decompose import OPS, ROW_LOSSES, KeepInLibrary, Unsupported
from htam_engine.propose.offline.ir import (
    ARG_REDUCE,
    CONST,
    ELEM,
    REDUCE,
    ROW,
    Builder,
    Gemm,
    Region,
    RegionInput,
    Scan,
    Window,
    compute_levels,
    needed,
)
from htam_engine.propose.offline.recognize import OpCall, is_kept, matmul_call, recognize
from htam_engine.propose.offline.trace import Traced

# operand dtypes a kernel reads (bool masks are converted to float32 by the wrapper)
ALL_LAYOUTS = frozenset({"window", "middle", "groups"})
_FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.bool)


class _Mismatch(Exception):
    """The node does not fit the open region (another reduction layout); start a new one."""


@dataclass(frozen=True, slots=True)
class KeptConv:
    """A 2-D or 3-D convolution kept in the library, called on one value."""

    line: int  # its call in Plan.lines: `var = call(arg<rest>)`
    call: str  # the module's attribute path (self.conv) or the function (torch.nn.functional.conv2d)
    arg: str  # the input's variable
    rest: str  # the call's other arguments, each after ", " (a function's weight, bias=None, ...)
    var: str  # the output's variable
    reduction: int  # products summed per output: input channels per group x kernel positions


# Convolutions that cuDNN also runs channels-last (1-D ones have no such layout), as modules and
# as the bias-free functions conv_bias.py calls.
_CHANNELS_LAST_CONVS = (torch.nn.Conv2d, torch.nn.Conv3d, torch.nn.ConvTranspose2d, torch.nn.ConvTranspose3d)
_CHANNELS_LAST_FUNCTIONS = frozenset(FUNCTIONAL[m][0] for m in _CHANNELS_LAST_CONVS)


@dataclass
class Plan:
    params: list[str]  # forward's parameter list, as written
    lines: list[str]  # forward body
    regions: list[Region]
    kept: list[str] = field(default_factory=list)  # descriptions of operations kept in PyTorch
    gemms: list[Gemm] = field(default_factory=list)  # matrix products (library or a GEMM of ours)
    reassociable: bool = False  # a product summed over its columns could be summed first (lower._sum_first)
    reassociated: bool = False  # ... and this plan does it
    convs: list[KeptConv] = field(default_factory=list)

    def channels_last_convs(self) -> list[KeptConv]:
        """The convolutions whose output an elementwise region reads in place (channels_last_reads)."""
        by_index = {r.index: r for r in self.regions}
        read = {by_index[i].inputs[k].source for i, k in self.channels_last_reads().items()}
        return [c for c in self.convs if c.var in read]

    def channels_last_reads(self) -> dict[int, int]:
        """{region index: input} for the elementwise regions that read a kept convolution's whole
        output (the first such input): with conv.layout=channels_last they read it in place."""
        made = {c.var for c in self.convs}
        out: dict[int, int] = {}
        for r in self.regions:
            if r.kind != "ew":
                continue
            for k, inp in enumerate(r.inputs):
                if inp.kind == "full" and inp.source in made and len(inp.shape) in (4, 5) and \
                        tuple(inp.shape) == tuple(r.out_shape):
                    out[r.index] = k
                    break
        return out

    @property
    def has_library_op(self) -> bool:
        return bool(self.gemms) or any(not k.startswith("view:") for k in self.kept)


def _var(node: fx.Node) -> str:
    return node.name if node.op == "placeholder" else f"t_{node.name}"


def _py(value: Any, names: dict[fx.Node, str]) -> str:
    if isinstance(value, fx.Node):
        if value not in names:
            raise Unsupported(f"value {value.name} is needed outside its fused region")
        return names[value]
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_py(v, names) for v in value)
        if isinstance(value, tuple):
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        return f"[{inner}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_py(v, names)}" for k, v in value.items()) + "}"
    if isinstance(value, float):
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        if math.isnan(value):
            return "float('nan')"
        return repr(value)
    if isinstance(value, (torch.dtype, torch.memory_format, torch.layout)):
        return str(value)
    if isinstance(value, torch.device):
        return f"torch.device({str(value)!r})"
    if isinstance(value, slice):
        return f"slice({_py(value.start, names)}, {_py(value.stop, names)}, {_py(value.step, names)})"
    if value is Ellipsis:
        return "..."
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    raise Unsupported(f"cannot write argument of type {type(value).__name__} in generated code")


def _call_args(args: tuple, kwargs: dict, names: dict[fx.Node, str]) -> str:
    parts = [_py(a, names) for a in args] + [f"{k}={_py(v, names)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def _attr_path(target: str) -> str:
    if all(p.isidentifier() for p in target.split(".")):
        return f"self.{target}"
    return f"self.get_submodule({target!r})" if "." in target else f"getattr(self, {target!r})"


def _function_name(fn: Any) -> str:
    name = _get_qualified_name(fn)
    if name.startswith("_operator."):
        return "operator." + name.split(".", 1)[1]
    if name.startswith("builtins."):
        return name.split(".", 1)[1]
    return name


def _reduction(weight: tuple[int, ...], transposed: bool, groups: int) -> int:
    """Products summed per output of a convolution with this weight (a transposed one's weight is
    (in, out / groups, k...), its sum runs over the input channels of a group)."""
    cin = weight[0] // groups if transposed else weight[1]
    return cin * math.prod(weight[2:])


def _describe(node: fx.Node, traced: Traced) -> str:
    if node.op == "call_module":
        return type(traced.gm.get_submodule(str(node.target))).__name__
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    return _function_name(node.target)


def _dims(dims: Any, ndim: int, middle: bool = False) -> tuple[int, ...]:
    """Sorted non-negative dims of a reduction: adjacent, or (middle) a prefix and a suffix of the
    dims around kept middle dims (batch statistics: reduce N and the spatial dims, keep C)."""
    if dims is None or dims == () or dims == []:
        out = tuple(range(ndim))
    elif isinstance(dims, int):
        out = (dims,)
    elif isinstance(dims, (list, tuple)) and all(isinstance(d, int) for d in dims):
        out = tuple(dims)
    else:
        raise Unsupported(f"reduction over dims {dims!r}")
    out = tuple(sorted({d + ndim if d < 0 else d for d in out}))
    if not out or out[0] < 0 or out[-1] >= ndim:
        raise Unsupported(f"reduction dims {dims!r} out of range")
    if out != tuple(range(out[0], out[-1] + 1)):
        if is_middle(out, ndim) and not middle:  # batch statistics, on a backend without that layout
            raise KeepInLibrary(f"a reduction over dims {out} around kept ones")
        if not is_middle(out, ndim):
            raise Unsupported(f"reduction over non-adjacent dims {out}")
    return out


def is_middle(dims: tuple[int, ...], ndim: int) -> bool:
    """Whether the reduced dims are a non-empty prefix and suffix around kept middle dims."""
    kept = [d for d in range(ndim) if d not in dims]
    return bool(kept) and dims[0] == 0 and dims[-1] == ndim - 1 and kept == list(range(kept[0], kept[-1] + 1))


class _RegionBuilder:
    """The open region: implements the decomposition context (see decompose.Ctx)."""

    def __init__(self, index: int, lowering: "_Lowering"):
        self.index = index
        self.low = lowering
        self.b = Builder()
        self.inputs: list[RegionInput] = []
        self.input_ids: dict[str, int] = {}
        self.nodes: dict[fx.Node, int] = {}  # fx node -> expr id
        self.order: list[fx.Node] = []
        self.elem: tuple[int, ...] | None = None  # fixed by the first reduction
        self.dims: tuple[int, ...] | None = None
        self.dropped: set[int] = set()  # row values whose reduced dims were dropped (keepdim=False)
        self.win: Window | None = None  # a pooling region's window (fixed by its pooling op)
        self.scan_spec: Scan | None = None  # a scan region's scan (fixed by its cumsum / cumprod)
        self.call: OpCall | None = None

    # -- transactional adding
    def snapshot(self) -> tuple:
        return (len(self.b.exprs), len(self.inputs), self.elem, self.dims, set(self.dropped), self.win, self.scan_spec)

    def rollback(self, snap: tuple) -> None:
        n_exprs, n_inputs, self.elem, self.dims, self.dropped, self.win, self.scan_spec = snap
        del self.b.exprs[n_exprs:]
        self.b._ids = {e: i for i, e in enumerate(self.b.exprs)}
        for inp in self.inputs[n_inputs:]:
            self.input_ids.pop(inp.source, None)
        del self.inputs[n_inputs:]

    # -- decomposition context
    def val(self, arg: Any) -> int:
        if isinstance(arg, bool):
            raise Unsupported("boolean operand")
        if isinstance(arg, (int, float)):
            return self.b.const(float(arg))
        if not isinstance(arg, fx.Node):
            raise Unsupported(f"operand of type {type(arg).__name__}")
        arg = self.low.alias.get(arg, arg)
        if arg in self.nodes:
            return self.nodes[arg]
        folded = self.low.constant_value(arg)
        if folded is not None:
            return self.b.const(folded)
        source = self.low.value_source(arg)
        if arg.op == "placeholder" and arg.name in self.low.traced.numbers:
            return self._input(source, (), torch.float32)  # a number: the wrapper makes it a 0-d tensor
        return self._input(source, self.low.traced.shapes.get(arg.name), self.low.traced.dtypes.get(arg.name))

    def _input(self, source: str, shape: tuple[int, ...] | None, dtype: torch.dtype | None) -> int:
        if shape is None:
            raise Unsupported(f"operand {source} is not a tensor")
        if dtype not in _FLOAT_DTYPES:
            raise Unsupported(f"operand {source} has dtype {dtype}")
        if self.dims is not None and source not in self.input_ids and (
                len(shape) > len(self.elem)
                or torch.broadcast_shapes(_right(tuple(shape), len(self.elem)), self.elem) != self.elem):
            raise _Mismatch()  # it broadcasts beyond the reduced layout: the op starts a new region
        if source not in self.input_ids:
            self.input_ids[source] = len(self.inputs)
            self.inputs.append(RegionInput(source=source, kind="", shape=tuple(shape)))
        return self.b.load(self.input_ids[source])

    def num(self, arg: Any, what: str) -> float:
        if isinstance(arg, (int, float)) and not isinstance(arg, bool):
            return float(arg)
        raise Unsupported(f"{what} must be a number, got {type(arg).__name__}")

    def param(self, module: str | None, attr: str, arg: Any) -> int | None:
        if isinstance(arg, fx.Node):
            return self.val(arg)
        if arg is not None:
            raise Unsupported(f"{attr} of type {type(arg).__name__}")
        mod_path = module or (self.call.module if self.call else None)
        if not mod_path:
            return None
        tensor = getattr(self.low.traced.gm.get_submodule(mod_path), attr, None)
        if tensor is None:
            return None
        return self._input(f"{_attr_path(mod_path)}.{attr}", tuple(tensor.shape), tensor.dtype)

    def reduce_shape(self, kind: str, a: int, shape: tuple[int, ...], dims: tuple[int, ...]) -> int:
        """A keepdim reduction of a value of `shape` (one that is not a graph node's)."""
        self._fix_layout(shape, dims)
        return self.b.red(kind, a)

    def ndim(self, arg: Any) -> int:
        shape = self.low.traced.shapes.get(arg.name) if isinstance(arg, fx.Node) else None
        if shape is None:
            raise Unsupported("a normalization of a non-tensor")
        return len(shape)

    def channel(self, attr: str, arg: Any, ndim: int) -> int | None:
        """A per-channel (dim 1) parameter or buffer, viewed to broadcast over the trailing dims."""
        if isinstance(arg, fx.Node):
            source, shape = self.low.value_source(arg), self.low.traced.shapes.get(arg.name)
        else:
            if arg is not None:
                raise Unsupported(f"{attr} of type {type(arg).__name__}")
            mod_path = self.call.module if self.call else None
            tensor = getattr(self.low.traced.gm.get_submodule(mod_path), attr, None) if mod_path else None
            if tensor is None:
                return None
            source, shape = f"{_attr_path(mod_path)}.{attr}", tuple(tensor.shape)
        if shape is None or len(shape) != 1:
            raise Unsupported(f"{attr} of shape {shape}")
        if ndim > 2:
            source += ".view(-1" + ", 1" * (ndim - 2) + ")"
            shape = (shape[0],) + (1,) * (ndim - 2)
        return self._input(source, tuple(shape), torch.float32)

    def reduce(self, kind: str, a: int, input_arg: Any, dims: Any, keepdim: bool) -> int:
        shape = self.low.traced.shapes.get(input_arg.name) if isinstance(input_arg, fx.Node) else None
        if shape is None:
            raise Unsupported("reduction of a non-tensor")
        norm = _dims(dims, len(shape), middle="middle" in self.low.layouts)
        if keepdim and all(shape[d] == 1 for d in norm):
            return a  # a sum, mean, max or min over dims of size 1 is the value itself
        self._fix_layout(shape, norm)
        r = self.b.red(kind, a)
        if not keepdim:
            self.dropped.add(r)
        return r

    def drop_dims(self, i: int) -> None:
        self.dropped.add(i)

    def dim_size(self, arg: Any, dim: int) -> int:
        """The run-time size of dim `dim` of a tensor operand (read in forward, passed as a scalar)."""
        if not isinstance(arg, fx.Node):
            raise Unsupported("the size of a non-tensor")
        return self._input(f"{self.low.value_source(self.low.alias.get(arg, arg))}.shape[{dim}]", (), torch.float32)

    def reduce_trailing(self, kind: str, a: int, input_arg: Any, count: int) -> int:
        shape = self.low.traced.shapes.get(input_arg.name) if isinstance(input_arg, fx.Node) else None
        if shape is None or count > len(shape):
            raise Unsupported("normalization of a non-tensor")
        return self.reduce(kind, a, input_arg, tuple(range(len(shape) - count, len(shape))), True)

    def _fix_layout(self, shape: tuple[int, ...], dims: tuple[int, ...]) -> None:
        if self.win is not None or self.scan_spec is not None:
            raise _Mismatch()
        if self.dims is None:
            self.elem, self.dims = tuple(shape), dims
        elif tuple(shape) != self.elem or dims != self.dims:
            raise _Mismatch()

    def scan(self, spec: Scan, a: int, input_arg: Any) -> int:
        """A cumulative value along spec.dim of the input (a scan region's layout)."""
        shape = self.low.traced.shapes.get(input_arg.name) if isinstance(input_arg, fx.Node) else None
        if shape is None or not shape:
            raise KeepInLibrary("a scan of a non-tensor")
        if self.dims is not None or self.win is not None:
            raise _Mismatch()
        self.elem, self.dims, self.scan_spec = tuple(shape), (spec.dim,), spec
        return self.b.scan(a)

    def window(self, kind: str, a: int, input_arg: Any, window: Window) -> int:
        """A value pooled over windows of the input's last `window.nd` dims."""
        if "window" not in self.low.layouts:
            raise KeepInLibrary("pooling (no pooling generator for this backend)")
        shape = self.low.traced.shapes.get(input_arg.name) if isinstance(input_arg, fx.Node) else None
        if shape is None or len(shape) < window.nd + 1:
            raise KeepInLibrary("pooling a tensor without leading dims")
        if self.dims is not None or self.win is not None:
            raise _Mismatch()  # a region pools once, over elementwise values
        self.elem, self.win = tuple(shape), window
        return self.b.red(kind, a)


class _Lowering:
    def __init__(self, traced: Traced, layouts: frozenset[str] = ALL_LAYOUTS, reassociate: bool = False):
        self.traced = traced
        # region layouts the backend's generators write (else those ops stay library calls):
        # "window" (pooling), "middle" (batch statistics), "groups" (group norm)
        self.layouts = layouts
        self.mixed_ok = "groups" in layouts  # operands read along kept and reduced dims (Triton rows)
        self.modules = dict(traced.gm.named_modules())
        self.names: dict[fx.Node, str] = {}  # nodes with a Python value in forward
        self.lines: list[str] = []
        self.regions: list[Region] = []
        self.kept: list[str] = []
        self.open: _RegionBuilder | None = None
        self.alias: dict[fx.Node, fx.Node] = {}  # getitem(max(x, dim), 0) -> the max node
        self.gemms: list[Gemm] = []
        self.scans, self.dead = find_scans(traced)
        self.reassociate = reassociate  # a product summed over its columns is summed first (_sum_first)
        self.reassociable = False  # whether the graph has such a product
        self.done_early: set[fx.Node] = set()  # nodes a rewrite already put in the open region
        self.convs: list[KeptConv] = []
    def constant_value(self, node: fx.Node) -> float | None:
        """A one-element tensor the tracer captured (torch.tensor(c) in forward), as a number."""
        # the tracer stores such tensors on the root as _tensor_constant<N>; ModelNew has no such attribute
        if node.op != "get_attr" or not str(node.target).startswith("_tensor_constant"):
            return None
        value = getattr(self.traced.gm, str(node.target), None)
        if isinstance(value, torch.Tensor) and value.numel() == 1 and value.device.type != "meta":
            return float(value.item())
        raise Unsupported("a tensor constant created in forward")

    def value_source(self, node: fx.Node) -> str:
        node = self.alias.get(node, node)
        if node in self.names:
            return self.names[node]
        if node.op == "get_attr":
            return _attr_path(str(node.target))
        raise Unsupported(f"value {node.name} is not available to a fused region")

    # -- regions
    def _close(self) -> None:
        rb, self.open = self.open, None
        if rb is None or not rb.order:
            return
        users_outside = [n for n in rb.order if any(u not in rb.nodes for u in self._users(n))]
        if len(users_outside) != 1:
            names = ", ".join(n.name for n in users_outside) or "none"
            raise Unsupported(f"a fused region would need several outputs ({names})")
        out_node = users_outside[0]
        region = _finish_region(rb, out_node, self.traced)
        self.regions.append(region)
        var = f"t_{out_node.name}"
        args = ", ".join(inp.source for inp in region.inputs)
        region.line = len(self.lines)
        self.lines.append(f"{var} = _region_{region.index}({args})")
        self.names[out_node] = var
        for alias_node, target in self.alias.items():
            if target is out_node:
                self.names[alias_node] = var

    def _users(self, node: fx.Node) -> list[fx.Node]:
        """Users, looking through aliases (getitem(max(x, dim), 0) stands for the max itself)."""
        out: list[fx.Node] = []
        for u in node.users:
            out += self._users(u) if u in self.alias else [u]
        return out

    def _add_fusable(self, node: fx.Node, call: OpCall) -> bool:
        """Add the node to the open region (or a new one); False when it stays a library call."""
        fn = OPS.get(call.name)
        if fn is None:
            raise Unsupported(f"no decomposition for {call.name}")
        for attempt in range(2):
            if self.open is None:
                self.open = _RegionBuilder(len(self.regions), self)
            rb = self.open
            snap = rb.snapshot()
            rb.call = call
            try:
                expr = fn(rb, call.args)
            except _Mismatch:
                rb.rollback(snap)
                if attempt:
                    raise Unsupported(f"{node.name}: reduction layout does not fit one kernel") from None
                self._close()
                continue
            except KeepInLibrary:
                rb.rollback(snap)
                return False
            rb.nodes[node] = expr
            rb.order.append(node)
            return True
        return False

    def run(self) -> Plan:
        params: list[str] = []
        for node in self.traced.gm.graph.nodes:
            if node.op == "placeholder":
                self.names[node] = node.name
                if node.args:
                    params.append(f"{node.name}={_py(node.args[0], self.names)}")
                else:
                    params.append(str(node.target) if str(node.target).startswith("*") else node.name)
                continue
            if node.op == "get_attr":
                self.names[node] = _attr_path(str(node.target))
                continue
            if node.op == "output":
                self._close()
                self.lines.append(f"return {_py(node.args[0], self.names)}")
                continue
            if node in self.done_early or self._alias(node) or node in self.dead:
                continue
            if node in self.scans:
                spec, source = self.scans[node]
                if self._add_fusable(node, OpCall("scan", {"input": source, "spec": spec})):
                    continue
                raise Unsupported(f"cannot generate a kernel for {_describe(node, self.traced)}")
            call = recognize(node, self.modules)
            if call is not None and call.name == "group_norm" and self._group_norm(node, call):
                continue
            if call is not None and call.name in ROW_LOSSES:
                if self._row_loss(node, call):
                    continue
                raise Unsupported(f"{call.name} with these arguments")
            if call is not None and self._add_fusable(node, call):
                continue
            mm = matmul_call(node, self.modules)
            if mm is not None and self._gemm(node, mm):
                continue
            if call is None and not is_kept(node, self.modules):
                raise Unsupported(f"cannot generate a kernel for {_describe(node, self.traced)}")
            self._close()
            self._emit_kept(node)
        plan = Plan(params=params, lines=self.lines, regions=self.regions, kept=self.kept, gemms=self.gemms,
                    reassociable=self.reassociable, reassociated=self.reassociable and self.reassociate,
                    convs=self.convs)
        _find_epilogues(plan)
        return plan

    def _row_loss(self, node: fx.Node, call: OpCall) -> bool:
        """Cross-entropy and triplet-margin losses: a per-row value (one region), then its mean or sum
        over the rows (a second region, as one op cannot span two reduction layouts)."""
        a = call.args
        if any(a.get(k) is not None for k in ("weight", "size_average", "reduce")) or a.get("reduction") not in (
                "mean", "sum") or a.get("label_smoothing", 0.0) or a.get("ignore_index", -100) != -100 or \
                a.get("swap") or a.get("p", 2) not in (2, 2.0):
            return False
        x_arg = a["input"]
        shape = self.traced.shapes.get(x_arg.name) if isinstance(x_arg, fx.Node) else None
        if shape is None or len(shape) != 2:
            return False
        self._close()
        rb = self.open = _RegionBuilder(len(self.regions), self)
        rb.call, b = call, rb.b
        if call.name == "cross_entropy":
            t_arg = a["target"]
            if not isinstance(t_arg, fx.Node) or self.traced.shapes.get(t_arg.name) != (shape[0],):
                return False
            x = rb.val(x_arg)
            # class indices as float (exact below 2^24) beside each row; `pos` is the column
            t = rb._input(f"{self.value_source(t_arg)}.view(-1, 1)", (shape[0], 1), torch.float32)
            m = rb.reduce("max", x, x_arg, 1, True)
            total = rb.reduce("sum", b.un("exp", b.bin("sub", x, m)), x_arg, 1, True)
            picked = rb.reduce("sum", b.where(b.bin("eq", b.pos(), t), x, b.const(0.0)), x_arg, 1, True)
            row = b.bin("sub", b.bin("add", m, b.un("log", total)), picked)
        else:  # triplet margin: max(d(anchor, positive) - d(anchor, negative) + margin, 0)
            anchor, pos_arg, neg_arg = a["input"], a["positive"], a["negative"]
            eps, margin = b.const(float(a.get("eps", 1e-6))), b.const(float(a.get("margin", 1.0)))
            x = rb.val(anchor)

            def dist(other: Any) -> int:
                d = b.bin("add", b.bin("sub", x, rb.val(other)), eps)
                return b.un("sqrt", rb.reduce("sum", b.bin("mul", d, d), anchor, 1, True))

            row = b.bin("max", b.bin("add", b.bin("sub", dist(pos_arg), dist(neg_arg)), margin), b.const(0.0))
        self.open = None
        rows = _finish_value(rb, row, (shape[0], 1))
        self.regions.append(rows)
        var = f"t_{node.name}_rows"
        rows.line = len(self.lines)
        self.lines.append(f"{var} = _region_{rows.index}({', '.join(inp.source for inp in rows.inputs)})")
        rb2 = self.open = _RegionBuilder(len(self.regions), self)
        v = rb2._input(var, (shape[0], 1), torch.float32)
        rb2.elem, rb2.dims = (shape[0], 1), (0, 1)
        out = rb2.b.red(a["reduction"], v)
        rb2.dropped.add(out)
        rb2.nodes[node] = out
        rb2.order.append(node)
        return True

    def _group_norm(self, node: fx.Node, call: OpCall) -> bool:
        """Group norm on its own region over the grouped view (N, G, C/G, *S): statistics per row of
        C/G * S elements, the per-channel affine read along the group and channel-in-group dims."""
        a = call.args
        x_arg, groups = a["input"], a.get("num_groups")
        shape = self.traced.shapes.get(x_arg.name) if isinstance(x_arg, fx.Node) else None
        if "groups" not in self.layouts or shape is None or len(shape) < 2 or not isinstance(groups, int) or \
                shape[1] % groups:
            return False
        self._close()
        rb = self.open = _RegionBuilder(len(self.regions), self)
        rb.call, b = call, rb.b
        spatial = shape[2:]
        view = (shape[0], groups, shape[1] // groups, *spatial)
        x = rb._input(f"{self.value_source(self.alias.get(x_arg, x_arg))}.unflatten(1, ({groups}, -1))", view,
                      self.traced.dtypes.get(x_arg.name))
        dims = tuple(range(2, len(view)))
        mu = rb.reduce_shape("mean", x, view, dims)
        d = b.bin("sub", x, mu)
        var = rb.reduce_shape("mean", b.bin("mul", d, d), view, dims)
        y = b.bin("mul", d, b.un("rsqrt", b.bin("add", var, b.const(float(a.get("eps", 1e-5))))))
        for attr, op in (("weight", "mul"), ("bias", "add")):
            value = a.get(attr)
            tensor = getattr(self.traced.gm.get_submodule(call.module), attr, None) if call.module else None
            if isinstance(value, fx.Node):
                source = self.value_source(value)
            elif value is None and tensor is not None:
                source = f"{_attr_path(call.module)}.{attr}"
            else:
                continue
            param = rb._input(f"{source}.view({groups}, -1{', 1' * len(spatial)})",
                              (groups, shape[1] // groups, *(1,) * len(spatial)), torch.float32)
            y = b.bin(op, y, param)
        self.open = None
        region = _finish_value(rb, y, view)
        self.regions.append(region)
        var_name = _var(node)
        region.line = len(self.lines)
        self.lines.append(f"{var_name} = _region_{region.index}({', '.join(i.source for i in region.inputs)})"
                          ".flatten(1, 2)")
        self.names[node] = var_name
        return True

    def _alias(self, node: fx.Node) -> bool:
        """getitem(max(x, dim), 0) / .values name the reduction's value itself."""
        if node.op != "call_function" or not node.args or not isinstance(node.args[0], fx.Node):
            return False
        src = node.args[0]
        call = recognize(src, self.modules) if src.op != "placeholder" else None
        if call is None or call.name not in ("max_dim", "min_dim"):
            return False
        if node.target is operator.getitem and node.args[1] == 0 or (
            node.target is getattr and node.args[1] == "values"
        ):
            self.alias[node] = src
            if src in self.names:
                self.names[node] = self.names[src]
            return True
        raise Unsupported("argmax/argmin indices are not generated")

    def _operand(self, value: Any) -> tuple[str, tuple[int, ...], torch.dtype | None]:
        """Source, traced shape and dtype of a GEMM operand (a graph value or a parameter path)."""
        if isinstance(value, str):  # "<module path>.weight": a parameter
            mod_path, attr = value.rsplit(".", 1)
            tensor = getattr(self.traced.gm.get_submodule(mod_path), attr)
            return f"{_attr_path(mod_path)}.{attr}", tuple(tensor.shape), tensor.dtype
        node = self.alias.get(value, value)
        return (self.value_source(node), self.traced.shapes.get(node.name, ()), self.traced.dtypes.get(node.name))

    def _gemm(self, node: fx.Node, mm: Any) -> bool:
        """A matrix product becomes a Gemm when its layout is one the GEMM generator handles (float32,
        b two-dimensional, or equal batch dims); otherwise it stays a plain kept library call."""
        self._close()  # the operands may be the open region's value
        try:
            a, a_shape, a_dt = self._operand(mm.a)
            b, b_shape, b_dt = self._operand(mm.b)
            bias = self._operand(mm.bias)[0] if mm.bias is not None else None
        except (Unsupported, AttributeError):
            return False
        if a_dt != torch.float32 or b_dt != torch.float32 or len(a_shape) < 2 or len(b_shape) < 2:
            return False
        if mm.kind == "matmul" and len(b_shape) > 2 and (len(a_shape) != len(b_shape)
                                                         or a_shape[:-2] != b_shape[:-2]):
            return False
        if mm.kind == "linear" and len(b_shape) != 2:
            return False
        if mm.kind == "matmul" and bias is None and len(a_shape) == 2 and len(b_shape) == 2 and b_shape[1] == 1:
            self._matvec(node, a, a_shape, b)
            return True
        chain = _sum_chain(node, self.traced) if len(a_shape) == 2 and len(b_shape) == 2 else None
        if chain is not None:
            self.reassociable = True
            if self.reassociate:
                self._sum_first(node, mm, chain, a, a_shape, b, b_shape, bias)
                return True
        var = _var(node)
        args = ", ".join([a, b] + ([bias] if bias else []))
        gemm = Gemm(len(self.gemms), mm.kind, a, b, bias, a_shape, b_shape,
                    self.traced.shapes.get(node.name, ()), var, len(self.lines))
        self.lines.append(f"{var} = _gemm_{gemm.index}({args})")
        self.names[node] = var
        self.gemms.append(gemm)
        return True

    def _sum_first(self, node: fx.Node, mm: Any, chain: tuple[list[fx.Node], fx.Node, list[tuple[str, float]]],
                   a: str, a_shape: tuple[int, ...], b: str, b_shape: tuple[int, ...], bias: str | None) -> None:
        """sum_n(c * (a @ b)_mn) = c * (a @ rowsum(b))_m: the product's columns are summed first, so the
        GEMM becomes a column sum of b and a matrix-vector product (and a bias becomes its sum)."""
        links, sum_node, scales = chain
        m, k = a_shape
        n = b_shape[0] if mm.kind == "linear" else b_shape[1]
        # b's sum over N, as a (1, K) row: w (N, K) of a linear sums over dim 0, b (K, N) over dim 1
        rb = self.open = _RegionBuilder(len(self.regions), self)
        w = rb._input(b, tuple(b_shape), torch.float32)
        dim = 0 if mm.kind == "linear" else 1
        wsum = rb.reduce_shape("sum", w, tuple(b_shape), (dim,))
        self.open = None
        col_var = f"t_{node.name}_colsum"
        self._emit_region(_finish_value(rb, wsum, (1, k) if dim == 0 else (k, 1)), col_var)
        terms = []
        if bias is not None:
            rb = self.open = _RegionBuilder(len(self.regions), self)
            bsum = rb.reduce_shape("sum", rb._input(bias, (n,), torch.float32), (n,), (0,))
            rb.dropped.add(bsum)
            self.open = None
            terms.append(f"t_{node.name}_biassum")
            self._emit_region(_finish_value(rb, bsum, ()), terms[-1])
        rb = self.open = _RegionBuilder(len(self.regions), self)
        keepdim = bool(_arg(sum_node, 2, "keepdim"))
        x = rb._input(a, (m, k), torch.float32)
        col = rb._input(f"{col_var}.view(1, -1)", (1, k), torch.float32)
        total = rb.reduce_shape("sum", rb.b.bin("mul", x, col), (m, k), (1,))
        if not keepdim:
            rb.dropped.add(total)
        for term in terms:
            total = rb.b.bin("add", total, rb._input(term, (), torch.float32))
        for op, value in scales:
            total = rb.b.bin(op, total, rb.b.const(value))
        rb.nodes[sum_node] = total
        rb.order.append(sum_node)
        self.dead |= {node, *links, sum_node}
        self.done_early.add(sum_node)

    def _matvec(self, node: fx.Node, a: str, a_shape: tuple[int, ...], b: str) -> None:
        """a (M, K) @ b (K, 1): each output is a row's dot product with b, a row reduction. A GEMM
        tile is at least 16 columns wide, so one output column used 1 of them: on the H200 `1/4`
        ran at 0.18x eager as a GEMM, with the product's K = 2^20 read once either way."""
        m, k = a_shape
        rb = self.open = _RegionBuilder(len(self.regions), self)
        x = rb._input(a, (m, k), torch.float32)
        col = rb._input(f"{b}.view(1, -1)", (1, k), torch.float32)
        rb.nodes[node] = rb.reduce_shape("sum", rb.b.bin("mul", x, col), (m, k), (1,))
        rb.order.append(node)

    def _emit_region(self, region: Region, var: str) -> None:
        self.regions.append(region)
        region.line = len(self.lines)
        self.lines.append(f"{var} = _region_{region.index}({', '.join(inp.source for inp in region.inputs)})")

    def _emit_kept(self, node: fx.Node) -> None:
        var = _var(node)
        args = _call_args(node.args, dict(node.kwargs), self.names)
        if node.op == "call_module":
            module = self.modules.get(str(node.target))
            if isinstance(module, _CHANNELS_LAST_CONVS) and len(node.args) == 1 and not node.kwargs \
                    and isinstance(node.args[0], fx.Node):
                self.convs.append(KeptConv(len(self.lines), _attr_path(str(node.target)), args, "", var,
                                           _reduction(tuple(module.weight.shape), module.transposed, module.groups)))
            self.lines.append(f"{var} = {_attr_path(str(node.target))}({args})")
        elif node.op == "call_function":
            if node.target in _CHANNELS_LAST_FUNCTIONS and isinstance(node.args[0], fx.Node) and not node.kwargs:
                rest = _call_args(node.args[1:], {}, self.names)
                transposed = node.target in TRANSPOSED_FUNCTIONS
                groups = node.args[6] if len(node.args) > 6 else 1  # both forms' seventh argument
                weight = self.traced.shapes[node.args[1].name]
                self.convs.append(KeptConv(len(self.lines), _function_name(node.target), _py(node.args[0], self.names),
                                           f", {rest}", var, _reduction(weight, transposed, groups)))
            self.lines.append(f"{var} = {_function_name(node.target)}({args})")
        else:
            recv = _py(node.args[0], self.names)
            rest = _call_args(node.args[1:], dict(node.kwargs), self.names)
            self.lines.append(f"{var} = {recv}.{node.target}({rest})")
        self.names[node] = var
        desc = _describe(node, self.traced)
        view = node.op == "call_method" or node.target in (operator.getitem, getattr, torch.flatten, torch.reshape)
        self.kept.append(("view:" if view else "") + desc)


def _scale_of(node: fx.Node, value: fx.Node) -> tuple[str, float] | None:
    """(mul | div, c) when `node` multiplies or divides `value` by a Python number c."""
    if node.op not in ("call_function", "call_method") or len(node.args) != 2 or node.kwargs:
        return None
    name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
    op = {"mul": "mul", "truediv": "div", "div": "div", "__mul__": "mul", "__truediv__": "div"}.get(str(name))
    x, c = node.args
    if op is None or x is not value or not isinstance(c, (int, float)) or isinstance(c, bool):
        return None
    return op, float(c)


def _sum_chain(node: fx.Node, traced: Traced) -> tuple[list[fx.Node], fx.Node, list[tuple[str, float]]] | None:
    """A 2-D product followed only by scalings and a sum over its columns: (the scalings' nodes, the sum
    node, the scalings), else None."""
    links, scales, value = [], [], node
    while len(value.users) == 1:
        user = next(iter(value.users))
        scale = _scale_of(user, value)
        if scale is None:
            break
        links.append(user)
        scales.append(scale)
        value = user
    if len(value.users) != 1:
        return None
    total = next(iter(value.users))
    is_sum = (total.op == "call_function" and total.target is torch.sum) or (
        total.op == "call_method" and total.target == "sum")
    if not is_sum or total.args[0] is not value or _arg(total, 3, "dtype") is not None:
        return None
    dim = _arg(total, 1, "dim")
    dim = dim[0] if isinstance(dim, (list, tuple)) and len(dim) == 1 else dim
    return (links, total, scales) if dim in (1, -1) else None


_SCAN_FNS = {torch.cumsum: "sum", torch.cumprod: "prod"}


def _arg(node: fx.Node, pos: int, name: str) -> Any:
    return node.args[pos] if len(node.args) > pos else node.kwargs.get(name)


def _scan_of(node: fx.Node) -> tuple[str, fx.Node, Any] | None:
    """(op, input, dim) of a cumsum / cumprod node without a dtype argument, else None."""
    if node.op == "call_function" and node.target in _SCAN_FNS:
        op = _SCAN_FNS[node.target]
    elif node.op == "call_method" and node.target in ("cumsum", "cumprod"):
        op = "sum" if node.target == "cumsum" else "prod"
    else:
        return None
    if _arg(node, 2, "dtype") is not None or not isinstance(node.args[0], fx.Node):
        return None
    return op, node.args[0], _arg(node, 1, "dim")


def _flip_dim(node: fx.Node) -> Any:
    if node.op == "call_method" and node.target == "flip" or node.op == "call_function" and node.target is torch.flip:
        dims = node.args[1:] if len(node.args) > 1 else (node.kwargs.get("dims"),)
        dims = dims[0] if len(dims) == 1 and isinstance(dims[0], (list, tuple)) else dims
        return dims[0] if len(dims) == 1 else None
    return None


def find_scans(traced: Traced) -> tuple[dict[fx.Node, tuple[Scan, fx.Node]], set[fx.Node]]:
    """Scans in the graph: {node computing it: (scan, its input)}, and nodes that only fed a
    scan pattern (skipped). Patterns: cumsum/cumprod(x, d); flip(cumsum(flip(x, d), d), d) (a reversed
    scan); cat([zeros, cumsum(x.narrow(d, 0, n - 1), d)], d) (an exclusive scan)."""
    scans: dict[fx.Node, tuple[Scan, fx.Node]] = {}
    dead: set[fx.Node] = set()

    def norm(node: fx.Node, dim: Any) -> int | None:
        shape = traced.shapes.get(node.name)
        if shape is None or not isinstance(dim, int):
            return None
        return dim + len(shape) if dim < 0 else dim

    for node in traced.gm.graph.nodes:
        found = _scan_of(node)
        if found is None:
            continue
        op, x, dim = found
        d = norm(x, dim)
        if d is None:
            continue
        users = list(node.users)
        inner_flip = _flip_dim(x)
        if inner_flip is not None and len(users) == 1 and norm(x, inner_flip) == d and len(x.users) == 1:
            outer = users[0]
            if _flip_dim(outer) is not None and norm(outer, _flip_dim(outer)) == d:
                scans[outer] = (Scan(op, d, reverse=True), x.args[0])
                dead |= {x, node}
                continue
        if op == "sum" and x.op == "call_method" and x.target == "narrow" and len(users) == 1 and len(x.users) == 1:
            cat = users[0]
            start = _arg(x, 2, "start")
            narrow_dim = norm(x.args[0], _arg(x, 1, "dim"))
            parts = cat.args[0] if cat.op == "call_function" and cat.target is torch.cat and cat.args else None
            cat_dim = norm(cat, _arg(cat, 1, "dim") if len(cat.args) > 1 else cat.kwargs.get("dim", 0))
            if (start == 0 and narrow_dim == d and cat_dim == d and isinstance(parts, (list, tuple))
                    and len(parts) == 2 and parts[1] is node and isinstance(parts[0], fx.Node)
                    and parts[0].op == "call_function" and parts[0].target in (torch.zeros_like, torch.zeros)):
                scans[cat] = (Scan("sum", d, exclusive=True), x.args[0])
                dead |= {node, x, parts[0]} | _feeders(parts[0]) | {a for a in x.all_input_nodes if a is not x.args[0]}
                dead |= {n for a in list(dead) for n in _feeders(a) if n.op != "placeholder"}
                continue
        scans[node] = (Scan(op, d), x)
    return scans, {n for n in dead if n.op not in ("placeholder", "get_attr")}


def _feeders(node: fx.Node) -> set[fx.Node]:
    """Nodes whose only use is (transitively) `node` (the shape bookkeeping of a pattern)."""
    out: set[fx.Node] = set()
    for a in node.all_input_nodes:
        if a.op not in ("placeholder", "get_attr") and len(a.users) == 1:
            out |= {a} | _feeders(a)
    return out


def _finish_region(rb: _RegionBuilder, out_node: fx.Node, traced: Traced) -> Region:
    out_shape = traced.shapes.get(out_node.name)
    if out_shape is None:
        raise Unsupported(f"{out_node.name} is not a tensor")
    return _finish_value(rb, rb.nodes[out_node], tuple(out_shape))


def _finish_value(rb: _RegionBuilder, out: int, out_shape: tuple[int, ...]) -> Region:
    """The region computing expression `out` (of shape out_shape): operand kinds and levels checked."""
    exprs = rb.b.exprs
    if rb.win is not None:
        return _finish_window(rb, out, tuple(out_shape))
    if rb.scan_spec is not None:
        if any(e.op in REDUCE for e in exprs):
            raise Unsupported("a scan and a reduction in one kernel")
        region = _finish_value_rows(rb, out, out_shape)
        region.scan = rb.scan_spec
        return region
    return _finish_value_rows(rb, out, out_shape)


def _finish_value_rows(rb: _RegionBuilder, out: int, out_shape: tuple[int, ...]) -> Region:
    exprs = rb.b.exprs
    if rb.dims is None:
        elem = tuple(out_shape)
        for inp in rb.inputs:
            if torch.broadcast_shapes(inp.shape, elem) != elem:
                raise Unsupported(f"operand {inp.source} broadcasts beyond the output shape")
        for inp in rb.inputs:
            inp.level = CONST if math.prod(inp.shape) == 1 else ELEM
            if inp.level == CONST:
                inp.kind = "scalar"
            elif _right(inp.shape, len(elem)) == elem:
                inp.kind = "full"
            else:
                inp.kind = "band1" if _right(inp.shape, len(elem))[-1] == elem[-1] and elem[-1] > 1 else "band0"
        levels = compute_levels(exprs, [i.level for i in rb.inputs])
        return Region(rb.index, list(exprs), rb.inputs, out, elem, None, True, tuple(out_shape), levels)
    elem, dims = rb.elem, rb.dims
    keep_shape = tuple(1 if d in dims else s for d, s in enumerate(elem))
    for inp in rb.inputs:
        shp = _right(inp.shape, len(elem)) if len(inp.shape) <= len(elem) else None
        if shp is None or torch.broadcast_shapes(shp, elem) != elem:
            raise Unsupported(f"operand {inp.source} does not broadcast to the reduced shape")
        if math.prod(shp) == 1:
            inp.level, inp.kind = CONST, "scalar"
        elif shp == elem:
            inp.level, inp.kind = ELEM, "full"
        elif all(shp[d] == 1 for d in dims):
            inp.level, inp.kind = ROW, "outfull"
        elif all((shp[d] == elem[d]) if d in dims else shp[d] == 1 for d in range(len(elem))):
            inp.level, inp.kind = ELEM, "rpos"
        elif rb.low.mixed_ok and _straddles(shp, elem, dims):
            inp.level, inp.kind = ELEM, "mixed"  # along the last kept and the first reduced dims (group norm)
        else:
            inp.level, inp.kind = ELEM, "full"  # materialised by the wrapper (expand + contiguous)
    levels = compute_levels(exprs, [i.level for i in rb.inputs])
    # a full reduction without keepdim is a 0-d value: it broadcasts like the keepdim form
    dropped = set(rb.dropped) if len(dims) < len(elem) else set()
    for i, e in enumerate(exprs):
        if e.op in REDUCE and levels[e.args[0]] != ELEM:
            raise Unsupported("reduction of an already reduced value")
        if e.op not in REDUCE and e.args:
            arg_dropped = [a for a in e.args if a in dropped]
            if arg_dropped and levels[i] == ELEM:
                raise Unsupported("a reduced value without keepdim is broadcast back over the row")
            if arg_dropped and any(levels[a] == ROW and a not in dropped for a in e.args):
                raise Unsupported("row values with and without keepdim are combined")
            if arg_dropped:
                dropped.add(i)
    args = [i for i, e in enumerate(exprs) if e.op in ARG_REDUCE]
    if args and (args != [out] or len(rb.b.exprs[out].args) != 1):
        raise Unsupported("argmax/argmin whose index is used by further arithmetic")
    if args and any(e.op in REDUCE and i != out for i, e in enumerate(exprs)):
        raise Unsupported("argmax/argmin beside other reductions in one kernel")
    level = levels[out]
    if level == ELEM:
        if tuple(out_shape) != elem:
            raise Unsupported("fused output shape differs from the reduced input")
        keepdim = True
    elif level == ROW:
        keepdim = out not in dropped and not (out in rb.dropped and len(dims) == len(elem))
        if len(dims) == len(elem) and tuple(out_shape) == ():  # a 0-d result of a full reduction
            keepdim = False
        want = keep_shape if keepdim else tuple(s for d, s in enumerate(elem) if d not in dims)
        if tuple(out_shape) != want:
            raise Unsupported(f"reduced output shape {tuple(out_shape)} is not {want}")
    else:
        raise Unsupported("a fused region that computes only constants")
    return Region(rb.index, list(exprs), rb.inputs, out, elem, dims, keepdim, tuple(out_shape), levels)


def _finish_window(rb: _RegionBuilder, out: int, out_shape: tuple[int, ...]) -> Region:
    """Operands of a pooling region: read at window positions (full: the input's shape) or at the
    pooled position (outfull: the output's shape); broadcast ones are expanded by the wrapper."""
    elem = rb.elem
    pooled = [e.args[0] for e in rb.b.exprs if e.op in REDUCE]
    before = {int(e.value) for i, e in enumerate(rb.b.exprs)
              if e.op == "load" and i in set(needed(rb.b.exprs, pooled))}  # operands read in the window
    for k, inp in enumerate(rb.inputs):
        shp = _right(inp.shape, len(elem)) if len(inp.shape) <= len(elem) else None
        if math.prod(inp.shape) == 1:
            inp.level, inp.kind = CONST, "scalar"
        elif k in before and shp is not None and torch.broadcast_shapes(shp, elem) == elem:
            inp.level, inp.kind = ELEM, "full"
        elif k not in before and len(inp.shape) <= len(out_shape) and torch.broadcast_shapes(
                _right(inp.shape, len(out_shape)), out_shape) == out_shape:
            inp.level, inp.kind = ROW, "outfull"
        else:
            raise Unsupported(f"operand {inp.source} broadcasts to neither the pooled input nor its output")
    levels = compute_levels(rb.b.exprs, [i.level for i in rb.inputs])
    for i, e in enumerate(rb.b.exprs):
        if e.op in REDUCE and levels[e.args[0]] != ELEM:
            raise Unsupported("pooling of an already pooled value")
    if levels[out] != ROW:
        raise Unsupported("a pooling region's output is not the pooled value")
    return Region(rb.index, list(rb.b.exprs), rb.inputs, out, elem, None, True, out_shape, levels, window=rb.win)


def _straddles(shp: tuple[int, ...], elem: tuple[int, ...], dims: tuple[int, ...]) -> bool:
    """The operand varies over one block of dims that ends in the kept ones and starts the reduced ones
    (trailing reduced rows only): it is read at (o % MK) * MV + r // MS."""
    if not dims or dims[-1] != len(elem) - 1 or dims != tuple(range(dims[0], len(elem))):
        return False
    varying = [d for d in range(len(elem)) if shp[d] != 1]
    return bool(varying) and varying == list(range(varying[0], varying[-1] + 1)) and \
        varying[0] < dims[0] <= varying[-1] and all(shp[d] == elem[d] for d in varying)


def _right(shape: tuple[int, ...], ndim: int) -> tuple[int, ...]:
    return (1,) * (ndim - len(shape)) + tuple(shape)


def _find_epilogues(plan: Plan) -> None:
    """A GEMM's epilogue: the elementwise region that reads its output (full, same shape) when
    nothing else does; a GEMM of ours computes that region in registers before its only store."""
    for g in plan.gemms:
        users = [i for i, line in enumerate(plan.lines) if i != g.line and re.search(rf"\b{g.out_var}\b", line)]
        if len(users) != 1:
            continue
        region = next((r for r in plan.regions if r.line == users[0]), None)
        if region is None or region.is_row or tuple(region.elem_shape) != tuple(g.out_shape):
            continue
        inputs = [inp for inp in region.inputs if inp.source == g.out_var]
        if len(inputs) == 1 and inputs[0].kind == "full" and tuple(inputs[0].shape) == tuple(g.out_shape):
            g.epilogue = region.index


def lower(traced: Traced, layouts: frozenset[str] = ALL_LAYOUTS, reassociate: bool = False) -> Plan:
    """The plan; ops needing a layout not in `layouts` stay library calls (a backend without that generator);
    `reassociate` sums a matrix product summed over its columns first (a plan variant, gemm.rewrite)."""
    plan = _Lowering(traced, layouts, reassociate).run()
    if not plan.regions and not plan.gemms:
        raise Unsupported("nothing to fuse: every operation is a library call kept in PyTorch")
    return plan
