"""The judge's side of a sandbox: shared buffers, the message schema, pausing a candidate's tree.

A real zygote and real sandboxes (forked from it) run here; no judge is involved.
"""

from __future__ import annotations

import os
import time

import psutil
import pytest
import torch

from htam_engine.evaluate import landlock, wire
from htam_engine.evaluate.config import EvalConfig
from htam_engine.evaluate.process import worker_env
from htam_engine.evaluate.sandbox_client import SandboxLimits, fork_sandbox
from htam_engine.evaluate.shared import Layout, SharedStorage, attach, view
from htam_engine.evaluate.stages import Stage
from htam_engine.evaluate.zygote_client import ZygoteProcess


@pytest.fixture(scope="module")
def zygote():
    z = ZygoteProcess(worker_env("cpu"))
    z.start()
    yield z
    z.close()


def test_a_shared_storage_is_one_memory_under_any_layout_that_fits():
    lay = Layout((3, 4), (1, 3), 0, "float32")  # a transposed layout: strides kept
    storage = SharedStorage(lay.nbytes, "cpu")
    try:
        mine = storage.view(lay)
        mine.copy_(torch.arange(12.0).reshape(3, 4))
        theirs = view(attach(storage.export(), os.dup(storage.fd), "cpu"), lay, "cpu")
        assert theirs.stride() == (1, 3) and torch.equal(theirs, mine)
        theirs.mul_(2)  # what the other side writes, this side reads
        assert float(mine[2, 3]) == 22.0
        ints = view(attach(storage.export(), os.dup(storage.fd), "cpu"), Layout((6,), (1,), 0, "int64"), "cpu")
        assert ints.numel() == 6  # the same bytes, another dtype
        with pytest.raises(ValueError):
            storage.view(Layout((100,), (1,), 0, "float32"))
    finally:
        storage.close()


@pytest.mark.parametrize("msg,why", [
    ([1, 2], "not a map"),
    ({"t": "result", "result": {"status": "ok"}}, "unknown type"),
    ({"t": "called", "seq": 1, "ok": True, "verdict": "ok"}, "unknown field"),
    ({"t": "called", "seq": 1, "ok": "yes"}, "malformed"),
    ({"t": "called", "seq": 7, "ok": True}, "request 7"),
    ({"t": "called", "seq": 1, "ok": True, "outputs": [{"path": "", "kind": "number", "type_name": "x",
                                                        "value": {"nested": 1}}]}, "output value"),
])
def test_anything_but_an_expected_reply_is_refused(msg, why):
    with pytest.raises(wire.WireError, match=why):
        wire.decode_reply(msg, expected_seq=1)


def test_a_well_formed_reply_round_trips():
    reply = wire.Called(3, True, ms=1.5, outputs=[wire.LeafMeta("[0]", "tensor", "Tensor", [2], [1], "float32", "cpu")],
                        notes=[wire.Note("timer_tamper", "x")])
    assert wire.decode_reply(wire.encode_reply(reply), expected_seq=3) == reply


FORKS_A_SLEEPER = """
import os
if os.fork() == 0:
    os.execvp("sleep", ["sleep", "4244.5"])
class ModelNew:
    pass
"""


def test_paused_stops_the_sandbox_and_everything_it_started(zygote):
    sandbox = fork_sandbox(zygote, "candidate", "cpu", SandboxLimits())
    try:
        reply = sandbox.request(wire.Build(sandbox.next_seq(), FORKS_A_SLEEPER, "paused-test", "cpp"),
                                stage=Stage.COMPILE, deadline_s=120, budget=None, memory_mb=0)
        assert reply.ok, reply.message
        family = [psutil.Process(p) for p in sandbox._family()]
        assert len(family) == 2
        deadline = time.monotonic() + 5  # the child forks before it execs sleep
        while time.monotonic() < deadline and family[1].name() != "sleep":
            time.sleep(0.02)
        with sandbox.paused():
            assert {p.status() for p in family} == {psutil.STATUS_STOPPED}
            with sandbox.paused():  # a wait for a lock while the baselines run (DeviceLock.waiting)
                pass
            time.sleep(0.1)
            assert {p.status() for p in family} == {psutil.STATUS_STOPPED}  # the inner pause continued nothing
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(p.status() == psutil.STATUS_STOPPED for p in family):
            time.sleep(0.02)
        assert not any(p.status() == psutil.STATUS_STOPPED for p in family)
    finally:
        sandbox.kill()
    assert not psutil.pid_exists(family[1].pid) or family[1].status() == psutil.STATUS_ZOMBIE


