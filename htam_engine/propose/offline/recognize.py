"""Recognise torch.fx nodes as operations the offline proposer can fuse or keeps in PyTorch.

`recognize(node, modules)` names a node's operation canonically ("gelu", "add",
"softmax", ...) with its arguments bound by name, whatever spelling the model used
(torch.relu, F.relu, x.relu(), nn.ReLU(), operator.mul, torch.mul, x.mul(...)).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

_REQ = object()  # marks a required argument in a signature


@dataclass(slots=True)
class OpCall:
    name: str  # canonical operation name
    args: dict[str, Any] = field(default_factory=dict)  # bound arguments (fx Nodes, numbers, tuples)
    module: str | None = None  # submodule path for call_module nodes (parameters live there)


# Canonical signatures: (name, default) pairs after the input tensor.
SIGNATURES: dict[str, tuple[tuple[str, Any], ...]] = {
    "relu": (),
    "relu6": (),
    "leaky_relu": (("negative_slope", 0.01),),
    "gelu": (("approximate", "none"),),
    "sigmoid": (),
    "tanh": (),
    "silu": (),
    "elu": (("alpha", 1.0),),
    "selu": (),
    "celu": (("alpha", 1.0),),
    "hardtanh": (("min_val", -1.0), ("max_val", 1.0)),
    "hardsigmoid": (),
    "hardswish": (),
    "softplus": (("beta", 1.0), ("threshold", 20.0)),
    "softsign": (),
    "mish": (),
    "logsigmoid": (),
    "tanhshrink": (),
    "clamp": (("min", None), ("max", None)),
    "clamp_min": (("min", _REQ),),
    "clamp_max": (("max", _REQ),),
    "abs": (),
    "exp": (),
    "log": (),
    "sqrt": (),
    "rsqrt": (),
    "neg": (),
    "square": (),
    "reciprocal": (),
    "log1p": (),
    "expm1": (),
    "erf": (),
    "pow": (("exponent", _REQ),),
    "add": (("other", _REQ), ("alpha", 1)),
    "sub": (("other", _REQ), ("alpha", 1)),
    "rsub": (("other", _REQ), ("alpha", 1)),
    "mul": (("other", _REQ),),
    "div": (("other", _REQ), ("rounding_mode", None)),
    "maximum": (("other", _REQ),),
    "minimum": (("other", _REQ),),
    "identity": (),
    "dropout": (("p", 0.5), ("training", True), ("inplace", False)),
    "sum": (("dim", None), ("keepdim", False), ("dtype", None)),
    "mean": (("dim", None), ("keepdim", False), ("dtype", None)),
    "amax": (("dim", ()), ("keepdim", False)),
    "amin": (("dim", ()), ("keepdim", False)),
    "max_dim": (("dim", _REQ), ("keepdim", False)),
    "argmax": (("dim", None), ("keepdim", False)),
    "argmin": (("dim", None), ("keepdim", False)),
    "min_dim": (("dim", _REQ), ("keepdim", False)),
    "logsumexp": (("dim", _REQ), ("keepdim", False)),
    "softmax": (("dim", None), ("_stacklevel", 3), ("dtype", None)),
    "log_softmax": (("dim", None), ("_stacklevel", 3), ("dtype", None)),
    "layer_norm": (("normalized_shape", _REQ), ("weight", None), ("bias", None), ("eps", 1e-5)),
    "rms_norm": (("normalized_shape", _REQ), ("weight", None), ("eps", None)),
    "triu": (("diagonal", 0),),
    "tril": (("diagonal", 0),),
    "group_norm": (("num_groups", _REQ), ("weight", None), ("bias", None), ("eps", 1e-5)),
    "batch_norm": (("running_mean", _REQ), ("running_var", _REQ), ("weight", None), ("bias", None),
                   ("training", False), ("momentum", 0.1), ("eps", 1e-5)),
    "instance_norm": (("running_mean", None), ("running_var", None), ("weight", None), ("bias", None),
                      ("use_input_stats", True), ("momentum", 0.1), ("eps", 1e-5)),
    "var": (("dim", None), ("unbiased", True), ("keepdim", False)),
    "std": (("dim", None), ("unbiased", True), ("keepdim", False)),
    "norm": (("p", "fro"), ("dim", None), ("keepdim", False)),
    "normalize": (("p", 2.0), ("dim", 1), ("eps", 1e-12)),
    "max_pool": (("kernel_size", _REQ), ("stride", None), ("padding", 0), ("dilation", 1), ("ceil_mode", False),
                 ("return_indices", False)),
    "avg_pool": (("kernel_size", _REQ), ("stride", None), ("padding", 0), ("ceil_mode", False),
                 ("count_include_pad", True), ("divisor_override", None)),
    "mse_loss": (("target", _REQ), ("size_average", None), ("reduce", None), ("reduction", "mean")),
    "l1_loss": (("target", _REQ), ("size_average", None), ("reduce", None), ("reduction", "mean")),
    "smooth_l1_loss": (("target", _REQ), ("size_average", None), ("reduce", None), ("reduction", "mean"),
                       ("beta", 1.0)),
    "huber_loss": (("target", _REQ), ("reduction", "mean"), ("delta", 1.0)),
    "kl_div": (("target", _REQ), ("size_average", None), ("reduce", None), ("reduction", "mean"),
               ("log_target", False)),
    "cross_entropy": (("target", _REQ), ("weight", None), ("size_average", None), ("ignore_index", -100),
                      ("reduce", None), ("reduction", "mean"), ("label_smoothing", 0.0)),
    "triplet_margin_loss": (("positive", _REQ), ("negative", _REQ), ("margin", 1.0), ("p", 2.0), ("eps", 1e-6),
                            ("swap", False), ("size_average", None), ("reduce", None), ("reduction", "mean")),
    "adaptive_avg_pool": (("output_size", _REQ),),
    "adaptive_max_pool": (("output_size", _REQ), ("return_indices", False)),
}
# pooling ops are recognised per dimensionality: the canonical name carries it ("max_pool2d")
for _nd in (1, 2, 3):
    for _base in ("max_pool", "avg_pool", "adaptive_avg_pool", "adaptive_max_pool"):
        SIGNATURES[f"{_base}{_nd}d"] = SIGNATURES[_base]

_FUNCTIONS: dict[Any, str] = {}


def _register(name: str, *fns: Any) -> None:
    for fn in fns:
        if fn is not None:
            _FUNCTIONS[fn] = name


_g = getattr
_register("relu", torch.relu, F.relu, _g(torch, "relu_", None), _g(F, "relu_", None))
_register("relu6", F.relu6)
_register("leaky_relu", F.leaky_relu)
_register("gelu", F.gelu)
_register("sigmoid", torch.sigmoid, F.sigmoid)
_register("tanh", torch.tanh, F.tanh)
_register("silu", F.silu)
_register("elu", F.elu)
_register("selu", F.selu, torch.selu)
_register("celu", F.celu)
_register("hardtanh", F.hardtanh)
_register("hardsigmoid", F.hardsigmoid)
_register("hardswish", F.hardswish)
_register("softplus", F.softplus)
_register("softsign", F.softsign)
_register("mish", F.mish)
_register("logsigmoid", F.logsigmoid)
_register("tanhshrink", F.tanhshrink)
_register("clamp", torch.clamp, torch.clip)
_register("clamp_min", torch.clamp_min)
_register("clamp_max", torch.clamp_max)
_register("abs", torch.abs, operator.abs)
_register("exp", torch.exp)
_register("log", torch.log)
_register("sqrt", torch.sqrt)
_register("rsqrt", torch.rsqrt)
_register("neg", torch.neg, operator.neg)
_register("square", torch.square)
_register("reciprocal", torch.reciprocal)
_register("log1p", torch.log1p)
_register("expm1", torch.expm1)
_register("erf", torch.erf, torch.special.erf)
_register("pow", torch.pow, operator.pow)
_register("add", torch.add, operator.add, operator.iadd)
_register("sub", torch.sub, torch.subtract, operator.sub, operator.isub)
_register("rsub", torch.rsub)
_register("mul", torch.mul, torch.multiply, operator.mul, operator.imul)
_register("div", torch.div, torch.divide, torch.true_divide, operator.truediv, operator.itruediv)
_register("maximum", torch.maximum, torch.fmax)
_register("minimum", torch.minimum, torch.fmin)
_register("dropout", F.dropout)
_register("identity", torch.clone)
_register("sum", torch.sum)
_register("mean", torch.mean)
_register("amax", torch.amax)
_register("amin", torch.amin)
_register("argmax", torch.argmax)
_register("argmin", torch.argmin)
_register("logsumexp", torch.logsumexp)
_register("softmax", torch.softmax, F.softmax)
_register("log_softmax", torch.log_softmax, F.log_softmax)
_register("layer_norm", F.layer_norm)
_register("batch_norm", F.batch_norm)
_register("group_norm", F.group_norm)
_register("triu", torch.triu)
_register("tril", torch.tril)
_register("instance_norm", F.instance_norm)
_register("rms_norm", _g(F, "rms_norm", None))
_register("var", torch.var)
_register("std", torch.std)
_register("norm", torch.norm)
_register("normalize", F.normalize)
for _loss in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "cross_entropy", "triplet_margin_loss"):
    _register(_loss, getattr(F, _loss))
for _nd in (1, 2, 3):
    _register(f"max_pool{_nd}d", getattr(F, f"max_pool{_nd}d"))
    _register(f"avg_pool{_nd}d", getattr(F, f"avg_pool{_nd}d"))
    _register(f"adaptive_avg_pool{_nd}d", getattr(F, f"adaptive_avg_pool{_nd}d"))
    _register(f"adaptive_max_pool{_nd}d", getattr(F, f"adaptive_max_pool{_nd}d"))

_METHODS: dict[str, str] = {
    name: name
    for name in (
        "relu", "sigmoid", "tanh", "abs", "exp", "log", "sqrt", "rsqrt", "neg", "square", "reciprocal",
        "log1p", "expm1", "erf", "pow", "add", "sub", "mul", "div", "maximum", "minimum", "clamp",
        "clamp_min", "clamp_max", "sum", "mean", "amax", "amin", "logsumexp", "softmax", "log_softmax",
        "var", "std", "norm", "argmax", "argmin", "triu", "tril",
    )
}
_METHODS.update({
    "relu_": "relu", "sigmoid_": "sigmoid", "tanh_": "tanh", "add_": "add", "sub_": "sub", "mul_": "mul",
    "div_": "div", "clamp_": "clamp", "clip": "clamp", "exp_": "exp", "abs_": "abs", "negative": "neg",
    "multiply": "mul", "subtract": "sub", "divide": "div", "true_divide": "div", "pow_": "pow",
    "contiguous": "identity", "float": "identity", "clone": "identity", "detach": "identity",
})

# Modules whose forward is one canonical operation: (name, attributes -> argument names).
_MODULES: dict[type, tuple[str, dict[str, str]]] = {
    nn.ReLU: ("relu", {}),
    nn.ReLU6: ("relu6", {}),
    nn.LeakyReLU: ("leaky_relu", {"negative_slope": "negative_slope"}),
    nn.GELU: ("gelu", {"approximate": "approximate"}),
    nn.Sigmoid: ("sigmoid", {}),
    nn.Tanh: ("tanh", {}),
    nn.SiLU: ("silu", {}),
    nn.ELU: ("elu", {"alpha": "alpha"}),
    nn.SELU: ("selu", {}),
    nn.CELU: ("celu", {"alpha": "alpha"}),
    nn.Hardtanh: ("hardtanh", {"min_val": "min_val", "max_val": "max_val"}),
    nn.Hardsigmoid: ("hardsigmoid", {}),
    nn.Hardswish: ("hardswish", {}),
    nn.Softplus: ("softplus", {"beta": "beta", "threshold": "threshold"}),
    nn.Softsign: ("softsign", {}),
    nn.Mish: ("mish", {}),
    nn.LogSigmoid: ("logsigmoid", {}),
    nn.Tanhshrink: ("tanhshrink", {}),
    nn.Identity: ("identity", {}),
    nn.Softmax: ("softmax", {"dim": "dim"}),
    nn.LogSoftmax: ("log_softmax", {"dim": "dim"}),
    nn.LayerNorm: ("layer_norm", {"normalized_shape": "normalized_shape", "eps": "eps"}),
    nn.Dropout: ("dropout", {"p": "p", "training": "training"}),
}
_MODULES.update({
    nn.MSELoss: ("mse_loss", {"reduction": "reduction"}),
    nn.L1Loss: ("l1_loss", {"reduction": "reduction"}),
    nn.SmoothL1Loss: ("smooth_l1_loss", {"reduction": "reduction", "beta": "beta"}),
    nn.HuberLoss: ("huber_loss", {"reduction": "reduction", "delta": "delta"}),
    nn.KLDivLoss: ("kl_div", {"reduction": "reduction", "log_target": "log_target"}),
    nn.CrossEntropyLoss: ("cross_entropy", {"weight": "weight", "ignore_index": "ignore_index",
                                            "reduction": "reduction", "label_smoothing": "label_smoothing"}),
    nn.TripletMarginLoss: ("triplet_margin_loss", {"margin": "margin", "p": "p", "eps": "eps", "swap": "swap",
                                                   "reduction": "reduction"}),
})
_MODULES[nn.GroupNorm] = ("group_norm", {"num_groups": "num_groups", "eps": "eps"})
for _nd in (1, 2, 3):
    # running statistics are read from the module when the call uses them (eval mode)
    _MODULES[getattr(nn, f"BatchNorm{_nd}d")] = ("batch_norm", {"eps": "eps", "training": "training"})
    _MODULES[getattr(nn, f"InstanceNorm{_nd}d")] = ("instance_norm", {
        "eps": "eps", "training": "training", "track_running_stats": "track_running_stats"})
_POOL_ATTRS = {"kernel_size": "kernel_size", "stride": "stride", "padding": "padding", "ceil_mode": "ceil_mode"}
for _nd in (1, 2, 3):
    _MODULES[getattr(nn, f"MaxPool{_nd}d")] = (f"max_pool{_nd}d", {
        **_POOL_ATTRS, "dilation": "dilation", "return_indices": "return_indices"})
    _MODULES[getattr(nn, f"AvgPool{_nd}d")] = (f"avg_pool{_nd}d", {
        **_POOL_ATTRS, "count_include_pad": "count_include_pad", "divisor_override": "divisor_override"})
    _MODULES[getattr(nn, f"AdaptiveAvgPool{_nd}d")] = (f"adaptive_avg_pool{_nd}d", {"output_size": "output_size"})
    _MODULES[getattr(nn, f"AdaptiveMaxPool{_nd}d")] = (f"adaptive_max_pool{_nd}d", {
        "output_size": "output_size", "return_indices": "return_indices"})
if hasattr(nn, "RMSNorm"):
    _MODULES[nn.RMSNorm] = ("rms_norm", {"normalized_shape": "normalized_shape", "eps": "eps"})

# Operations kept in PyTorch (library kernels); the fused tail runs after them.
KEPT_MODULES: tuple[type, ...] = (
    nn.Linear, nn.Bilinear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d,
    nn.ConvTranspose3d, nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d, nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d,
    nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d, nn.AdaptiveMaxPool2d,
    nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.GroupNorm, nn.InstanceNorm1d, nn.InstanceNorm2d,
    nn.InstanceNorm3d, nn.Embedding, nn.Flatten, nn.Unflatten,
)
KEPT_FUNCTIONS: set[Any] = {
    torch.matmul, torch.mm, torch.bmm, torch.addmm, torch.baddbmm, torch.einsum, F.linear, F.bilinear,
    F.conv1d, F.conv2d, F.conv3d, F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d,
    F.max_pool1d, F.max_pool2d, F.max_pool3d, F.avg_pool1d, F.avg_pool2d, F.avg_pool3d,
    F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d, F.batch_norm, F.group_norm,
    F.instance_norm, F.embedding, operator.matmul, torch.flatten, torch.reshape, torch.transpose,
    torch.permute, torch.squeeze, torch.unsqueeze, torch.cat, torch.stack, operator.getitem, getattr,
    torch.tensor, torch.full, torch.ones, torch.zeros,
}
KEPT_METHODS: set[str] = {
    "view", "reshape", "flatten", "permute", "transpose", "unsqueeze", "squeeze", "size", "dim",
    "matmul", "bmm", "mm", "t", "expand", "expand_as", "view_as", "reshape_as", "unflatten",
}


def _bind(name: str, args: tuple, kwargs: dict) -> dict[str, Any] | None:
    sig = SIGNATURES[name]
    if not args:
        return None
    bound: dict[str, Any] = {"input": args[0]}
    rest = list(args[1:])
    if len(rest) > len(sig):
        return None
    for (pname, default), value in zip(sig, rest + [_REQ] * (len(sig) - len(rest))):
        bound[pname] = value if value is not _REQ else kwargs.get(pname, default)
    for key, value in kwargs.items():
        if key == "input":
            bound["input"] = value
        elif key not in bound and (key in ("out", "inplace") or value is None):
            continue  # absent / default-valued extras (fx spells out out=None, dtype=None)
        elif key not in bound:
            return None
        else:
            bound[key] = value
    if any(v is _REQ for v in bound.values()):
        return None
    return bound


def _minmax_call(kind: str, args: tuple, kwargs: dict) -> OpCall | None:
    """torch.max / torch.min: elementwise with a tensor, a reduction with a dim, or a full reduction."""
    other = args[1] if len(args) > 1 else kwargs.get("other", kwargs.get("dim"))
    if other is None:
        return OpCall("a" + kind, {"input": args[0], "dim": (), "keepdim": False})
    if isinstance(other, torch.fx.Node):
        return OpCall(kind + "imum", {"input": args[0], "other": other})
    bound = _bind(kind + "_dim", args, kwargs)
    return OpCall(kind + "_dim", bound) if bound else None


def recognize(node: torch.fx.Node, modules: dict[str, nn.Module]) -> OpCall | None:
    """Canonical operation of a fusable node, or None (kept in PyTorch or unsupported)."""
    if node.op == "call_module":
        mod = modules.get(str(node.target))
        if mod is None:
            return None
        entry = _MODULES.get(type(mod))
        if entry is None:
            return None
        name, attrs = entry
        if not node.args:
            return None
        bound: dict[str, Any] = {"input": node.args[0]}
        for (pname, _), value in zip(SIGNATURES.get(name, ()), node.args[1:]):
            bound[pname] = value  # further tensors of the call (a loss's target)
        for attr, pname in attrs.items():
            bound[pname] = getattr(mod, attr, None)  # (AvgPool1d has no divisor_override)
        return OpCall(name, bound, module=str(node.target))
    if node.op == "call_function":
        fn = node.target
        if fn in (torch.max, torch.min):
            return _minmax_call("max" if fn is torch.max else "min", node.args, dict(node.kwargs))
        name = _FUNCTIONS.get(fn)
    elif node.op == "call_method":
        if node.target in ("max", "min"):
            return _minmax_call(str(node.target), node.args, dict(node.kwargs))
        name = _METHODS.get(str(node.target))
        if name == "identity" and node.target == "float":
            return OpCall("to_float32", {"input": node.args[0]})
    else:
        return None
    if name is None:
        return None
    bound = _bind(name, node.args, dict(node.kwargs))
    return OpCall(name, bound) if bound is not None else None


def is_kept(node: torch.fx.Node, modules: dict[str, nn.Module]) -> bool:
    """A node PyTorch keeps computing (library op or a view/shape query)."""
    if node.op == "call_module":
        return isinstance(modules.get(str(node.target)), KEPT_MODULES)
    if node.op == "call_function":
        return node.target in KEPT_FUNCTIONS
    if node.op == "call_method":
        return str(node.target) in KEPT_METHODS
    return False


@dataclass(slots=True)
class MatmulCall:
    """A matrix product node: a @ b (matmul) or a @ w.T + bias (linear). Operands are fx nodes,
    or "<module path>.<attr>" strings for a module's parameters."""

    kind: str  # "matmul" | "linear"
    a: Any
    b: Any
    bias: Any = None


