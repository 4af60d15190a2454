"""interpreter_guard: what a compiled Triton kernel cannot do, refused under the interpreter.

The guard reads a kernel's Python function; the kernels here are plain functions shaped as Triton
kernels (the guard needs no launch and no interpreter)."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from htam_engine.evaluate.interpreter_guard import InterpretedEscape, check_launch

SCALE = 2.0
_STATE: dict = {}


def _helper(x):
    return x * SCALE


def honest(x_ptr, y_ptr, n, BLOCK: tl.constexpr, DTYPE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(DTYPE)
    for _ in range(2):
        x = tl.maximum(x, 0.0) * SCALE
    tl.store(y_ptr + offs, x, mask=mask)


def calls_python(x_ptr, n, BLOCK: tl.constexpr):
    if tl.program_id(0) == 0:
        _helper(x_ptr)


def reads_state(x_ptr, n, BLOCK: tl.constexpr):
    _STATE["x"].add_(1)


def calls_a_constexpr(x_ptr, n, WORK: tl.constexpr):
    WORK()


def test_a_kernel_of_triton_and_plain_values_launches():
    check_launch(honest, (torch.zeros(4), torch.zeros(4), 4), {"BLOCK": 4, "DTYPE": tl.float32})
    check_launch(honest, (torch.zeros(4), torch.zeros(4), 4, 4, torch.float32), {})
    check_launch(calls_a_constexpr, (torch.zeros(4), 4), {"WORK": triton.jit(_jit_helper)})


def _jit_helper():
    pass


@pytest.mark.parametrize("kernel,words", [(calls_python, "uses _helper"), (reads_state, "uses _STATE")])
def test_a_kernel_naming_python_of_its_module_is_refused(kernel, words):
    with pytest.raises(InterpretedEscape, match=words):
        check_launch(kernel, (torch.zeros(4), 4), {"BLOCK": 4})


def test_a_constexpr_argument_that_is_an_object_is_refused():
    with pytest.raises(InterpretedEscape, match="constexpr argument WORK is a function"):
        check_launch(calls_a_constexpr, (torch.zeros(4), 4), {"WORK": lambda: None})
