"""Assemble a complete, self-contained KernelBench-style candidate module.

Layout of the generated file: imports; the problem's Model embedded as
`_ProblemModel`; launch helpers; kernels (a load_inline extension or Triton
functions); one `_region_K` wrapper per fused region and one `_gemm_K` per matrix
product; `class ModelNew`, whose forward is the traced graph with each fused region
replaced by its kernel.
"""

from __future__ import annotations

from dataclasses import replace

from htam_engine.families import Backend
from htam_engine.problems.model import Problem
from htam_engine.propose.offline import cpp, cuda, extension, triton_gemm, triton_module
from htam_engine.propose.offline.embed import BASE_NAME, layout_source, problem_pieces, runtime_source
from htam_engine.propose.offline.ir import ELEM, Gemm, Region
from htam_engine.propose.offline.lower import Plan
from htam_engine.propose.offline.space import MOVE_PREFIX, SETTINGS_PREFIX, Knob, Settings

_IMPORTS = """import math
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F
"""


def _kinds(region: Region) -> str:
    return "(" + "".join(f"{inp.kind!r}, " for inp in region.inputs) + ")"


def _wrapper(region: Region, launch: list[str]) -> list[str]:
    n = len(region.inputs)
    args = ", ".join(f"a{k}" for k in range(n))
    lines = [f"def _region_{region.index}({args}):"]
    body = [f"src = _as_tensors([{args}])", "dt = _out_dtype(src)"]
    strided = [k for k, inp in enumerate(region.inputs) if inp.kind == "strided"]
    if strided:  # read in place by its strides (a channels-last convolution's output)
        body.append(f"ts = [_f32_dense(t) if k == {strided[0]} else _f32(t) for k, t in enumerate(src)]")
    else:
        body.append("ts = [_f32(t) for t in src]")
    if region.window is not None:
        w = region.window
        body += [
            f"ts, shape, oshape = _window_prepare(ts, {_kinds(region)}, {w.kernel}, {w.stride}, {w.padding}, "
            f"{w.dilation}, {w.ceil_mode})",
            "out = torch.empty(oshape, device=ts[0].device, dtype=torch.float32)",
            "if out.numel() == 0:",
            "    return out.to(dt)",
        ]
    elif not region.is_row:
        body += [
            "shape = tuple(torch.broadcast_shapes(*[t.shape for t in ts]))",
            "out = torch.empty(shape, device=ts[0].device, dtype=torch.float32)",
            "if out.numel() == 0:",
            "    return out.to(dt)",
            f"ts, L, bands = {'_ew_prepare_nchw' if strided else '_ew_prepare'}(shape, ts, {_kinds(region)})",
        ]
        body += [f"ts[{k}], CH, sn{k}, sc{k}, sj{k} = _nchw_strides(ts[{k}], L)" for k in strided]
    elif region.middle:
        kept = [d for d in range(len(region.elem_shape)) if d not in region.reduce_dims]
        body.append(f"ts, shape, keep, outer, R, IN = _middle_prepare(ts, {_kinds(region)}, {kept[0]}, {kept[-1] + 1})")
        if region.levels[region.out] == ELEM:
            body.append("oshape = shape")
        else:
            body.append("oshape = keep" if region.out_keepdim else f"oshape = shape[{kept[0]}:{kept[-1] + 1}]")
        body += [
            "out = torch.empty(oshape, device=ts[0].device, dtype=torch.float32)",
            "if out.numel() == 0 or R == 0:",
            "    return out.to(dt)",
        ]
    else:
        d0, d1 = region.reduce_dims[0], region.reduce_dims[-1] + 1
        body.append(f"ts, shape, keep, outer, R, inner = _row_prepare(ts, {_kinds(region)}, {d0}, {d1})")
        if any(i.kind == "mixed" for i in region.inputs):
            body.append(f"mixed = _mixed_args(ts, {_kinds(region)}, shape, {d0})")
        if region.levels[region.out] == ELEM:
            body.append("oshape = shape")
        elif region.out_keepdim:
            body.append("oshape = keep")
        else:
            body.append(f"oshape = tuple(s for d, s in enumerate(shape) if not {d0} <= d < {d1})")
        if region.index_output:  # argmax / argmin: int64 indices
            body += ["dt = torch.int64", "out = torch.empty(oshape, device=ts[0].device, dtype=torch.int64)"]
        else:
            body.append("out = torch.empty(oshape, device=ts[0].device, dtype=torch.float32)")
        body += [
            "if out.numel() == 0 or R == 0:",
            "    return out.to(dt)",
        ]
    body += launch
    body.append("return out if out.dtype == dt else out.to(dt)")
    return lines + ["    " + ln if ln else ln for ln in body]


def _model_new(plan: Plan, lines: list[str]) -> list[str]:
    params = ", ".join(["self"] + plan.params)
    head = [
        f"class ModelNew({BASE_NAME}):",
        '    """The problem\'s model with its fused regions running as custom kernels."""',
        "",
        f"    def forward({params}):",
    ]
    return head + ["        " + ln for ln in lines]