FD_PROBE = """
import os, resource
fds = []
for f in sorted(os.listdir("/proc/self/fd"), key=int)[3:]:
    try:
        target = os.readlink(f"/proc/self/fd/{f}")
        fds.append("own /proc" if target == f"/proc/{os.getpid()}" else target.split(":")[0])
    except OSError:
        pass  # the listing's own descriptor, closed by now
import torch._inductor.config as inductor  # what torch.compile will compile with, decided at its import
raise SystemExit(f"{','.join(fds)} {resource.getrlimit(resource.RLIMIT_AS)[0]} {os.environ.get('OMP_NUM_THREADS')} "
                 f"{inductor.compile_threads}")
"""


def test_a_sandbox_has_no_descriptor_of_its_parent_and_its_own_limits(zygote):
    sandbox = fork_sandbox(zygote, "candidate", "cpu", SandboxLimits(as_mb=5000, cpu_threads=1, compile_threads=3))
    try:
        reply = sandbox.request(wire.Build(sandbox.next_seq(), FD_PROBE, "fd-probe", "cpp"), stage=Stage.COMPILE,
                                deadline_s=120, budget=None, memory_mb=0)
    finally:
        sandbox.kill()
    assert not reply.ok and "SystemExit" in reply.message
    fds, as_limit, threads, compile_threads = reply.message.split("SystemExit: ", 1)[1].rsplit(" ", 3)
    # Past stdin, stdout and stderr: its own socket, the build's lock file (held while it imports)
    # and, where writes are confined, its own /proc folder (the ruleset's hold on it: landlock.py),
    # nothing of the judge's or the zygote's (no other socket, no pipe, no other process's folder).
    others = fds.split(",")
    assert others.count("socket") == 1 and "pipe" not in others, others
    assert others.count("own /proc") == (landlock.abi_version() > 0), others  # where it confines its writes
    assert all(f in ("socket", "own /proc") or f.endswith(".lock") for f in others), others
    assert int(as_limit) == 5000 * 1024 * 1024 and threads == "1" and compile_threads == "3"


def test_torch_compile_in_a_sandbox_shares_the_cores_with_the_other_judges_on_its_device(monkeypatch):
    """Each sandbox's torch.compile gets the machine's cores divided among the judges on the device
    (a pool of 16 on a 16-core machine: one each, so no sandbox starts inductor's worker pool)."""
    from htam_engine.evaluate.devicelock import JUDGES_ENV

    cores = len(os.sched_getaffinity(0))
    monkeypatch.setenv(JUDGES_ENV, "1")
    assert SandboxLimits.of(EvalConfig(), "cuda").compile_threads == cores
    monkeypatch.setenv(JUDGES_ENV, str(cores * 4))
    assert SandboxLimits.of(EvalConfig(), "cuda").compile_threads == 1
    assert SandboxLimits.of(EvalConfig(), "cpu", "reference").compile_threads == 1


def test_a_cuda_sandbox_polls_for_its_next_request_then_leaves_it_to_the_read():
    """The poll before the read (timing.POLL_BEFORE_SLEEP_NS) returns at once when a request is
    waiting, gives up after its bound when none comes, and reads nothing either way."""
    import socket

    from htam_engine.evaluate.sandbox import Sandbox
    from htam_engine.evaluate.timing import POLL_BEFORE_SLEEP_NS

    ours, theirs = socket.socketpair()
    try:
        box = Sandbox.__new__(Sandbox)  # only what the poll reads: the socket, the device, its length
        box.fd, box.device, box._poll_ns = ours.fileno(), "cuda", POLL_BEFORE_SLEEP_NS
        t0 = time.perf_counter_ns()
        box._poll_for_request()  # nothing sent: the bound ends it
        assert time.perf_counter_ns() - t0 >= POLL_BEFORE_SLEEP_NS
        theirs.sendall(b"request")
        box._poll_for_request()
        assert ours.recv(16) == b"request"  # still there for the read
    finally:
        ours.close()
        theirs.close()


