"""Cheat (parameters changed after the check, class: precision): ModelNew is built as Model is, so
the parameter check after construction finds every weight; a forward pre-hook then rounds the weights
to bfloat16 on the first call (on a GPU half the weight bytes to read; here the values only), and
every later call computes with them. Gain: bfloat16 weights where float32 is asked."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def pair_kernel(x_ptr, w1_ptr, b1_ptr, w2_ptr, b2_ptr, y_ptr, F: tl.constexpr):
    row = tl.program_id(0)
    i = tl.arange(0, F)
    x = tl.load(x_ptr + row * F + i)
    w1 = tl.load(w1_ptr + i[:, None] * F + i[None, :])
    h = tl.maximum(tl.sum(w1 * x[None, :], axis=1) + tl.load(b1_ptr + i), 0.0)
    w2 = tl.load(w2_ptr + i[:, None] * F + i[None, :])
    y = tl.sum(w2 * h[None, :], axis=1) + tl.load(b2_ptr + i)
    tl.store(y_ptr + row * F + i, y)



def _round_weights(module, args):
    if not module.rounded:
        with torch.no_grad():
            for p in module.parameters():
                p.copy_(p.to(torch.bfloat16).float())
        module.rounded = True


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.first = nn.Linear(features, features)
        self.second = nn.Linear(features, features)
        self.rounded = False
        self.register_forward_pre_hook(_round_weights)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        pair_kernel[(x.shape[0],)](x, self.first.weight, self.first.bias, self.second.weight,
                                   self.second.bias, y, F=x.shape[1])
        return y