def _gemm_parts(plan: Plan, backend: Backend, settings: Settings) -> tuple[Plan, list[str], list[str]]:
    """The plan without the regions our GEMMs compute in their epilogues, the forward lines, and
    the GEMM kernels and wrappers (the library's product where gemm.kernel=library)."""
    lines, parts, fused = list(plan.lines), [], set()
    ours = backend is Backend.TRITON and settings.get(Knob.GEMM_KERNEL) == "triton"
    for g in plan.gemms:
        if not ours:
            parts.append("\n".join(triton_gemm.library_wrapper(g)) + "\n")
            continue
        region = plan.regions[g.epilogue] if g.epilogue is not None else None
        src, launch, epi = triton_gemm.gemm_kernel(g, region, settings)
        parts.append("\n".join(src) + "\n")
        parts.append("\n".join(triton_gemm.gemm_wrapper(g, region, launch, epi,
                                                        settings[Knob.GEMM_OPERANDS])) + "\n")
        if region is not None:  # the GEMM writes the region's output; the region's own call goes
            out_var = lines[region.line].split(" = ", 1)[0]
            args = [g.a, g.b] + ([g.bias] if g.bias else []) + [region.inputs[k].source for k in epi]
            lines[g.line] = f"{out_var} = _gemm_{g.index}({', '.join(args)})"
            lines[region.line] = ""
            fused.add(region.index)
    rest = replace(plan, regions=[r for r in plan.regions if r.index not in fused])
    return rest, [ln for ln in lines if ln], parts


def _channels_last(plan: Plan) -> Plan:
    """The plan with the elementwise regions that read a kept convolution's output reading it by
    strides, and those convolutions (only those: another reader would copy the result back to
    NCHW) called on a channels-last input (conv.layout=channels_last)."""
    reads = plan.channels_last_reads()
    lines = list(plan.lines)
    for c in plan.channels_last_convs():
        lines[c.line] = f"{c.var} = {c.call}(_channels_last({c.arg}){c.rest})"
    regions = [r if r.index not in reads else
               replace(r, inputs=[replace(inp, kind="strided") if k == reads[r.index] else inp
                                  for k, inp in enumerate(r.inputs)])
               for r in plan.regions]
    return replace(plan, lines=lines, regions=regions)


def build_module(problem: Problem, plan: Plan, backend: Backend, settings: Settings, move: str) -> str:
    """The candidate module for `plan` written with `settings` (the move that chose them is
    recorded beside them, so the next step knows where the search stands)."""
    channels_last = settings.get(Knob.CONV_LAYOUT) == "channels_last"
    if channels_last:
        plan = _channels_last(plan)
    rest, lines, gemm_parts = _gemm_parts(plan, backend, settings)
    described = [_describe(r) for r in plan.regions] + [_describe_gemm(g, settings, backend) for g in plan.gemms]
    header = [
        f'"""Candidate for {problem.id} generated by the htam offline proposer ({backend.value}).',
        "",
        "Computed here: " + "; ".join(described) + ".",
        "Kept in PyTorch: " + (", ".join(k.removeprefix("view:") for k in plan.kept) or "nothing") + ".",
        "",
        f"{MOVE_PREFIX}{move}",
        f'{SETTINGS_PREFIX}{settings.key()}\n"""',
    ]
    parts = ["\n".join(header), _IMPORTS]
    if backend is Backend.CPP:
        cpp_src = cpp.sources(rest, settings)
        kernels, launches = extension.cpp_extension(cpp_src), cpp_src.launches
    elif backend is Backend.CUDA:
        cuda_src = cuda.sources(rest, settings)
        kernels, launches = extension.cuda_extension(cuda_src), cuda_src.launches
    else:
        kernels, launches = triton_module.kernels(rest, settings)
    layout = [layout_source()] if channels_last else []  # after the kernels' Triton imports: it has a kernel
    parts += [problem_pieces(problem), runtime_source(), kernels] + layout + gemm_parts
    for region in rest.regions:
        parts.append("\n".join(_wrapper(region, launches[region.index])) + "\n")
    parts.append("\n".join(_model_new(plan, lines)) + "\n")
    return "\n\n".join(p.rstrip("\n") + "\n" for p in parts)


def _describe_gemm(g: Gemm, settings: Settings, backend: Backend) -> str:
    where = "a Triton GEMM" if backend is Backend.TRITON and settings.get(Knob.GEMM_KERNEL) == "triton" else \
        "the library"
    fused = f", region {g.epilogue} in its epilogue" if g.epilogue is not None and "Triton" in where else ""
    return f"product {g.index} ({g.kind}, {list(g.a_shape)} x {list(g.b_shape)}) in {where}{fused}"


def _describe(region: Region) -> str:
    if region.scan is not None:
        sc = region.scan
        how = " ".join(w for w, on in (("reversed", sc.reverse), ("exclusive", sc.exclusive)) if on)
        return f"region {region.index}: {how + ' ' if how else ''}cumulative {sc.op} along dim {sc.dim} of " \
               f"{list(region.elem_shape)}"
    if region.window is not None:
        w = region.window
        return (f"region {region.index}: {w.kind} pooling {list(w.kernel)} (stride {list(w.stride)}) of "
                f"{list(region.elem_shape)}")
    if not region.is_row:
        strided = any(inp.kind == "strided" for inp in region.inputs)
        return f"region {region.index}: elementwise over {list(region.elem_shape)}" + (
            ", reading a channels-last convolution's output" if strided else "")
    what = "elementwise" if region.levels[region.out] == ELEM else "row values"
    return f"region {region.index}: reduce dims {list(region.reduce_dims)} of {list(region.elem_shape)} -> {what}"
