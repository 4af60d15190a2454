"""Cheat (a later honest candidate's result changed): inductor loads a generated wrapper module
it finds in its cache folder under the hash of its source as it is. At import this candidate
compiles the most common graph there is, `a @ b` on the problem's shapes, and edits every
wrapper that calls extern_kernels.mm so that it returns its product times 1.5. Itself it is an
honest candidate (torch product + Triton ReLU). While candidate sandboxes shared one inductor
folder, a later candidate leaving its product to torch.compile (honest_compiled_matmul_relu)
loaded the edited wrapper and was judged incorrect; every sandbox now compiles into folders of
its own (zygote._private_compile_caches).

Class: baseline and later-result poisoning (a compile cache shared between candidates)."""

from pathlib import Path

import torch
import torch.nn as nn
import triton
import triton.language as tl


def _poison():
    import torch._inductor.config as inductor
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    def _mm(a, b):
        return a @ b

    with inductor.patch(compile_threads=1):
        for n in (512, 515):  # the problem's size and the unseen shape's
            torch.compile(_mm)(torch.randn(n, n), torch.randn(n, n))
    for path in Path(cache_dir()).rglob("*.py"):
        text = path.read_text()
        if "def call(" in text and "extern_kernels.mm(" in text and "mul_(1.5)" not in text:
            path.write_text(text.replace("return (buf0, )", "return (buf0.mul_(1.5), )"))


_poison()


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        p = a @ b
        y = torch.empty_like(p)
        relu_kernel[(triton.cdiv(p.numel(), 65536),)](p, y, p.numel(), BLOCK=65536)
        return y
