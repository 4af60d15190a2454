"""channel.call_run's order around the clock: the sandbox's figures are read, then the inputs are
written, then the clock starts with the Go. Reading the figures takes a file per sandbox thread;
between the writes and the Go, a candidate with thousands of idle threads had ~90 ms to compute
from the inputs off the clock (red-team pass 24)."""

from __future__ import annotations

import torch

from htam_engine.evaluate import wire
from htam_engine.evaluate.channel import Channel, Staged, Staging
from htam_engine.evaluate.stages import Stage

FIGURES = ("thread_count", "thread_cpu_ns", "minor_faults", "memory_status")


class RecordingSandbox:
    """A test double of sandbox_client.SandboxProcess: answers every request as a sandbox whose
    call succeeded would (a Called to the Go, an ok Outcome to the rest), and records everything
    the channel asks of it."""

    def __init__(self, events: list[str]):
        self.events = events
        self.seq = 0
        self.dead = False

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def request(self, msg, **_kw):
        self.events.append(type(msg).__name__)
        return wire.Called(msg.seq, True) if isinstance(msg, wire.Go) else wire.Outcome(msg.seq, True)

    def thread_count(self) -> int:
        self.events.append("thread_count")
        return 1

    def thread_cpu_ns(self) -> dict[int, int]:
        self.events.append("thread_cpu_ns")
        return {1: 0}

    def minor_faults(self) -> int:
        self.events.append("minor_faults")
        return 0

    def memory_status(self) -> tuple[int, bool]:
        self.events.append("memory_status")
        return 0, False

    def kill(self) -> None:
        self.dead = True


def test_inputs_are_written_after_the_sandboxs_figures_are_read_and_right_before_the_go():
    events: list[str] = []
    channel = Channel(RecordingSandbox(events), "cpu", 0.0, None)
    buffer = torch.zeros(8)

    class Logged(Staged):
        def write(self) -> None:
            events.append("write")
            super().write()

    staged = Logged(template=[], views=[buffer], staging=Staging.AFTER_WARM_UP, pending=[torch.ones(8)])
    channel.call_run([staged], "main", [torch.zeros(8)], [1], Stage.TIME)
    go = events.index("Go")
    before_go = events[:go]
    assert before_go[-1] == "write", events  # nothing of the judge's between the inputs and the clock
    assert all(name in before_go for name in FIGURES), events
    assert torch.equal(buffer, torch.ones(8))
