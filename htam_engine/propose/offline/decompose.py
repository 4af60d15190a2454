"""Decompose canonical operations into the region IR's primitive expressions.

Each activation is written once here in terms of a few primitives (exp, erf,
tanh, sigmoid, max/min, where, ...); every backend then only has to print those.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Protocol

from htam_engine.propose.offline.ir import Builder, Window

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
GELU_TANH_C = math.sqrt(2.0 / math.pi)
FLOAT32_EPS = 1.1920928955078125e-07


class Unsupported(Exception):
    """The offline proposer cannot generate this operation; the message says why (one line)."""


class KeepInLibrary(Unsupported):
    """This call is left to PyTorch (the plan keeps it as a library op; its neighbours still fuse)."""


class Ctx(Protocol):
    b: Builder

    def val(self, arg: Any) -> int: ...  # tensor node or number -> expression id

    def num(self, arg: Any, what: str) -> float: ...  # a Python number argument

    def param(self, call_module: str | None, attr: str, arg: Any) -> int | None: ...  # weight/bias

    def reduce(self, kind: str, a: int, input_arg: Any, dims: Any, keepdim: bool) -> int: ...

    def reduce_trailing(self, kind: str, a: int, input_arg: Any, count: int) -> int: ...

    def drop_dims(self, i: int) -> None: ...  # the value's reduced dims are dropped (keepdim=False)

    def window(self, kind: str, a: int, input_arg: Any, window: Window) -> int: ...  # a pooled value

    def dim_size(self, arg: Any, dim: int) -> int: ...  # the run-time size of a tensor's dim, as a value

    def scan(self, spec: Any, a: int, input_arg: Any) -> int: ...  # a cumulative sum / product along a dim

    def ndim(self, arg: Any) -> int: ...  # a tensor operand's number of dims

    def channel(self, attr: str, arg: Any, ndim: int) -> int | None: ...  # a per-channel (dim 1) parameter


def _c(ctx: Ctx, v: float) -> int:
    return ctx.b.const(v)


def sigmoid(ctx: Ctx, x: int) -> int:
    return ctx.b.un("sigmoid", x)


def softplus(ctx: Ctx, x: int, beta: float = 1.0, threshold: float = 20.0) -> int:
    b = ctx.b
    bx = b.mul(x, _c(ctx, beta))
    soft = b.un("log1p", b.un("exp", bx))
    if beta != 1.0:
        soft = b.bin("div", soft, _c(ctx, beta))
    return b.where(b.bin("gt", bx, _c(ctx, threshold)), x, soft)


def _unary(fn: Callable[[Ctx, int, dict], int]) -> Callable[[Ctx, dict], int]:
    def run(ctx: Ctx, args: dict) -> int:
        return fn(ctx, ctx.val(args["input"]), args)

    return run


def _clampish(ctx: Ctx, x: int, lo: Any, hi: Any) -> int:
    b = ctx.b
    if lo is not None:
        x = b.bin("max", x, ctx.val(lo))
    if hi is not None:
        x = b.bin("min", x, ctx.val(hi))
    return x


def _pow(ctx: Ctx, args: dict) -> int:
    b = ctx.b
    e = args["exponent"]
    if isinstance(args["input"], (int, float)):
        return b.bin("pow", _c(ctx, float(args["input"])), ctx.val(e))
    x = ctx.val(args["input"])
    if not isinstance(e, (int, float)):
        return b.bin("pow", x, ctx.val(e))
    e = float(e)
    if e == 0.0:
        return b.add(b.mul(x, _c(ctx, 0.0)), _c(ctx, 1.0))
    if e == 0.5:
        return b.un("sqrt", x)
    if e == -0.5:
        return b.un("rsqrt", x)
    if e.is_integer() and abs(e) <= 4:
        n = int(abs(e))
        acc = x
        for _ in range(n - 1):
            acc = b.bin("mul", acc, x)
        return b.un("recip", acc) if e < 0 else acc
    return b.bin("pow", x, _c(ctx, e))


def _binary(op: str) -> Callable[[Ctx, dict], int]:
    def run(ctx: Ctx, args: dict) -> int:
        b = ctx.b
        x, y = ctx.val(args["input"]), ctx.val(args["other"])
        alpha = args.get("alpha", 1)
        if op in ("add", "sub", "rsub") and alpha != 1:
            y = b.bin("mul", y, _c(ctx, ctx.num(alpha, "alpha")))
        if op == "rsub":
            return b.bin("sub", y, x)
        if op == "div" and args.get("rounding_mode") is not None:
            raise Unsupported("division with rounding_mode")
        return b.bin(op, x, y)

    return run


def _identity(ctx: Ctx, args: dict) -> int:
    return ctx.val(args["input"])


def _dropout(ctx: Ctx, args: dict) -> int:
    if args.get("training") and float(args.get("p") or 0.0) > 0.0:
        # random numbers: left to PyTorch, which draws exactly what the reference draws
        raise KeepInLibrary("dropout in training mode draws random numbers")
    return ctx.val(args["input"])


def _reduction(kind: str) -> Callable[[Ctx, dict], int]:
    def run(ctx: Ctx, args: dict) -> int:
        if args.get("dtype") is not None:
            raise Unsupported(f"{kind} with a dtype argument")
        x = ctx.val(args["input"])
        return ctx.reduce(kind, x, args["input"], args.get("dim"), bool(args.get("keepdim")))

    return run


def _softmax(log: bool) -> Callable[[Ctx, dict], int]:
    def run(ctx: Ctx, args: dict) -> int:
        b = ctx.b
        if args.get("dim") is None:
            raise Unsupported("softmax without an explicit dim")
        if args.get("dtype") is not None:
            raise Unsupported("softmax with a dtype argument")
        x = ctx.val(args["input"])
        m = ctx.reduce("max", x, args["input"], args["dim"], True)
        shifted = b.bin("sub", x, m)
        e = b.un("exp", shifted)
        s = ctx.reduce("sum", e, args["input"], args["dim"], True)
        if log:
            return b.bin("sub", shifted, b.un("log", s))
        return b.bin("div", e, s)

    return run


def _logsumexp(ctx: Ctx, args: dict) -> int:
    b = ctx.b
    x = ctx.val(args["input"])
    keep = bool(args.get("keepdim"))
    m = ctx.reduce("max", x, args["input"], args["dim"], True)
    s = ctx.reduce("sum", b.un("exp", b.bin("sub", x, m)), args["input"], args["dim"], True)
    out = b.bin("add", m, b.un("log", s))
    if not keep:
        ctx.drop_dims(out)
    return out


def _layer_norm(ctx: Ctx, args: dict) -> int:
    b = ctx.b
    shape = args["normalized_shape"]
    count = len(shape) if isinstance(shape, (list, tuple)) else 1
    x = ctx.val(args["input"])
    mu = ctx.reduce_trailing("mean", x, args["input"], count)
    d = b.bin("sub", x, mu)
    var = ctx.reduce_trailing("mean", b.bin("mul", d, d), args["input"], count)
    eps = ctx.num(args.get("eps", 1e-5), "eps")
    y = b.bin("mul", d, b.un("rsqrt", b.bin("add", var, _c(ctx, eps))))
    w = ctx.param(None, "weight", args.get("weight"))
    if w is not None:
        y = b.bin("mul", y, w)
    bias = ctx.param(None, "bias", args.get("bias"))
    if bias is not None:
        y = b.bin("add", y, bias)
    return y


def _rms_norm(ctx: Ctx, args: dict) -> int:
    b = ctx.b
    shape = args["normalized_shape"]
    count = len(shape) if isinstance(shape, (list, tuple)) else 1
    x = ctx.val(args["input"])
    ms = ctx.reduce_trailing("mean", b.bin("mul", x, x), args["input"], count)
    eps = args.get("eps")
    eps = FLOAT32_EPS if eps is None else ctx.num(eps, "eps")
    y = b.bin("mul", x, b.un("rsqrt", b.bin("add", ms, _c(ctx, eps))))
    w = ctx.param(None, "weight", args.get("weight"))
    return b.bin("mul", y, w) if w is not None else y


def _standardize(ctx: Ctx, x: int, input_arg: Any, dims: tuple[int, ...], eps: float) -> int:
    """(x - mean) / sqrt(var + eps), biased variance over `dims` (a Welford pair in the schedule)."""
    b = ctx.b
    mu = ctx.reduce("mean", x, input_arg, dims, True)
    d = b.bin("sub", x, mu)
    var = ctx.reduce("mean", b.bin("mul", d, d), input_arg, dims, True)
    return b.bin("mul", d, b.un("rsqrt", b.bin("add", var, _c(ctx, eps))))


def _affine(ctx: Ctx, y: int, args: dict, nd: int) -> int:
    w = ctx.channel("weight", args.get("weight"), nd)
    if w is not None:
        y = ctx.b.bin("mul", y, w)
    bias = ctx.channel("bias", args.get("bias"), nd)
    return ctx.b.bin("add", y, bias) if bias is not None else y


def _batch_norm(ctx: Ctx, args: dict) -> int:
    """Batch statistics over every dim but the channels (training mode, as KernelBench runs its models),
    or the running statistics (eval mode) as per-channel constants."""
    b, x, nd = ctx.b, ctx.val(args["input"]), ctx.ndim(args["input"])
    eps = ctx.num(args.get("eps", 1e-5), "eps")
    mean = var = None
    if not args.get("training"):  # eval mode: the running statistics, when the module keeps them
        mean = ctx.channel("running_mean", args.get("running_mean"), nd)
        var = ctx.channel("running_var", args.get("running_var"), nd)
    if mean is None or var is None:
        y = _standardize(ctx, x, args["input"], (0, *range(2, nd)), eps)
    else:
        y = b.bin("mul", b.bin("sub", x, mean), b.un("rsqrt", b.bin("add", var, _c(ctx, eps))))
    return _affine(ctx, y, args, nd)


def _instance_norm(ctx: Ctx, args: dict) -> int:
    if args.get("use_input_stats") is False or (args.get("track_running_stats") and not args.get("training")):
        raise KeepInLibrary("instance norm with running statistics")
    x, nd = ctx.val(args["input"]), ctx.ndim(args["input"])
    y = _standardize(ctx, x, args["input"], tuple(range(2, nd)), ctx.num(args.get("eps", 1e-5), "eps"))
    return _affine(ctx, y, args, nd)


def _var(std: bool) -> Callable[[Ctx, dict], int]:
    def run(ctx: Ctx, args: dict) -> int:
        b = ctx.b
        x = ctx.val(args["input"])
        dim, keep = args.get("dim"), bool(args.get("keepdim"))
        mu = ctx.reduce("mean", x, args["input"], dim, True)
        d = b.bin("sub", x, mu)
        s = ctx.reduce("sum", b.bin("mul", d, d), args["input"], dim, keep)
        n = b.count()
        if args.get("unbiased", True):
            n = b.bin("sub", n, _c(ctx, 1.0))
        v = b.bin("div", s, n)
        return b.un("sqrt", v) if std else v

    return run


def _norm(ctx: Ctx, args: dict) -> int:
    b = ctx.b
    p = args.get("p", "fro")
    x = ctx.val(args["input"])
    dim, keep = args.get("dim"), bool(args.get("keepdim"))
    if p in ("fro", 2, 2.0):
        return b.un("sqrt", ctx.reduce("sum", b.bin("mul", x, x), args["input"], dim, keep))
    if p in (1, 1.0):
        return ctx.reduce("sum", b.un("abs", x), args["input"], dim, keep)
    raise Unsupported(f"norm with p={p!r}")


def _normalize(ctx: Ctx, args: dict) -> int:
    b = ctx.b
    p = args.get("p", 2.0)
    x = ctx.val(args["input"])
    if p in (2, 2.0):
        n = b.un("sqrt", ctx.reduce("sum", b.bin("mul", x, x), args["input"], args.get("dim", 1), True))
    elif p in (1, 1.0):
        n = ctx.reduce("sum", b.un("abs", x), args["input"], args.get("dim", 1), True)
    else:
        raise Unsupported(f"normalize with p={p!r}")
    eps = ctx.num(args.get("eps", 1e-12), "eps")
    return b.bin("div", x, b.bin("max", n, _c(ctx, eps)))


def _gelu(ctx: Ctx, x: int, a: dict) -> int:
    b = ctx.b
    half_x = b.bin("mul", x, _c(ctx, 0.5))
    if a.get("approximate", "none") == "tanh":
        x3 = b.bin("mul", b.bin("mul", x, x), x)
        inner = b.bin("mul", b.bin("add", x, b.bin("mul", x3, _c(ctx, 0.044715))), _c(ctx, GELU_TANH_C))
        return b.bin("mul", half_x, b.bin("add", b.un("tanh", inner), _c(ctx, 1.0)))
    if a.get("approximate", "none") != "none":
        raise Unsupported(f"gelu approximate={a.get('approximate')!r}")
    e = b.un("erf", b.bin("mul", x, _c(ctx, math.sqrt(0.5))))
    return b.bin("mul", half_x, b.bin("add", e, _c(ctx, 1.0)))


def _where_pos(ctx: Ctx, x: int, neg: int) -> int:
    b = ctx.b
    return b.where(b.bin("gt", x, _c(ctx, 0.0)), x, neg)


def _hardsigmoid(ctx: Ctx, x: int) -> int:
    b = ctx.b
    t = b.bin("add", b.bin("mul", x, _c(ctx, 1.0 / 6.0)), _c(ctx, 0.5))
    return b.bin("min", b.bin("max", t, _c(ctx, 0.0)), _c(ctx, 1.0))


def _tuple(v: Any, nd: int, what: str) -> tuple[int, ...]:
    if isinstance(v, int) and not isinstance(v, bool):
        return (v,) * nd
    if isinstance(v, (list, tuple)) and len(v) == nd and all(isinstance(x, int) for x in v):
        return tuple(v)
    raise KeepInLibrary(f"pooling {what} {v!r}")


def _pool(kind: str, nd: int) -> Callable[[Ctx, dict], int]:
    """max_pool / avg_pool over the last nd dims: a window reduction (avg divides by the per-window
    count, the `count` leaf of a window region)."""

    def run(ctx: Ctx, args: dict) -> int:
        if args.get("return_indices"):
            raise KeepInLibrary("max pooling that returns indices")
        kernel = _tuple(args["kernel_size"], nd, "kernel_size")
        stride = _tuple(args.get("stride") or kernel, nd, "stride")
        padding = _tuple(args.get("padding", 0), nd, "padding")
        dilation = _tuple(args.get("dilation", 1), nd, "dilation") if kind == "max" else (1,) * nd
        divisor = args.get("divisor_override")
        w = Window(kind, kernel, stride, padding, dilation, bool(args.get("ceil_mode")),
                   bool(args.get("count_include_pad", True)), int(divisor) if divisor else None)
        x = ctx.val(args["input"])
        if kind == "max":
            return ctx.window("max", x, args["input"], w)
        return ctx.b.bin("div", ctx.window("sum", x, args["input"], w), ctx.b.count())

    return run


def _adaptive_pool(kind: str, nd: int) -> Callable[[Ctx, dict], int]:
    """An adaptive pool to size 1 is a mean (max) over the last nd dims; other sizes stay in the library."""

    def run(ctx: Ctx, args: dict) -> int:
        if args.get("return_indices"):
            raise KeepInLibrary("adaptive pooling that returns indices")
        size = args["output_size"]
        sizes = size if isinstance(size, (list, tuple)) else (size,) * nd
        if any(s != 1 for s in sizes):
            raise KeepInLibrary(f"adaptive pooling to {size!r}")
        dims = tuple(range(-nd, 0))
        return ctx.reduce(kind, ctx.val(args["input"]), args["input"], dims, True)

    return run


UNARY_OPS: dict[str, Callable[[Ctx, int, dict], int]] = {
    "relu": lambda c, x, a: c.b.bin("max", x, _c(c, 0.0)),
    "relu6": lambda c, x, a: c.b.bin("min", c.b.bin("max", x, _c(c, 0.0)), _c(c, 6.0)),
    "leaky_relu": lambda c, x, a: _where_pos(c, x, c.b.bin("mul", x, _c(c, c.num(a["negative_slope"], "slope")))),
    "gelu": _gelu,
    "sigmoid": lambda c, x, a: sigmoid(c, x),
    "tanh": lambda c, x, a: c.b.un("tanh", x),
    "silu": lambda c, x, a: c.b.bin("mul", x, sigmoid(c, x)),
    "elu": lambda c, x, a: _where_pos(c, x, c.b.bin("mul", c.b.un("expm1", x), _c(c, c.num(a["alpha"], "alpha")))),
    "celu": lambda c, x, a: _where_pos(
        c, x, c.b.bin("mul", c.b.un("expm1", c.b.bin("div", x, _c(c, c.num(a["alpha"], "alpha")))),
                      _c(c, c.num(a["alpha"], "alpha")))),
    "selu": lambda c, x, a: c.b.bin(
        "mul", _where_pos(c, x, c.b.bin("mul", c.b.un("expm1", x), _c(c, SELU_ALPHA))), _c(c, SELU_SCALE)),
    "hardtanh": lambda c, x, a: _clampish(c, x, a["min_val"], a["max_val"]),
    "hardsigmoid": lambda c, x, a: _hardsigmoid(c, x),
    "hardswish": lambda c, x, a: c.b.bin("mul", x, _hardsigmoid(c, x)),
    "softplus": lambda c, x, a: softplus(c, x, c.num(a["beta"], "beta"), c.num(a["threshold"], "threshold")),
    "softsign": lambda c, x, a: c.b.bin("div", x, c.b.bin("add", c.b.un("abs", x), _c(c, 1.0))),
    "mish": lambda c, x, a: c.b.bin("mul", x, c.b.un("tanh", softplus(c, x))),
    "logsigmoid": lambda c, x, a: c.b.bin(
        "sub", c.b.bin("min", x, _c(c, 0.0)), c.b.un("log1p", c.b.un("exp", c.b.un("neg", c.b.un("abs", x))))),
    "tanhshrink": lambda c, x, a: c.b.bin("sub", x, c.b.un("tanh", x)),
    "clamp": lambda c, x, a: _clampish(c, x, a.get("min"), a.get("max")),
    "clamp_min": lambda c, x, a: _clampish(c, x, a["min"], None),
    "clamp_max": lambda c, x, a: _clampish(c, x, None, a["max"]),
    "square": lambda c, x, a: c.b.bin("mul", x, x),
    "reciprocal": lambda c, x, a: c.b.un("recip", x),
}
for _prim in ("abs", "exp", "log", "sqrt", "rsqrt", "neg", "log1p", "expm1", "erf"):
    UNARY_OPS[_prim] = (lambda p: (lambda c, x, a: c.b.un(p, x)))(_prim)

OPS: dict[str, Callable[[Ctx, dict], int]] = {name: _unary(fn) for name, fn in UNARY_OPS.items()}
OPS.update({
    "pow": _pow,
    "add": _binary("add"),
    "sub": _binary("sub"),
    "rsub": _binary("rsub"),
    "mul": _binary("mul"),
    "div": _binary("div"),
    "maximum": _binary("max"),
    "minimum": _binary("min"),
    "identity": _identity,
    "to_float32": _identity,
    "dropout": _dropout,
    "sum": _reduction("sum"),
    "mean": _reduction("mean"),
    "amax": _reduction("max"),
    "amin": _reduction("min"),
    "argmax": _reduction("argmax"),
    "argmin": _reduction("argmin"),
    "max_dim": _reduction("max"),
    "min_dim": _reduction("min"),
    "logsumexp": _logsumexp,
    "softmax": _softmax(log=False),
    "log_softmax": _softmax(log=True),
    "layer_norm": _layer_norm,
    "batch_norm": _batch_norm,
    "instance_norm": _instance_norm,
    "rms_norm": _rms_norm,
    "var": _var(std=False),
    "std": _var(std=True),
    "norm": _norm,
    "normalize": _normalize,
})

for _nd in (1, 2, 3):
    OPS[f"max_pool{_nd}d"] = _pool("max", _nd)
    OPS[f"avg_pool{_nd}d"] = _pool("avg", _nd)
    OPS[f"adaptive_avg_pool{_nd}d"] = _adaptive_pool("mean", _nd)
    OPS[f"adaptive_max_pool{_nd}d"] = _adaptive_pool("max", _nd)

def _reduce_loss(ctx: Ctx, value: int, input_arg: Any, reduction: Any, size_of: Any) -> int:
    if reduction == "none":
        return value
    if reduction in ("mean", "sum"):
        return ctx.reduce(reduction, value, input_arg, None, False)
    if reduction == "batchmean":  # the sum over everything divided by the batch size
        return ctx.b.bin("div", ctx.reduce("sum", value, input_arg, None, False), ctx.dim_size(size_of, 0))
    raise Unsupported(f"loss reduction {reduction!r}")


def _pointwise_loss(fn: Callable[[Ctx, int, int, dict], int]) -> Callable[[Ctx, dict], int]:
    def run(ctx: Ctx, args: dict) -> int:
        if args.get("size_average") is not None or args.get("reduce") is not None:
            raise Unsupported("loss with the deprecated size_average / reduce arguments")
        x, y = ctx.val(args["input"]), ctx.val(args["target"])
        # batchmean divides by the batch size, read from the target when the input is a fused value
        size_of = args["target"] if args.get("reduction") == "batchmean" else args["input"]
        return _reduce_loss(ctx, fn(ctx, x, y, args), args["input"], args.get("reduction", "mean"), size_of)

    return run


def _smooth_l1(ctx: Ctx, x: int, y: int, args: dict, huber: bool = False) -> int:
    b = ctx.b
    d = b.un("abs", b.bin("sub", x, y))
    t = ctx.num(args.get("delta" if huber else "beta", 1.0), "beta")
    if t == 0.0:
        return d
    square = b.bin("mul", b.bin("mul", d, d), _c(ctx, 0.5 if huber else 0.5 / t))
    linear = b.bin("sub", d, _c(ctx, 0.5 * t))
    if huber:
        linear = b.bin("mul", linear, _c(ctx, t))
    return b.where(b.bin("lt", d, _c(ctx, t)), square, linear)


def _kl_div(ctx: Ctx, x: int, y: int, args: dict) -> int:
    b = ctx.b
    if args.get("log_target"):
        return b.bin("mul", b.un("exp", y), b.bin("sub", y, x))
    # target * (log(target) - input), with 0 where the target is 0 (xlogy)
    xlogy = b.where(b.bin("gt", y, _c(ctx, 0.0)), b.bin("mul", y, b.un("log", y)), _c(ctx, 0.0))
    return b.bin("sub", xlogy, b.bin("mul", y, x))


OPS.update({
    "mse_loss": _pointwise_loss(lambda c, x, y, a: c.b.bin("mul", c.b.bin("sub", x, y), c.b.bin("sub", x, y))),
    "l1_loss": _pointwise_loss(lambda c, x, y, a: c.b.un("abs", c.b.bin("sub", x, y))),
    "smooth_l1_loss": _pointwise_loss(_smooth_l1),
    "huber_loss": _pointwise_loss(lambda c, x, y, a: _smooth_l1(c, x, y, a, huber=True)),
    "kl_div": _pointwise_loss(_kl_div),
})
def _group_norm_in_library(ctx: Ctx, args: dict) -> int:
    raise KeepInLibrary("group norm on a backend without the grouped layout")  # (lower._group_norm otherwise)


OPS["group_norm"] = _group_norm_in_library
OPS["triu"] = lambda ctx, args: ctx.b.tri("triu", ctx.val(args["input"]), ctx.num(args.get("diagonal", 0), "diagonal"))
OPS["tril"] = lambda ctx, args: ctx.b.tri("tril", ctx.val(args["input"]), ctx.num(args.get("diagonal", 0), "diagonal"))
OPS["scan"] = lambda ctx, args: ctx.scan(args["spec"], ctx.val(args["input"]), args["input"])
# per-row value, then a reduction over rows: two regions (lower._row_loss)
ROW_LOSSES = frozenset({"cross_entropy", "triplet_margin_loss"})

REDUCING = {"sum", "mean", "amax", "amin", "max_dim", "min_dim", "logsumexp", "softmax", "log_softmax",
            "layer_norm", "rms_norm", "var", "std", "norm", "normalize"}
