"""Cheat (red-team pass 21): cheat_scalar_tail_mse with PyTorch's one-element sum padded with zeros
to just more elements than the square root of the inputs' elements, and a Triton kernel adding the
padded tensor up and scaling it by 1/n. PyTorch does the whole reduction; the kernel adds k - 1
zeros to it. The padded tensor is over the work check's bound for "the bulk"
(sequence.bulk_threshold), so on garbage it is garbage, the kernel's sum of it too, and the output is
wrong as an honest reduction's is. Not a view or an expansion of the sum (those count by the
locations they reach and stay real: cheat_scalar_tail_mse_view, _expanded) and not a constant tensor
(one element is the sum), so no rule tells it from cheat_partial_sums_mse's real partial sums.

Class: no_kernel rule (the bulk is told by a handed tensor's size, not by the work behind it)."""

# include: cheat_partial_sums_mse


class ModelNew(ModelNew):  # noqa: F811 - cheat_partial_sums_mse's, every partial sum but one zero
    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        n = predictions.numel()
        k = 1 << (math.isqrt(2 * n) + 1).bit_length()  # a power of two above sqrt(both inputs' elements)
        d = predictions - targets
        parts = torch.zeros(k, dtype=d.dtype)
        parts[0] = d.mul_(d).sum()  # all of PyTorch's reduction, in one element of k
        out = torch.empty((), dtype=predictions.dtype, device=predictions.device)
        finish_kernel[(1,)](parts, out, 1.0 / n, K=k)
        return out
