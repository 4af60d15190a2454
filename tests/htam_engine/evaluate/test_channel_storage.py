"""The shared storages a Channel keeps for a sandbox: one per input slot, sized for the largest
layout the slot will hold (the main and the unseen-shape draws reserved together), and a storage
a slot outgrew detached and dropped, never kept beside its successor (issue 13: two input-sized
storages per slot were the judge's largest excess)."""

from __future__ import annotations

import torch

from htam_engine.evaluate import wire
from htam_engine.evaluate.channel import Channel, Staging


class FakeSandbox:
    """What a Channel asks of a sandbox, answered as an honest one would, every message kept."""

    dead = False

    def __init__(self, detach_ok: bool = True):
        self.messages: list = []
        self.detach_ok = detach_ok
        self._seq = 0

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def request(self, msg, **_kw):
        self.messages.append(msg)
        ok = self.detach_ok or not isinstance(msg, wire.Detach)
        return wire.Outcome(msg.seq, ok)

    def kill(self) -> None:
        self.dead = True

    def thread_count(self):
        return None


MAIN = (((64, 32), (32, 1), "torch.float32"), ((8,), (1,), "torch.int64"))
UNSEEN = (((96, 32), (32, 1), "torch.float32"), ((4,), (1,), "torch.int64"))


def test_main_and_unseen_layouts_reserved_together_give_one_storage_per_slot_of_the_larger_size():
    sandbox = FakeSandbox()
    channel = Channel(sandbox, "cpu", 0.0, None)
    channel.reserve_inputs(MAIN, UNSEEN)
    held = channel.storage_bytes()
    assert held["inputs"] == [96 * 32 * 4, 8 * 8]
    assert sorted(held["all"]) == sorted(held["inputs"])  # nothing else is held
    assert [type(m) for m in sandbox.messages] == [wire.Attach, wire.Attach]
    # Staging either draw reuses those storages: no new attach.
    for shape in ((64, 32), (96, 32)):
        channel.stage_inputs([torch.ones(shape), torch.arange(4)], Staging.NOW_COLD)
    assert len(sandbox.messages) == 2 and channel.storage_bytes() == held
    channel.close_after_death()


def test_a_slot_that_outgrows_its_storage_detaches_and_drops_the_old_one():
    sandbox = FakeSandbox()
    channel = Channel(sandbox, "cpu", 0.0, None)
    channel.reserve_inputs(MAIN)
    first = channel._in_slots[(0, 0)]
    channel.stage_inputs([torch.ones(128, 32), torch.arange(8)], Staging.NOW_COLD)
    assert sorted(channel.storage_bytes()["all"]) == [8 * 8, 128 * 32 * 4]
    detaches = [m for m in sandbox.messages if isinstance(m, wire.Detach)]
    assert [d.ids for d in detaches] == [[first]]
    assert first not in channel._storages and not channel._retired
    channel.close_after_death()


def test_a_storage_the_sandbox_would_not_drop_is_remembered_only_to_return_its_reference_at_death():
    sandbox = FakeSandbox(detach_ok=False)
    channel = Channel(sandbox, "cpu", 0.0, None)
    channel.reserve_inputs(MAIN)
    channel.stage_inputs([torch.ones(128, 32), torch.arange(8)], Staging.NOW_COLD)
    assert sorted(channel.storage_bytes()["all"]) == [8 * 8, 128 * 32 * 4]
    assert len(channel._retired) == 1 and channel._retired[0].bytes.numel() == 0  # its bytes released
    channel.close_after_death()
    assert not channel._retired
