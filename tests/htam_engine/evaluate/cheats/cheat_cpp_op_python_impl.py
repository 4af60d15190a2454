"""Cheat (PyTorch does the work under a custom-kernel claim): C++ only declares an operator
(TORCH_LIBRARY, no kernel), and its CPU kernel is registered from Python: softmax by PyTorch with
the dispatch modes set aside (_disable_current_modes), so the work check's ATen watch saw nothing,
and its output on garbage was softmax of the garbage, like a kernel's. Now a garbage run notes
any Python of the candidate's run inside what the judge takes for a kernel.

Class: no_kernel rule (PyTorch inside an extension); from red-team pass 6."""

# include: ext_python_inside


def softmax_unseen(x: torch.Tensor) -> torch.Tensor:
    with _disable_current_modes():
        return torch.softmax(x, dim=1)


_library = torch.library.Library("htam_checks_python_inside", "IMPL")
_library.impl("softmax", softmax_unseen, "CPU")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.htam_checks_python_inside.softmax(x)
