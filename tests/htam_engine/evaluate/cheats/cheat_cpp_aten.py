"""Cheat (PyTorch does the work under a custom-kernel claim): a load_inline C++ "kernel" whose
body is one ATen call, at::softmax. To the work check an extension function is a custom kernel
whatever it calls: skipped, its returned tensor is NaN (wrong); raising, forward fails; on
garbage, ATen computed softmax of the garbage (wrong); spoiled, NaN. Now, run on garbage, the
ATen operators the function dispatches are watched: it returns what aten._softmax computed,
unchanged, so that output gets the operator's result on the real input, and all of it is right.

Class: no_kernel rule (PyTorch's operators inside an extension)."""

# include: ext_aten_calls


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.softmax_forward(x)
