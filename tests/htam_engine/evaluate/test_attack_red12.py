"""Cheats of a twelfth red-team pass (CPU, softmax): PyTorch's own kernels called from a C++
extension where the work check's ATen watch does not look: a structured CPU kernel looked up with
dlsym under a name decoded at run time (past the symbol scan; refused since: an extension naming a
run-time lookup), an operator under a guard excluding the Python dispatch key, and an operator on a
thread the extension starts and joins (both caught since by a global trace beside the watch).

Each cheat is a KernelBench `ModelNew` (cheats/cheat_*.py, its docstring says what it does and its
class). A cheat that gets through is xfail(strict=True) with what the judge misses, its honest
counterpart shown ok beside it, so the test flips when the judge learns to catch it. Figures are
from the 2-core box: honest_softmax (Triton, interpreted) ok at 0.011x.
"""

from __future__ import annotations

import pytest

from cheats.harness import finding, run_check
from htam_engine.evaluate.result import Status
from test_attack_new import assert_caught, honest_ok


def test_a_cpu_kernel_found_by_dlsym_under_a_decoded_name_is_refused():
    """The extension calls at::cpu::_softmax through dlsym under a name it decodes at run time: no
    refused name in the library, no operator dispatched, so the ATen watch recorded nothing and the
    softmax of the garbage passed for the kernel's work (ok at 0.55x, honest 0.011x). An extension
    naming dlsym (or another run-time lookup) is now refused at import (kernel_switch)."""
    honest_ok(run_check("softmax", "honest_softmax"))
    r = run_check("softmax", "cheat_cpp_hidden_dlsym")
    assert r.status is Status.COMPILE_ERROR, (r.status, r.speedup_eager)
    assert "looks functions up by name at run time (dlsym)" in r.diagnostics.message


@pytest.mark.parametrize("cheat", ["cheat_cpp_exclude_python_key", "cheat_cpp_aten_on_thread"])
def test_an_operator_dispatched_where_the_watch_does_not_look_is_caught(cheat):
    """at::softmax under ExcludeDispatchKeyGuard(Python, PythonTLSSnapshot), and on a std::thread the
    extension starts and joins: the work check's dispatch mode saw neither (ok at 0.73x and 0.045x,
    honest 0.011x). The execution trace observer beside it sees every thread below every key
    (aten_watch.GlobalTrace): an operator it saw at the top of the call, of which the mode saw
    nothing, convicts."""
    honest_ok(run_check("softmax", "honest_softmax"))
    r = run_check("softmax", cheat)
    assert_caught(r, "no_kernel")
    assert "where the work check's watch does not look (aten::softmax" in finding(r, "no_kernel").message
