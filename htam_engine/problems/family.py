"""Operator family of a problem, read from its source (no execution).

The family steers memory retrieval and the offline proposer's templates, so it names what
dominates the work: a single elementwise/reduction/normalization/matmul/convolution/attention
operator, a main operator followed by a chain of cheaper ones (fused_chain), or a block of
several heavy layers (whole_model).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from htam_engine.families import Family

_ATTENTION = {"scaled_dot_product_attention", "multiheadattention", "multi_head_attention_forward"}
_CONV = {
    "conv1d", "conv2d", "conv3d", "convtranspose1d", "convtranspose2d", "convtranspose3d",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
}
_MATMUL = {"linear", "matmul", "mm", "bmm", "einsum", "addmm", "baddbmm", "addbmm", "bilinear", "tensordot", "gemm"}
_NORM = {
    "layernorm", "layer_norm", "batchnorm1d", "batchnorm2d", "batchnorm3d", "batch_norm",
    "groupnorm", "group_norm", "instancenorm1d", "instancenorm2d", "instancenorm3d", "instance_norm",
    "rmsnorm", "rms_norm", "localresponsenorm", "local_response_norm", "normalize",
    "softmax", "log_softmax", "logsoftmax", "softmin",
}
_REDUCE = {
    "sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "prod", "var", "std", "norm",
    "logsumexp", "cumsum", "cumprod", "cummax", "cummin", "all", "any", "count_nonzero", "nansum",
    "maxpool1d", "maxpool2d", "maxpool3d", "avgpool1d", "avgpool2d", "avgpool3d",
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "adaptiveavgpool1d", "adaptiveavgpool2d", "adaptiveavgpool3d", "adaptive_avg_pool2d",
    "adaptivemaxpool2d", "adaptive_max_pool2d", "cross_entropy", "crossentropyloss", "mse_loss", "mseloss",
    "l1_loss", "l1loss", "smooth_l1_loss", "smoothl1loss", "huber_loss", "huberloss", "kl_div", "kldivloss",
    "nll_loss", "nllloss", "triplet_margin_loss", "tripletmarginloss", "hinge_embedding_loss",
    "cosine_similarity", "cosine_embedding_loss", "margin_ranking_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "bceloss", "bcewithlogitsloss",
}
# activations and clamps: a chain of these after a main operator makes a fused chain
_ACTIVATION = {
    "relu", "relu6", "gelu", "sigmoid", "tanh", "silu", "swish", "mish", "softplus", "softsign", "elu",
    "selu", "celu", "leaky_relu", "leakyrelu", "hardtanh", "hardsigmoid", "hardswish", "hard_sigmoid",
    "hard_swish", "clamp", "clamp_min", "clamp_max", "clip", "dropout", "threshold", "prelu", "glu",
    "logsigmoid", "tanhshrink", "softshrink", "hardshrink", "gelu_new", "newgelu",
}
# plain arithmetic and math: part of normalizations and losses as often as of chains
_MATH = {
    "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "pow", "abs", "neg", "sin", "cos", "erf", "where",
    "add", "mul", "sub", "div", "maximum", "minimum", "sign", "square", "reciprocal", "exp2", "log2",
    "masked_fill", "floor", "ceil", "round", "fmod", "remainder", "lerp", "addcmul", "addcdiv",
}
_BLOCKS = {
    "lstm", "gru", "rnn", "lstmcell", "grucell", "rnncell", "transformer", "transformerencoderlayer",
    "transformerdecoderlayer", "transformerencoder", "transformerdecoder", "sequential", "modulelist",
    "moduledict", "embedding",
}


@dataclass
class _Ops:
    tokens: list[str] = field(default_factory=list)  # operator names, in source order
    binops: list[str] = field(default_factory=list)  # "matmul", "add", "sub", "mul", "div", "pow"
    keepdim: bool = False
    loops: bool = False
    module_classes: int = 0
    final: str | None = None  # the operator that produces Model.forward's result
    attn_names: bool = False  # Model's own names speak of attention (self.c_attn, att = q @ k...)


def _call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id.lower()
    if isinstance(func, ast.Attribute):
        # self.layer(x) names a submodule chosen by the author, not an operator
        if isinstance(func.value, ast.Name) and func.value.id == "self":
            return None
        return func.attr.lower()
    return None


_BINOP = {ast.MatMult: "matmul", ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow"}


def _final_op(forward: ast.FunctionDef) -> str | None:
    """Name of the outermost operator of forward's return value, following `x = ...; return x`."""
    returns = [n for n in forward.body if isinstance(n, ast.Return) and n.value is not None]
    if not returns:
        return None
    expr: ast.expr = returns[-1].value
    assigned = {}
    for stmt in forward.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            assigned[stmt.targets[0].id] = stmt.value
    for _ in range(len(assigned) + 1):
        if isinstance(expr, ast.Name) and expr.id in assigned:
            expr = assigned.pop(expr.id)
        else:
            break
    if isinstance(expr, ast.Call):
        return _call_name(expr.func)
    if isinstance(expr, ast.BinOp):
        return _BINOP.get(type(expr.op))
    return None


