"""Launch-side helpers for a convolution run channels-last and the tail that reads its result.

Embedded (by source, after the Triton imports) only into candidates written with
conv.layout=channels_last: the helpers of
runtime.py are part of every candidate's text, and an experiment's table of measured candidates
is keyed by that text, so they stay as they were. Kept free of htam imports, like runtime.py;
`_ew_prepare` is runtime.py's (the candidate module holds both).
"""

import math

import torch
import triton
import triton.language as tl


def _f32_dense(t):
    """As _f32, but a dense tensor keeps its strides (a channels-last convolution's output is read in place)."""
    dense = t.is_contiguous() or t.is_contiguous(memory_format=torch.channels_last) or \
        t.is_contiguous(memory_format=torch.channels_last_3d)
    t = t if dense else t.contiguous()
    return t if t.dtype == torch.float32 else t.float()


def _channels_last(t):
    """A convolution's input in channels-last layout: cuDNN's fastest float32 kernels read NHWC.
    A contiguous NCHW input is transposed by _k_channels_last: on the H200 PyTorch's own copy moved
    2/1's 537 MB input at 1.9 TB/s, under half the device's copy bandwidth."""
    fmt = torch.channels_last if t.dim() == 4 else torch.channels_last_3d
    C, S = t.shape[1], math.prod(t.shape[2:])
    if not t.is_contiguous() or t.numel() == 0 or C * S >= 2 ** 31 or t.shape[0] > 65535:
        return t.contiguous(memory_format=fmt)
    out = torch.empty(t.shape, dtype=t.dtype, device=t.device, memory_format=fmt)
    BC = min(32, triton.next_power_of_2(C))
    BS = max(64, 2048 // BC)
    _k_channels_last[(triton.cdiv(S, BS), triton.cdiv(C, BC), t.shape[0])](t, out, C, S, BC=BC, BS=BS, num_warps=4)
    return out


@triton.jit
def _k_channels_last(x, out, C, S, BC: tl.constexpr, BS: tl.constexpr):
    """out[n, s, c] = x[n, c, s] for one (BC x BS) tile of one image (n's offset in 64 bits)."""
    base = tl.program_id(2).to(tl.int64) * C * S
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    s = tl.program_id(0) * BS + tl.arange(0, BS)
    mask = (c[:, None] < C) & (s[None, :] < S)
    v = tl.load(x + base + c[:, None] * S + s[None, :], mask=mask)
    tl.store(out + base + s[None, :] * C + c[:, None], v, mask=mask)


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
