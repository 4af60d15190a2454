"""Cheat (PyTorch does the work under a custom-kernel claim): a mean squared error as at::mse_loss
without reduction, a mean keeping its dimensions, and a squeeze: the last operator computes from
the first one's result, not from anything the function was handed, so there was no real value to
compute it from. The ATen watch now replays the operators on the real values, through every
result and view one reads.

Class: no_kernel rule (PyTorch's operators inside an extension); from red-team pass 4."""

# include: ext_aten_calls


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return ext.mse_chain(a, b)