def _collect(tree: ast.Module) -> _Ops:
    ops = _Ops()
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        is_module = any(
            (isinstance(b, ast.Attribute) and b.attr == "Module") or (isinstance(b, ast.Name) and b.id == "Module")
            for b in cls.bases
        )
        if not is_module:
            continue
        ops.module_classes += 1
        if cls.name == "Model":
            forward = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
            ops.final = _final_op(forward) if forward else None
            ops.attn_names = any(
                "attn" in ident.lower() or "attention" in ident.lower()
                for node in ast.walk(cls)
                for ident in ([node.id] if isinstance(node, ast.Name) else [node.attr] if isinstance(node, ast.Attribute) else [])
            )
        for node in ast.walk(cls):
            if isinstance(node, ast.Call):
                name = _call_name(node.func)
                if name:
                    ops.tokens.append(name)
                if any(k.arg == "keepdim" and isinstance(k.value, ast.Constant) and k.value.value for k in node.keywords):
                    ops.keepdim = True
            elif isinstance(node, ast.BinOp) and type(node.op) in _BINOP:
                ops.binops.append(_BINOP[type(node.op)])
            elif isinstance(node, ast.AugAssign) and type(node.op) in _BINOP:
                ops.binops.append(_BINOP[type(node.op)])
            elif isinstance(node, (ast.For, ast.While, ast.ListComp, ast.GeneratorExp)):
                ops.loops = True
    return ops


def classify_family(source: str, level: int | None = None) -> Family:
    """The operator family of a KernelBench-format source (Family.OTHER when it cannot tell)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return Family.OTHER
    ops = _collect(tree)
    tokens = set(ops.tokens)
    n_conv = sum(t in _CONV for t in ops.tokens)
    n_mm = sum(t in _MATMUL for t in ops.tokens) + ops.binops.count("matmul")
    n_bmm = sum(t in {"matmul", "bmm", "einsum"} for t in ops.tokens) + ops.binops.count("matmul")
    blocks = bool(tokens & _BLOCKS) or ops.module_classes > 2 or (ops.loops and n_conv + n_mm > 1)
    softmax = bool(tokens & {"softmax", "log_softmax"})

    attention = bool(tokens & _ATTENTION) or ((softmax or ops.attn_names) and n_bmm >= 2)
    if attention and not (blocks or n_conv):
        return Family.ATTENTION
    if blocks or n_conv + n_mm >= 3 or (level is not None and level >= 3 and n_conv + n_mm >= 2):
        return Family.WHOLE_MODEL
    if attention:
        return Family.ATTENTION

    activations = bool(tokens & _ACTIVATION)
    math = bool(tokens & _MATH) or any(b != "matmul" for b in ops.binops)
    has_norm = bool(tokens & _NORM)
    has_reduce = bool(tokens & _REDUCE)
    if n_conv or n_mm:
        extra = activations or math or has_norm or has_reduce or (n_conv and n_mm)
        if extra:
            return Family.FUSED_CHAIN
        return Family.CONVOLUTION if n_conv else Family.MATMUL
    # a reduction whose result rescales the input (x / ||x||, x / mean(x**2)) normalizes it
    normalizes = (
        has_reduce
        and (ops.keepdim or "norm" in tokens or "rsqrt" in tokens)
        and bool({"div", "sub", "mul"} & set(ops.binops))
    )
    if has_norm or normalizes:
        return Family.FUSED_CHAIN if activations else Family.NORMALIZATION
    if has_reduce:
        # a loss reduces last (elementwise work before it is part of the loss); an
        # activation applied after the reduction makes a chain
        if activations and ops.final not in _REDUCE:
            return Family.FUSED_CHAIN
        return Family.REDUCTION
    if activations or math:
        return Family.ELEMENTWISE
    return Family.OTHER
