"""The launch-side layout helpers index broadcast operands exactly as PyTorch broadcasting does.

The kernels read a band operand at ((r // div) % mod) * L + j (band1) or (r // div) % mod (band0)
for output element i = r * L + j; this emulates that formula over every element.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from htam_engine.propose.offline.runtime import _ew_prepare, _row_prepare


def _kind(op_shape: tuple[int, ...], out: tuple[int, ...]) -> str:
    right = (1,) * (len(out) - len(op_shape)) + op_shape
    if right == out:
        return "full"
    return "band1" if right[-1] == out[-1] and out[-1] > 1 else "band0"


OUT = (3, 4, 5, 6)
SHAPES = sorted({tuple(s if keep else 1 for s, keep in zip(OUT[-n:], mask))
                 for n in range(1, 5) for mask in itertools.product([0, 1], repeat=n)})


@pytest.mark.parametrize("op_shape", SHAPES)
def test_band_indexing_matches_broadcasting(op_shape):
    out = OUT
    x = torch.arange(torch.Size(out).numel(), dtype=torch.float32).reshape(out)
    w = torch.arange(torch.Size(op_shape).numel(), dtype=torch.float32).reshape(op_shape) + 1000
    kinds = ("full", _kind(op_shape, out))
    ts, row_len, bands = _ew_prepare(out, [x, w], kinds)
    flat = ts[1].reshape(-1)
    got = torch.empty(x.numel())
    for i in range(x.numel()):
        r, j = divmod(i, row_len)
        if kinds[1] == "full":
            got[i] = flat[i]
        else:
            div, mod = bands
            k = (r // div) % mod
            got[i] = flat[k * row_len + j] if kinds[1] == "band1" else flat[k]
    torch.testing.assert_close(got.reshape(out), torch.broadcast_to(w, out))


def test_row_layout_and_operand_checks():
    x = torch.randn(2, 3, 4, 5)
    g = torch.randn(3, 1, 1)
    ts, shape, keep, outer, red, inner = _row_prepare([x, g], ("full", "rpos"), 1, 2)
    assert (shape, keep, outer, red, inner) == ((2, 3, 4, 5), (2, 1, 4, 5), 2, 3, 20)
    with pytest.raises(RuntimeError, match="does not run along the reduced dims"):
        _row_prepare([x, torch.randn(4, 5)], ("full", "rpos"), 1, 2)
    ts, *_ = _row_prepare([x, torch.randn(2, 1, 4, 1)], ("full", "outfull"), 1, 2)
    assert tuple(ts[1].shape) == (2, 1, 4, 5) and ts[1].is_contiguous()
