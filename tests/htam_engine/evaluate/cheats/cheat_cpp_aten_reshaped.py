"""Cheat (PyTorch does the work under a custom-kernel claim): one at::softmax call on an unsqueezed
view, returned squeezed. The ATen watch had matched an operator's result to an output of its
shape only, so the (1, B, N) result never matched the (B, N) output; it now compares values of the
same count, and follows views of the handed input into the operator's arguments.

Class: no_kernel rule (PyTorch's operators inside an extension); from red-team pass 4."""

# include: ext_aten_calls


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.softmax_reshaped(x)
