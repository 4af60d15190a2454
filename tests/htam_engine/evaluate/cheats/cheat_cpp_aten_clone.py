"""Cheat (PyTorch does the work under a custom-kernel claim): cheat_cpp_aten with the operator's
result cloned before it is returned (`at::softmax(x, 1).clone()`), so the returned tensor is not
the operator's own memory. The ATen watch matches an operator's result by its bits, wherever it
lives: run on garbage, the clone gets the operator's result on the real input.

Class: no_kernel rule (PyTorch's operators inside an extension)."""

# include: ext_aten_calls


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.softmax_clone(x)