_MATMULS = {torch.matmul, torch.mm, torch.bmm, operator.matmul}


def _einsum_as_matmul(equation: Any) -> bool:
    """"...c,cd->...d": a product over the last index of the first operand with a 2-D second one."""
    if not isinstance(equation, str) or "->" not in equation:
        return False
    lhs, out = equation.replace(" ", "").split("->")
    ops = lhs.split(",")
    if len(ops) != 2 or len(ops[1]) != 2 or "." in equation:
        return False
    x, (c, d) = ops[0], ops[1]
    return bool(x) and x[-1] == c and out == x[:-1] + d and len(set(x + d)) == len(x) + 1


def matmul_call(node: torch.fx.Node, modules: dict[str, nn.Module]) -> MatmulCall | None:
    """The node's matrix product, or None when it is none (or one the GEMM generator leaves alone)."""
    if node.op == "call_module":
        mod = modules.get(str(node.target))
        if type(mod) is nn.Linear and node.args:
            bias = f"{node.target}.bias" if mod.bias is not None else None
            return MatmulCall("linear", node.args[0], f"{node.target}.weight", bias)
        return None
    args, kwargs = node.args, dict(node.kwargs)
    if node.op == "call_function":
        if node.target in _MATMULS and len(args) == 2 and not kwargs:
            return MatmulCall("matmul", args[0], args[1])
        if node.target is F.linear and len(args) >= 2:
            bias = args[2] if len(args) > 2 else kwargs.get("bias")
            return MatmulCall("linear", args[0], args[1], bias)
        if node.target is torch.einsum and len(args) == 3 and _einsum_as_matmul(args[0]):
            return MatmulCall("matmul", args[1], args[2])
        return None
    if node.op == "call_method" and node.target in ("matmul", "mm", "bmm") and len(args) == 2 and not kwargs:
        return MatmulCall("matmul", args[0], args[1])
    return None