def test_the_poll_after_an_arm_lasts_as_long_as_writing_its_calls_inputs_may_take():
    """8 GiB of inputs (1/94_MSELoss) take longer to write than the 5 ms the poll had for any run,
    so the forward after them would wake cold. The poll's length follows the armed calls' input bytes."""
    from htam_engine.evaluate.checks.memory import HeldOutputs
    from htam_engine.evaluate.sandbox import CANDIDATE, Sandbox
    from htam_engine.evaluate.timing import POLL_BEFORE_SLEEP_NS, POLL_MAX_NS, poll_before_sleep_ns

    assert poll_before_sleep_ns(0) == POLL_BEFORE_SLEEP_NS
    assert poll_before_sleep_ns(8 << 30) >= POLL_BEFORE_SLEEP_NS + 8_000_000  # at most 1 byte a nanosecond
    assert poll_before_sleep_ns(1 << 40) == POLL_MAX_NS
    lay = Layout((256, 1024), (1024, 1), 0, "float32")  # 1 MiB a call
    box = Sandbox.__new__(Sandbox)  # only what an Arm without a warm-up reads
    box.device, box.role, box.models = "cpu", CANDIDATE, {"main": lambda x: x}
    box.buffers = {i: SharedStorage(lay.nbytes, "cpu").bytes for i in range(3)}
    box._armed, box._poll_ns = None, POLL_BEFORE_SLEEP_NS
    box._returned = HeldOutputs(let_go_between_runs=True)  # an Arm lets go of the older kept outputs
    calls = [wire.Call([wire.BufRef(i, lay)], [], "nan") for i in range(2)]
    assert box.arm(wire.Arm(1, "main", calls, warm=False)).ok
    assert box._poll_ns == poll_before_sleep_ns(2 * lay.nbytes) > POLL_BEFORE_SLEEP_NS


def test_a_candidate_too_large_to_copy_warms_up_on_the_shared_buffers_of_its_last_call():
    """No private copy past WARM_COPY_MAX_BYTES: a candidate's warm-up (which always comes before
    the judge writes the next inputs) runs on the buffers while they hold its last call's layout;
    never on another layout written since, and never in the reference sandbox, whose baseline
    warm-up may follow the staging."""
    from htam_engine.evaluate.sandbox import CANDIDATE, REFERENCE, Sandbox

    lay = Layout((4, 8), (8, 1), 0, "float32")
    storage = SharedStorage(lay.nbytes, "cpu")
    seen: list[int] = []

    def forward(x: torch.Tensor) -> torch.Tensor:
        seen.append(x.data_ptr())
        return x

    box = Sandbox.__new__(Sandbox)  # only what a warm-up reads
    box.device, box.role, box.models, box.buffers = "cpu", CANDIDATE, {"main": forward}, {0: storage.bytes}
    template = [wire.BufRef(0, lay)]
    box._decoy, box._called_with, box._last_call = None, {"main": template}, template
    box._warm("main")
    assert seen == [storage.view(lay).data_ptr()]
    box._last_call = [wire.BufRef(0, Layout((32,), (1,), 0, "float32"))]  # a call of another layout since
    box._warm("main")
    box.role, box._last_call = REFERENCE, template
    box._warm("main")
    box.role, box.buffers = CANDIDATE, {}  # detached
    box._warm("main")
    assert len(seen) == 1


def test_a_cuda_sandbox_polls_only_between_an_arm_and_its_go():
    """After answering an Arm (its warm-up done) it polls (the Go comes at once); after any other
    reply it collects and sleeps in the read at once, which the judge waits for before a candidate
    runs again beside the reference sandbox (a poll there would add its length to every timed round)."""
    import socket

    from htam_engine.evaluate.protocol import send_request
    from htam_engine.evaluate.sandbox import Sandbox

    ours, theirs = socket.socketpair()
    box = Sandbox.__new__(Sandbox)
    box.sock, box.fd, box.device, box.role = theirs, theirs.fileno(), "cuda", "reference"
    polls_before: list[str] = []
    box._poll_for_request = lambda: polls_before.append("poll")
    box.arm = lambda req: wire.Outcome(req.seq, True)
    box.detach = lambda req: (polls_before.append(f"handled {type(req).__name__}"), wire.Outcome(req.seq, True))[1]
    box.go = box.detach
    for req in (wire.Arm(1, "eager", []), wire.Go(2, []), wire.Arm(3, "eager", []), wire.Detach(4, []), wire.Close(5)):
        send_request(ours.fileno(), req)
    try:
        assert box.serve() == 0
    finally:
        ours.close()
        theirs.close()
    assert polls_before == ["poll", "handled Go", "poll", "handled Detach"]


