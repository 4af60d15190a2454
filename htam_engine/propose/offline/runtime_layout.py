"""Launch-side helpers for a convolution run channels-last and the tail that reads its result.

Embedded (by source) only into candidates written with conv.layout=channels_last: the helpers of
runtime.py are part of every candidate's text, and an experiment's table of measured candidates
is keyed by that text, so they stay as they were. Kept free of htam imports, like runtime.py;
`_ew_prepare` is runtime.py's (the candidate module holds both).
"""

import math

import torch


def _f32_dense(t):
    """As _f32, but a dense tensor keeps its strides (a channels-last convolution's output is read in place)."""
    dense = t.is_contiguous() or t.is_contiguous(memory_format=torch.channels_last) or \
        t.is_contiguous(memory_format=torch.channels_last_3d)
    t = t if dense else t.contiguous()
    return t if t.dtype == torch.float32 else t.float()


def _channels_last(t):
    """A convolution's input in channels-last layout: cuDNN's fastest float32 kernels read NHWC."""
    return t.contiguous(memory_format=torch.channels_last if t.dim() == 4 else torch.channels_last_3d)


def _ew_prepare_nchw(shape, ts, kinds):
    """_ew_prepare for a kernel that reads a strided operand at row n * C + c: its rows must be no
    longer than the spatial dims, which a per-channel operand guarantees, so one is added (on the
    meta device: only its shape is looked at) and its (div, mod) dropped again."""
    full = tuple("full" if k == "strided" else k for k in kinds)
    per_channel = torch.empty((1, shape[1]) + (1,) * (len(shape) - 2), device="meta") if len(shape) >= 3 else None
    if per_channel is None:
        return _ew_prepare(shape, ts, full)
    ts, L, bands = _ew_prepare(shape, [*ts, per_channel], (*full, "band0"))
    return ts[:-1], L, bands[:-2]


def _nchw_strides(t, L):
    """(tensor, C, stride of n, of c, of the spatial index j) for a kernel reading t at row n * C + c,
    column j < L, where L is the size of t's spatial dims and they flatten with one stride (as in
    NCHW and channels-last); otherwise a contiguous copy read as rows of L."""
    spatial = tuple(t.shape[2:])
    if t.dim() >= 3 and math.prod(spatial) == L:
        sj = t.stride(-1)
        if all(t.stride(d) == sj * math.prod(t.shape[d + 1:]) for d in range(2, t.dim()) if t.shape[d] > 1):
            return t, t.shape[1], t.stride(0), t.stride(1), sj
    t = t.contiguous()
    return t, 1, L, 0, 1
