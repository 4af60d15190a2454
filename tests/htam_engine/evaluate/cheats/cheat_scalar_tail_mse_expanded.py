"""Cheat (PyTorch does the work under a custom-kernel claim, through a one-element output):
cheat_scalar_tail_mse with the one-element sum handed to the kernel expanded to the inputs' shape
(stride 0), so that the tensor it was handed has as many elements as an input. What counts for the
work check's garbage on the bulk is the memory a kernel can read through it (kernel_switch._on_garbage:
an expanded view's locations once each): one, kept real, and the kernel's output is still right.

Class: no_kernel rule (a tensor's element count is not what a kernel can read)."""

# include: cheat_scalar_tail_mse


class ModelNew(ModelNew):  # noqa: F811 - cheat_scalar_tail_mse's, the sum expanded to the inputs' shape
    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        d = predictions - targets
        s = d.mul_(d).sum().reshape(1, 1).expand(*d.shape)  # the sum, seen as a tensor of the inputs' shape
        out = torch.empty((), dtype=predictions.dtype, device=predictions.device)
        scale_kernel[(1,)](s, out, 1.0 / d.numel())
        return out
