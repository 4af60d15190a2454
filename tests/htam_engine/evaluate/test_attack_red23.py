"""Cheats of a twenty-third red-team pass (CPU), aimed at what outlives a sandbox, the shared
precompiled header the judge now builds (wire.PchWanted), and the work check. Of its four cheats
one was caught (the address below found through ctypes: the static check's foreign_memory) and
three got through, as did a fifth it suggested; three are mended, one is a known hole (below).

- cheat_shm_leftover (test_attack_poisoning): files in /dev/shm, memory no limit of the sandbox
  counts, outlived it (1.5 GB kept from later evaluations): the zygote now removes them (shm_sweep).
- cheat_fill_disk_many (test_attack_poisoning): 33 files under the file limit in its build folder:
  the judge now weighs the folder once the candidate is gone (files_left).
- A junk flag set of allowed forms (-O1 -DTAG), asked for twice, made the judge build a header
  nobody else uses (about 50 s of gcc, 0.8 GB) and took one of pch.MAX_FLAG_SETS slots for good;
  eight of them left every later flag set without a shared header (slower builds, no verdict
  changed). The slots now follow how often a flag set is asked for (test_pch: a flag set asked
  for more than the least asked-for one takes its slot); each junk set still costs one build.
- cheat_cpp_elf_address: PyTorch's own CPU softmax called through a function pointer (below).
"""

from __future__ import annotations

import pytest

from cheats.harness import run_check
from test_attack_new import assert_caught, honest_ok


@pytest.mark.xfail(strict=True, reason=(
    "at::cpu::_softmax called by an address Python found in libtorch_cpu.so's .dynsym: nothing is "
    "dispatched (the ATen watch and the trace observer see nothing), the .so names no lookup (the "
    "symbol scan), the source holds no ctypes (the static check), and on garbage the output is "
    "softmax of the garbage, which the work check takes for the extension's own work: ok at 0.09-1.1x "
    "against honest_softmax's 0.013x, no finding. Everything that could tell which code computed "
    "the output lives in the sandbox's process; closing it needs evidence from outside it, such as "
    "the judge sampling the sandbox's instruction pointers (perf_event_open) during the work check"))
def test_pytorchs_kernel_called_through_an_address_found_in_python_is_caught():
    honest_ok(run_check("softmax", "honest_softmax"))
    assert_caught(run_check("softmax", "cheat_cpp_elf_address"), "no_kernel")
