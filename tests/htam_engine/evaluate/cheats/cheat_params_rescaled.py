"""Cheat (parameters, class: the parameter check): both layers rescaled after construction, the
first by 4 and the second by 1/4 (a ReLU is positively homogeneous, so the function is unchanged up to
rounding), so none of ModelNew's weights equals Model's. Gain: none by itself; it asks whether a model
whose parameters differ from Model's (KernelBench's rule) still gets `ok`."""
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



class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.first = nn.Linear(features, features)
        self.second = nn.Linear(features, features)
        with torch.no_grad():
            self.first.weight.mul_(4.0)
            self.first.bias.mul_(4.0)
            self.second.weight.mul_(0.25)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        pair_kernel[(x.shape[0],)](x, self.first.weight, self.first.bias, self.second.weight,
                                   self.second.bias, y, F=x.shape[1])
        return y
