"""checks.memory.HeldOutputs: outputs of earlier calls whose memory the candidate still holds."""

from __future__ import annotations

import torch

from htam_engine.evaluate.checks.memory import HeldOutputs


def test_a_buffer_returned_again_as_a_fresh_view_is_reused():
    held, buffer = HeldOutputs(), torch.zeros(64)
    assert not held.reused(buffer[:])  # the view is dropped at once; the buffer lives on
    assert held.reused(buffer[:])


def test_a_ring_of_buffers_is_reused_when_the_first_comes_back():
    held, ring = HeldOutputs(), [torch.zeros(64) for _ in range(6)]
    assert [held.reused(b) for b in ring] == [False] * 6
    assert held.reused(ring[0][:32])  # part of it, in a tuple: still its memory
    assert held.reused((torch.ones(3), ring[1]))


def test_a_freed_output_is_forgotten_when_its_address_comes_back():
    held, seen, repeats = HeldOutputs(), set(), 0
    for _ in range(200):  # each output dropped once delivered, as an honest forward's
        out = torch.empty(1024)
        repeats += out.data_ptr() in seen
        seen.add(out.data_ptr())
        assert not held.reused(out)
        del out
    assert repeats  # the allocator did hand a freed block out again


def test_a_ring_of_numpy_arrays_wrapped_anew_each_call_is_reused():
    """Each wrapper (torch.from_numpy) is a fresh storage, freed once delivered; the arrays live on."""
    import numpy as np

    held, ring = HeldOutputs(), [np.zeros(64, np.float32) for _ in range(6)]
    assert [held.reused(torch.from_numpy(a)) for a in ring] == [False] * 6
    assert held.reused(torch.from_numpy(ring[0]))


def test_fresh_numpy_outputs_are_not_reused():
    """An output computed into a new array each call, dropped once delivered, is no ring."""
    import numpy as np

    held = HeldOutputs()
    for _ in range(100):
        out = torch.from_numpy(np.full(1024, 2.0, np.float32))
        assert not held.reused(out)
        del out


def test_memory_written_again_behind_a_new_address_is_reused():
    """The same pages mapped anew for each output (a memfd): no address span overlaps an earlier
    one's, yet the earlier output, kept, changes under the later call."""
    import mmap
    import os

    fd = os.memfd_create("ring")
    os.ftruncate(fd, 256)
    held, maps = HeldOutputs(), []

    def output(value: float) -> torch.Tensor:
        maps.append(mmap.mmap(fd, 256))
        out = torch.frombuffer(maps[-1], dtype=torch.float32)
        out.copy_(torch.arange(64.0) + value)
        return out

    try:
        first = output(0.0)
        assert not held.reused(first)
        second = output(1.0)
        assert second.data_ptr() != first.data_ptr()
        assert held.reused(second)
    finally:
        os.close(fd)


def test_outputs_kept_and_sampled_are_not_reused_when_left_alone():
    """Honest outputs, NaN among them (a sample compares bytes), each dropped once delivered."""
    held = HeldOutputs()
    for k in range(100):
        out = torch.full((64,), float("nan") if k % 2 else float(k))
        assert not held.reused(out)
        del out


def test_on_the_cpu_kept_outputs_are_let_go_of_between_runs_only():
    """The judge reads the growth of the sandbox's memory over a run (clock.fresh_memory_check): an older
    output freed inside the run would cut it. With let_go_between_runs the outputs past SAMPLED_KEPT stay
    until let_go (at the next Arm); without, the oldest goes as the next is kept."""
    import weakref

    from htam_engine.evaluate.checks.memory import SAMPLED_KEPT

    for between_runs in (True, False):
        held = HeldOutputs(let_go_between_runs=between_runs)
        first = torch.rand(8)
        gone = weakref.ref(first)
        held.reused(first)
        del first
        for _ in range(SAMPLED_KEPT):
            held.reused(torch.rand(8))
        assert (gone() is None) is not between_runs
        held.let_go()
        assert gone() is None
