"""Trace a problem's Model into a torch.fx graph with shapes, without allocating its tensors.

The model is built and its inputs drawn under the meta device, so a KernelBench
problem with gigabyte-sized defaults traces in milliseconds.
"""

from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx
import torch.nn as nn
from torch.fx.passes.shape_prop import ShapeProp

from htam_engine.problems import instantiate
from htam_engine.problems.model import Problem
from htam_engine.propose.offline.conv_bias import split_conv_bias
from htam_engine.propose.offline.decompose import Unsupported


@dataclass
class Traced:
    gm: fx.GraphModule
    model: nn.Module  # meta-device instance (for submodule types and attributes)
    shapes: dict[str, tuple[int, ...]]  # node name -> output shape (tensor outputs only)
    dtypes: dict[str, torch.dtype]
    init_args: list[Any]
    numbers: set[str] = field(default_factory=set)  # forward parameters get_inputs passes as Python numbers
    split_biases: int = 0  # convolutions whose bias conv_bias.py moved after them


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:160]}" if text else type(exc).__name__


def trace_problem(problem: Problem, split_bias: bool = True) -> Traced:
    """The traced Model; with `split_bias` each convolution's bias is added in the graph after a
    bias-free convolution (conv_bias.py), where the fused tail reading it takes it in."""
    inst = instantiate(problem, device="cpu")
    try:
        raw_get_inputs = inst.namespace["get_inputs"]
        try:
            with torch.device("meta"):
                init_args = list(inst.get_init_inputs())
                torch.manual_seed(0)
                model = inst.Model(*init_args)
                inputs = list(raw_get_inputs())
        except Exception as exc:  # noqa: BLE001 - a problem the meta device cannot build
            raise Unsupported(f"cannot build Model on the meta device ({_one_line(exc)})") from None
        try:
            gm = fx.symbolic_trace(model)
        except Exception as exc:  # noqa: BLE001 - data-dependent control flow and the like
            raise Unsupported(f"cannot trace Model with torch.fx ({_one_line(exc)})") from None
        split = split_conv_bias(gm) if split_bias else 0
        try:
            with contextlib.redirect_stderr(io.StringIO()):  # ShapeProp prints its own traceback
                ShapeProp(gm).propagate(*inputs)
        except Exception as exc:  # noqa: BLE001
            raise Unsupported(f"cannot propagate shapes through Model ({_one_line(exc)})") from None
    finally:
        sys.modules.pop(inst.module.__name__, None)
    shapes: dict[str, tuple[int, ...]] = {}
    dtypes: dict[str, torch.dtype] = {}
    for node in gm.graph.nodes:
        meta = node.meta.get("tensor_meta")
        if isinstance(meta, (tuple, list)) and meta and hasattr(meta[0], "shape"):
            meta = meta[0]  # max/min over a dim: (values, indices); the values are what is fused
        if meta is not None and hasattr(meta, "shape"):
            shapes[node.name] = tuple(int(s) for s in meta.shape)
            dtypes[node.name] = meta.dtype
    placeholders = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    numbers = {name for name, value in zip(placeholders, inputs)
               if isinstance(value, (int, float)) and not isinstance(value, bool)}
    return Traced(gm=gm, model=model, shapes=shapes, dtypes=dtypes, init_args=init_args, numbers=numbers,
                  split_biases=split)
