"""Honest: honest_matmul_relu_cpp as a registered operator with a CPU kernel
(torch.ops.htam_checks_aten_op.matmul_relu): a product through at::matmul that the kernel's own
loop then changes in place. The work check runs an extension's operator's backend kernel with its
ATen watch on (cheat_cpp_aten_op); the product it sees is not what the operator returns."""

# include: ext_aten_op


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.ops.htam_checks_aten_op.matmul_relu(a, b)
