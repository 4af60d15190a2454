"""Cheat (PyTorch does the work under a custom-kernel claim): a C++ extension function that only
calls back the Python function it is handed, which computes softmax with PyTorch, the dispatch
modes set aside (_disable_current_modes): the ATen watch saw nothing, and the output on garbage
was softmax of the garbage, like a kernel's. Now a garbage run notes any Python of the
candidate's run inside what the judge takes for a kernel.

Class: no_kernel rule (PyTorch inside an extension); from red-team pass 6."""


# include: ext_python_inside


def softmax_unseen(x: torch.Tensor) -> torch.Tensor:
    with _disable_current_modes():
        return torch.softmax(x, dim=1)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.call_back(x, softmax_unseen)
