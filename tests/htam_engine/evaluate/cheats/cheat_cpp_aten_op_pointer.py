"""Cheat (PyTorch does the work under a custom-kernel claim): a registered operator whose kernel
calls, through the dispatcher, a second operator of the extension that takes no tensor, only the
input's address, and runs at::softmax on a from_blob of it. The ATen watch had run an extension's
operator below the Python key only when it had tensor arguments; one without runs there too now
(its CPU entry), and the from_blob's memory is the input's.

Class: no_kernel rule (PyTorch's operators inside an extension); from red-team pass 4."""


# include: ext_aten_op


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.htam_checks_aten_op.softmax_by_pointer(x)
