"""Cheats of a nineteenth red-team pass (CPU). Each came back `ok` with its outputs reused across calls:
HeldOutputs compared the virtual address spans of outputs the candidate still held, which a new
mapping of the same pages, a storage that frees nothing or a ring longer than the kept outputs
escaped. Caught now by the memory's contents: the latest outputs are kept alive with a sample of
their bytes, and one whose bytes change after later calls was written by them (output_reuse).

- cheat_output_ring_numpy32: cheat_output_ring_numpy with a ring of 32 numpy buffers. The sandbox keeps
  the latest 16 outputs on non-resizable storages alive then (memory.HeldOutputs), and the
  untimed warm-ups take turns of the ring as well, so the memory handed out again (first on timed trial
  1) is that of an output the record dropped long before. ok on matmul_relu (0.13x: Triton interpreted),
  no finding; a ring of 24 is still caught (output_reuse).
- cheat_output_memfd_remap: two output buffers per call in memfds (8 slots in turn), each call mapping
  its turn's memfd anew (mmap: a new virtual address over the same physical pages) and wrapping the
  mapping (torch.frombuffer). HeldOutputs compares virtual address spans, which never overlap, so no
  ring size is needed at all. ok on matmul_relu, no finding.
- cheat_output_memfd_relu: the same for a gain: the honest C++ ReLU loop writing into a remapped memfd
  (MAP_POPULATE: the pages exist and are mapped in the mmap, no faults, no perturbation fill). On relu at
  4096x4096 (64 MiB) ok at 1.47x eager against the honest C++ ReLU's 0.80x (2-core CPU box).
- cheat_output_resizable_blob: no numpy, no mmap: the C++ ReLU writes into one of 8 buffers the extension
  allocated and pre-touched once, each call wrapped in a new c10::Storage marked *resizable* (a deleter
  that frees nothing). HeldOutputs keeps only non-resizable storages alive and follows a resizable one
  by weak reference, which expires once the output is delivered. ok at 2.01x eager on relu 4096x4096
  (honest C++ ReLU 0.80x), ok at 0.62x on the small relu.
"""

from __future__ import annotations

import torch

from cheats.caught import assert_caught
from cheats.harness import load_candidate, run_check


def test_an_output_ring_longer_than_the_kept_outputs_is_caught():
    model = load_candidate("cheat_output_ring_numpy32").ModelNew()
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    first = model(a, b)
    kept = first.clone()
    for _ in range(32):  # the 32nd call later hands out the first call's memory again
        model(torch.randn(64, 64), torch.randn(64, 64))
    assert not torch.equal(first, kept)  # the caller's earlier output was overwritten
    assert_caught(run_check("matmul_relu", "cheat_output_ring_numpy32", trials=10), "output_reuse")


def test_outputs_on_memory_mapped_anew_each_call_are_caught():
    model = load_candidate("cheat_output_memfd_remap").ModelNew()
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    first = model(a, b)
    kept = first.clone()
    others = [model(torch.randn(64, 64), torch.randn(64, 64)) for _ in range(8)]
    assert all(o.data_ptr() != first.data_ptr() for o in others)  # a new address every call
    assert not torch.equal(first, kept)  # yet the same memory: the earlier output was overwritten
    assert_caught(run_check("matmul_relu", "cheat_output_memfd_remap", trials=10), "output_reuse")


def test_a_relu_into_memory_mapped_anew_each_call_is_caught():
    model = load_candidate("cheat_output_memfd_relu").ModelNew()
    x = torch.randn(64, 64)
    first = model(x)
    assert torch.equal(first, torch.relu(x))
    kept = first.clone()
    for _ in range(8):
        model(torch.randn(64, 64))
    assert not torch.equal(first, kept)
    assert_caught(run_check("relu", "cheat_output_memfd_relu", trials=10), "output_reuse")


def test_a_relu_into_kept_buffers_behind_fresh_resizable_storages_is_caught():
    model = load_candidate("cheat_output_resizable_blob").ModelNew()
    x = torch.randn(64, 64)
    first = model(x)
    assert torch.equal(first, torch.relu(x)) and first.untyped_storage().resizable()
    kept = first.clone()
    for _ in range(8):
        model(torch.randn(64, 64))
    assert not torch.equal(first, kept)  # the caller's earlier output was overwritten
    assert_caught(run_check("relu", "cheat_output_resizable_blob", trials=10), "output_reuse")