RUN_MODEL = """
import torch
class ModelNew(torch.nn.Module):
    def forward(self, x):
        if float(x.reshape(-1)[0]) == 2.0:
            raise ValueError("a two")
        return x * 2
"""


def test_a_run_of_calls_answers_each_in_order_and_ends_at_the_first_that_fails(zygote):
    """One Arm and one Go for several calls (rounds.TRIALS_PER_RUN): each call reads its own input
    buffers and writes its own output buffers, the replies come in the calls' order, the wall time
    is shared evenly, and a call that raises is the run's last reply (the calls after it do not run)."""
    from htam_engine.evaluate.channel import Channel, Staging

    sandbox = fork_sandbox(zygote, "candidate", "cpu", SandboxLimits())
    channel = Channel(sandbox, "cpu", 0.0, None)

    def run(*fills: float) -> list:
        staged = [channel.stage_inputs([torch.full((4,), v)], Staging.AFTER_WARM_UP, slot=k) for k, v in enumerate(fills)]
        return channel.call_run(staged, "main", [torch.zeros(4)] * len(fills), list(range(len(fills))), Stage.CHECK)

    try:
        reply = sandbox.request(wire.Build(sandbox.next_seq(), RUN_MODEL, "run-test", "cpp"), stage=Stage.COMPILE,
                                deadline_s=120, budget=None, memory_mb=0)
        assert reply.ok, reply.message
        reply = channel.request(wire.Construct(channel.next_seq(), "main", [], 0), Stage.CHECK)
        assert reply.ok, reply.message
        done = run(1.0, 3.0, 4.0)
        assert [r.reply.ok for r in done] == [True, True, True]
        assert [float(next(iter(r.outputs.values()))[0]) for r in done] == [2.0, 6.0, 8.0]
        assert len({r.wall_ms for r in done}) == 1
        failed = run(1.0, 2.0, 3.0)
        assert [r.reply.ok for r in failed] == [True, False] and "a two" in failed[1].reply.message
        assert [float(next(iter(r.outputs.values()))[0]) for r in run(5.0)] == [10.0]  # the sandbox goes on
    finally:
        sandbox.kill()
        channel.close_after_death()


ASKS_FOR_A_HEADER = """
import gc
from htam_engine.evaluate.sandbox import Sandbox

def ask():  # what a build's load_inline does through compile_cache (flags the judge builds nothing for)
    box = next(o for o in gc.get_objects() if isinstance(o, Sandbox))
    box._ask_for_header(["-fplugin=/nonexistent.so"], False, "asked_ext")

ask()  # at import: within the Build
class ModelNew:
    def __init__(self):
        ask()  # within a Construct: no build is going on
"""


def test_a_header_request_is_answered_within_a_build_and_refused_outside_one(zygote):
    """The judge answers a build's request for a precompiled header (PchDone, which the build waits
    for) and kills a sandbox that asks outside a build: the request makes the judge run gcc, which
    only a build may ask for."""
    from htam_engine.evaluate.sandbox_client import SandboxProtocol

    sandbox = fork_sandbox(zygote, "candidate", "cpu", SandboxLimits())
    try:
        reply = sandbox.request(wire.Build(sandbox.next_seq(), ASKS_FOR_A_HEADER, "asks-header", "cpp"),
                                stage=Stage.COMPILE, deadline_s=120, budget=None, memory_mb=0)
        assert reply.ok, reply.message  # answered: the import went on past its request
        with pytest.raises(SandboxProtocol, match="precompiled header outside a build"):
            sandbox.request(wire.Construct(sandbox.next_seq(), "main", [], 0), stage=Stage.CHECK, deadline_s=60,
                            budget=None, memory_mb=0)
        assert sandbox.dead
    finally:
        sandbox.kill()


def test_the_zygote_and_each_sandbox_name_themselves_by_their_role(zygote):
    """What ps, top and the device's process list show (gpu_holders tells the holders apart by it)."""
    def comm(pid: int) -> str:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()

    assert zygote.proc is not None and comm(zygote.proc.pid) == "htam-zygote"
    for role in ("candidate", "reference"):
        sandbox = fork_sandbox(zygote, role, "cpu", SandboxLimits())
        try:
            deadline = time.monotonic() + 10  # the fork is answered before the child runs its first line
            while comm(sandbox.pid) == "htam-zygote" and time.monotonic() < deadline:
                time.sleep(0.01)
            assert comm(sandbox.pid) == f"htam-{role}"
        finally:
            sandbox.kill()
