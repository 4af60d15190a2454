"""The order of the judge's work on one input set (issue 13): its reference and float64 yardstick
are computed before any of the set reaches a sandbox, the inputs are written into the shared
buffers right before the calls are sent, and the judge never holds more input-sized buffers than
that order needs. Measured on a judge of this process, over real candidate sandboxes:

- every run of calls the candidate's channel sends is preceded directly by the staging of its
  inputs, with no reference or float64 run between the two;
- one call at a time (how a large set runs: rounds.RUN_MAX_BYTES), at the start of every reference
  and float64 forward and at every send, the judge's live tensors (found through the garbage
  collector, one figure per storage) add up to at most a few input sets: the drawn values, their
  float64 transient or a pristine copy, and the shared storages (the candidate's, and the
  baselines' during timed rounds).
A reference that changes its inputs in place still gets its inputs as drawn on both sides."""

from __future__ import annotations

import contextlib
import gc

import pytest
import torch

from cheats.harness import run_check, run_code
from htam_engine.evaluate import channel as channel_module
from htam_engine.evaluate import reference as reference_module
from htam_engine.evaluate import rounds as rounds_module
from htam_engine.evaluate.result import Status

SET_BYTES = 2 * 64 * 512 * 4  # one mse input set (two float32 tensors of 64 x 512)


def live_input_sets(min_bytes: int) -> float:
    """Bytes of every distinct storage of at least min_bytes behind a live tensor, in input sets."""
    seen: dict[int, int] = {}
    # One subclass test per type, not an isinstance per object: a test worker that ran other files
    # first holds millions of objects, and this runs at every forward and send of an evaluation.
    tensor_type: dict[type, bool] = {}
    live = []
    for obj in gc.get_objects():
        kind = type(obj)
        is_tensor = tensor_type.get(kind)
        if is_tensor is None:
            is_tensor = tensor_type[kind] = issubclass(kind, torch.Tensor)
        if is_tensor:
            live.append(obj)
    for obj in live:
        try:
            st = obj.untyped_storage()
        except Exception:  # noqa: BLE001 - a tensor without storage (meta, sparse)
            continue
        if st.nbytes() >= min_bytes and st.data_ptr():
            seen[st.data_ptr()] = max(seen.get(st.data_ptr(), 0), st.nbytes())
    return sum(seen.values()) / SET_BYTES


