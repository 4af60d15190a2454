"""Cheat (PyTorch does the work under a custom-kernel claim): cheat_cpp_aten as a registered
operator. The C++ function is one ATen call, at::softmax, registered with TORCH_LIBRARY and
called as torch.ops.htam_checks_aten_op.softmax. Run on garbage, the operator passes the work
check's dispatch mode first; the mode's handler calls it with the mode set aside, so the ATen
call inside its kernel went unseen, and the output, softmax of the garbage, looked like the
operator's own work. Now the handler runs an extension's operator with the watch still on.

Class: no_kernel rule (PyTorch's operators inside an extension)."""

# include: ext_aten_op


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.htam_checks_aten_op.softmax(x)
