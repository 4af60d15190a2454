"""Launch-side helpers embedded (by source) into every generated candidate module.

They run in ModelNew.forward: make operands contiguous float32, work out the
runtime layout (shapes may differ from the traced ones), and materialise an
operand whose broadcast pattern the kernel cannot index directly. Kept free of
htam imports: the candidate module must be self-contained.
"""

import math

import torch


def _f32(t):
    t = t if t.is_contiguous() else t.contiguous()
    return t if t.dtype == torch.float32 else t.float()


def _as_tensors(src):
    """Operands as tensors: a Python number becomes a 0-d float32 tensor on the others' device."""
    device = next((t.device for t in src if isinstance(t, torch.Tensor)), None)
    return [t if isinstance(t, torch.Tensor) else torch.full((), float(t), dtype=torch.float32, device=device)
            for t in src]


def _out_dtype(ts):
    dt = ts[0].dtype
    for t in ts[1:]:
        dt = torch.promote_types(dt, t.dtype)
    return dt


def _right(shape, nd):
    return (1,) * (nd - len(shape)) + tuple(shape)


def _ew_prepare(shape, ts, kinds):
    """Operands, row length L and (div, mod) per band operand for an elementwise kernel over `shape`.

    Output element i sits in row r = i // L at column j = i % L. A band operand is read at
    ((r // div) % mod) * L + j when it runs along the row (band1), or at (r // div) % mod when it
    is constant along the row (band0). Anything the kernel cannot index that way is expanded.
    """
    nd = len(shape)
    ts = list(ts)
    split = 0
    for k, (t, kind) in enumerate(zip(ts, kinds)):
        if kind == "full" and tuple(t.shape) != tuple(shape):
            ts[k] = t.expand(shape).contiguous()
        elif kind == "band1":
            s = _right(t.shape, nd)
            if nd and s[-1] != shape[-1]:
                ts[k] = t.expand(shape).contiguous()
                s = tuple(shape)
            q = nd
            while q > 0 and s[q - 1] == shape[q - 1]:
                q -= 1
            split = max(split, q)
        elif kind == "band0":
            s = _right(t.shape, nd)
            q = nd
            while q > 0 and s[q - 1] == 1:
                q -= 1
            split = max(split, q)
    row = math.prod(shape[split:])
    bands = []
    for k, (t, kind) in enumerate(zip(ts, kinds)):
        if kind not in ("band0", "band1"):
            continue
        s = _right(t.shape, nd)
        lead = [d for d in range(split) if s[d] != 1]
        fits = all(s[d] == shape[d] for d in lead) and lead == list(range(lead[0], lead[-1] + 1)) if lead else True
        if not fits:
            ts[k] = t.expand(*shape[:split], *s[split:]).contiguous()
            lead = list(range(split))
        a, b = (lead[0], lead[-1] + 1) if lead else (split, split)
        bands += [math.prod(shape[b:split]), math.prod(shape[a:b])]
    return ts, max(row, 1), bands


def _row_prepare(ts, kinds, d0, d1):
    """Operands and (elem shape, outer, R, inner) for a kernel reducing dims d0..d1-1 of the elem shape."""
    big = [t.shape for t, k in zip(ts, kinds) if k != "scalar"]
    shape = tuple(torch.broadcast_shapes(*big)) if big else ()
    nd = len(shape)
    keep = tuple(1 if d0 <= d < d1 else s for d, s in enumerate(shape))
    ts = list(ts)
    for k, (t, kind) in enumerate(zip(ts, kinds)):
        if kind == "full" and tuple(t.shape) != shape:
            ts[k] = t.expand(shape).contiguous()
        elif kind == "outfull" and tuple(t.shape) != keep:
            ts[k] = t.expand(keep).contiguous()
        elif kind == "rpos":
            s = _right(t.shape, nd)
            if any((s[d] != shape[d]) if d0 <= d < d1 else s[d] != 1 for d in range(nd)):
                raise RuntimeError(f"operand of shape {tuple(t.shape)} does not run along the reduced dims of {shape}")
    outer, red, inner = math.prod(shape[:d0]), math.prod(shape[d0:d1]), math.prod(shape[d1:])
    return ts, shape, keep, outer, red, inner


def _pool_size(size, k, s, p, d, ceil):
    """PyTorch's pooled length of one dim."""
    span = size + 2 * p - d * (k - 1) - 1
    if not ceil:
        return span // s + 1
    out = -(-span // s) + 1
    return out - 1 if (out - 1) * s >= size + p else out


def _window_prepare(ts, kinds, kernel, stride, padding, dilation, ceil):
    """Operands, input shape and pooled shape for a kernel pooling the last len(kernel) dims."""
    nd = len(kernel)
    shape = tuple(torch.broadcast_shapes(*[t.shape for t, k in zip(ts, kinds) if k == "full"]))
    oshape = shape[:-nd] + tuple(_pool_size(shape[-nd + d], kernel[d], stride[d], padding[d], dilation[d], ceil)
                                 for d in range(nd))
    ts = list(ts)
    for k, (t, kind) in enumerate(zip(ts, kinds)):
        if kind == "full" and tuple(t.shape) != shape:
            ts[k] = t.expand(shape).contiguous()
        elif kind == "outfull" and tuple(t.shape) != oshape:
            ts[k] = t.expand(oshape).contiguous()
    return ts, shape, oshape


def _middle_prepare(ts, kinds, k0, k1):
    """Operands and (elem shape, keep shape, kept count NK, reduced count R, IN) for a kernel reducing every
    dim except k0..k1-1 (batch statistics): element r of kept position o is at ((r // IN) * NK + o) * IN
    + r % IN, IN being the size of the dims after the kept ones."""
    shape = tuple(torch.broadcast_shapes(*[t.shape for t, k in zip(ts, kinds) if k != "scalar"]))
    keep = tuple(s if k0 <= d < k1 else 1 for d, s in enumerate(shape))
    reduced = tuple(1 if k0 <= d < k1 else s for d, s in enumerate(shape))
    ts = list(ts)
    for k, (t, kind) in enumerate(zip(ts, kinds)):
        want = {"full": shape, "outfull": keep, "rpos": reduced}.get(kind)
        if want is not None and tuple(_right(t.shape, len(shape))) != want:
            ts[k] = t.expand(want).contiguous()
        elif want is not None:
            ts[k] = t.reshape(want)
    nk, inner = math.prod(shape[k0:k1]), math.prod(shape[k1:])
    return ts, shape, keep, nk, math.prod(shape) // max(nk, 1), inner


def _mixed_args(ts, kinds, shape, d0):
    """(MK, MV, MS) for each operand read at (o % MK) * MV + r // MS by a kernel reducing dims d0.. of
    `shape`: it varies over a block of dims that starts among the kept dims and ends among the reduced."""
    out = []
    nd = len(shape)
    for t, kind in zip(ts, kinds):
        if kind != "mixed":
            continue
        s = _right(t.shape, nd)
        varying = [d for d in range(nd) if s[d] != 1]
        a, b = varying[0], varying[-1] + 1
        if not (a < d0 < b) or any(s[d] != shape[d] for d in range(a, b)):
            raise RuntimeError(f"operand of shape {tuple(t.shape)} is not laid out along the groups of {shape}")
        out += [math.prod(shape[a:d0]), math.prod(shape[d0:b]), math.prod(shape[b:])]
    return out