@pytest.fixture
def recorded(monkeypatch):
    """Events of the evaluation in order: ('stage', 'candidate'|'baseline'), ('call', 'candidate'|'baseline',
    input sets alive, phase) and ('forward', phase, input sets alive), the phase 'check' before the timed
    rounds, 'time' during them."""
    events: list[tuple[str, str, float]] = []
    phase = ["check"]
    real_time_rounds = rounds_module.TimedRounds._time_rounds
    real_seed_all, real_stage, real_call = reference_module.seed_all, channel_module.Channel.stage_inputs, \
        channel_module.Channel.call_run

    def who(ch) -> str:
        return "candidate" if ch.budget is not None else "baseline"

    before = live_input_sets(SET_BYTES // 4)  # other tests' tensors in this process, if any

    def alive() -> float:
        return live_input_sets(SET_BYTES // 4) - before

    def time_rounds(self, *a, **kw):
        phase[0] = "time"
        try:
            return real_time_rounds(self, *a, **kw)
        finally:
            phase[0] = "after"

    def seed_all(seed):  # called by ReferenceModel right before each forward, its inputs all made
        events.append(("forward", phase[0], alive()))
        return real_seed_all(seed)

    def stage_inputs(self, *a, **kw):
        events.append(("stage", who(self), 0.0))
        return real_stage(self, *a, **kw)

    def call(self, *a, **kw):
        events.append(("call", who(self), alive(), phase[0]))
        return real_call(self, *a, **kw)

    monkeypatch.setattr(rounds_module.TimedRounds, "_time_rounds", time_rounds)
    monkeypatch.setattr(reference_module, "seed_all", seed_all)
    monkeypatch.setattr(channel_module.Channel, "stage_inputs", stage_inputs)
    monkeypatch.setattr(channel_module.Channel, "call_run", call)
    return events


@pytest.mark.parametrize("per_run", [1, rounds_module.TRIALS_PER_RUN])
def test_inputs_reach_the_candidate_only_right_before_its_call_and_the_judge_holds_few_input_sets(recorded, monkeypatch,
                                                                                                   per_run):
    monkeypatch.setattr(rounds_module, "TRIALS_PER_RUN", per_run)
    r = run_check("mse", "honest_mse", time_compile_baseline=False, check_unseen_shape=False, trials=10)  # sets of one size
    assert r.status is Status.OK, (r.diagnostics.message, r.integrity)
    events = recorded
    calls = [i for i, e in enumerate(events) if e[:2] == ("call", "candidate")]
    assert len(calls) >= (10 + 10 // per_run if per_run > 1 else 10)
    for i in calls:
        assert events[i - 1][:2] == ("stage", "candidate"), events[max(0, i - 4):i + 1]
    # Between a candidate's staging and its call nothing of the judge's ran (another set of the same
    # run may be staged); and no staging of a set into the candidate's buffers happened before the
    # judge's forwards on that set.
    for i, e in enumerate(events):
        if e[:2] == ("stage", "candidate"):
            assert events[i + 1][:2] in (("call", "candidate"), ("stage", "candidate")), events[i:i + 3]
    if per_run > 1:
        return  # a run holds its sets together (RUN_MAX_BYTES bounds them); the figures below are one set's
    def most(kind: str, phase: str) -> float:
        return max(e[2] for e in events if e[0] == kind and (e[1] if kind == "forward" else e[3]) == phase
                   and (kind == "forward" or e[1] == "candidate"))

    figures = {(kind, phase): most(kind, phase) for kind in ("forward", "call") for phase in ("check", "time")}
    print("input sets alive at most:", {f"{k} {p}": round(v, 2) for (k, p), v in figures.items()})
    # The float64 forward of a checked set: the values, their float64 copy (2 sets), the candidate's
    # shared storage; of a timed round, the baselines' shared storage besides. Then less: the values and
    # a pristine copy (the float32 forward); at a checked send the values, the shared storage and the
    # pristine copy, written into it once the sandbox is armed and freed then; at a timed send the
    # values and the shared storages.
    slack = 0.25  # the output and the judge's other small tensors
    assert figures["forward", "check"] <= 4 + slack, figures
    assert figures["forward", "time"] <= 5 + slack, figures
    assert figures["call", "check"] <= 3 + slack, figures
    assert figures["call", "time"] <= 3 + slack, figures


def test_a_large_set_is_staged_first_with_the_sandbox_stopped_and_the_judge_holds_one_set_less(recorded, monkeypatch):
    """Over LARGE_INPUT_BYTES on CUDA (forced here on the CPU) a set is staged before the judge's own
    work on it, its yardstick taken from the staged copy and the judge's draw freed meanwhile: the
    float64 forward of a checked set holds the shared storage and the float64 copy (3 sets, not 4),
    of a picked timed round both sandboxes' storages and the copy (4, not 5). The candidate's
    sandbox is stopped from the staging to the call, so the set still reaches it only with the call."""
    from htam_engine.evaluate import sandbox_client
    from htam_engine.evaluate.checks import sequence as sequence_module

    monkeypatch.setattr(sequence_module, "stage_first", lambda values, device: True)
    monkeypatch.setattr(rounds_module, "stage_first", lambda values, device: True)
    monkeypatch.setattr(rounds_module, "TRIALS_PER_RUN", 1)  # a set this large runs one call at a time
    real_paused = sandbox_client.SandboxProcess.paused

    @contextlib.contextmanager
    def paused(self):
        recorded.append(("stopped", self.role, 0.0))
        with real_paused(self):
            yield
        recorded.append(("continued", self.role, 0.0))

    monkeypatch.setattr(sandbox_client.SandboxProcess, "paused", paused)
    r = run_check("mse", "honest_mse", time_compile_baseline=False, check_unseen_shape=False)
    assert r.status is Status.OK, (r.diagnostics.message, r.integrity)
    events = recorded
    stopped = False
    for i, e in enumerate(events):
        stopped = {"stopped": True, "continued": False}.get(e[0], stopped)
        if e[:2] == ("stage", "candidate") and events[i + 1][:2] != ("call", "candidate"):
            assert stopped, events[max(0, i - 3):i + 3]  # staged ahead of the judge's forwards: stopped till the call
    checked = max(e[2] for e in events if e[:2] == ("forward", "check"))
    timed = max(e[2] for e in events if e[:2] == ("forward", "time"))
    print("input sets alive at most: forward check", round(checked, 2), "forward time", round(timed, 2))
    assert checked <= 3 + 0.25 and timed <= 4 + 0.25, (checked, timed)


MUTATING_PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """Doubles its input in place, then adds one: a reference that changes its inputs."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.mul_(2.0)
        return x + 1.0


def get_inputs():
    return [torch.randn(64, 128)]


def get_init_inputs():
    return []
'''

OUT_OF_PLACE = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def twice_plus_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + 1.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        twice_plus_one[(triton.cdiv(x.numel(), 4096),)](x, y, x.numel(), BLOCK=4096)
        return y
'''


def test_a_reference_that_changes_its_inputs_still_sends_the_inputs_as_drawn(tmp_path, monkeypatch):
    """The candidate gets the drawn inputs, not the reference's doubled ones (its 2x + 1 would then be
    4x + 1), on the checked calls and on the timed ones."""
    from cheats import harness

    path = tmp_path / "mutating.py"
    path.write_text(MUTATING_PROBLEM)
    monkeypatch.setattr(harness, "problem_path", lambda name: path)
    harness._problem.cache_clear()
    try:
        r = run_code("mutating", OUT_OF_PLACE, check_unseen_shape=False)
    finally:
        harness._problem.cache_clear()
    assert r.status is Status.OK, (r.diagnostics.message, r.integrity)


def test_the_float64_forward_never_changes_the_inputs_the_reference_runs_on_next():
    """float64 and integer inputs too: the float64 copy gets copies (x.double() of a float64 input is
    the input itself, which a reference changing its inputs would change before its float32 run)."""
    import torch.nn as nn

    class Doubling(nn.Module):
        def forward(self, x, n):
            x.mul_(2.0)
            n.add_(1)
            return x + n

    ref = reference_module.ReferenceModel(Doubling, [], 0, "cpu")
    x, n = torch.ones(4, dtype=torch.float64), torch.zeros(4, dtype=torch.int64)
    exact = ref.exact([x, n], 1)
    assert torch.equal(x, torch.ones(4, dtype=torch.float64)) and torch.equal(n, torch.zeros(4, dtype=torch.int64))
    assert torch.equal(exact, torch.full((4,), 3.0, dtype=torch.float64))
    assert torch.equal(ref.outputs([x, n], 1, "x"), exact)


def test_the_float64_copy_is_made_after_the_freed_blocks_went_back(monkeypatch):
    # On CUDA a set's freed blocks cannot hold its float64 copy (twice the size): they are
    # returned before the copy is allocated, and the copy's own after it is freed.
    order: list[str] = []
    real_to_double = reference_module._to_double
    monkeypatch.setattr(reference_module, "return_cached_blocks", lambda inputs: order.append("returned"))
    monkeypatch.setattr(reference_module, "_to_double", lambda x: (order.append("float64 copy"), real_to_double(x))[1])

    class Twice(torch.nn.Module):
        def forward(self, x):
            return x * 2

    ref = reference_module.ReferenceModel(Twice, [], 0, "cpu")
    out = ref.exact([torch.ones(4)], 1)
    assert out.dtype == torch.float64 and order == ["returned", "float64 copy", "returned"]

