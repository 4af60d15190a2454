"""The judge's side of a sandbox (forked by the zygote, see zygote_client.py).

Every wait on a sandbox has a deadline, watches the sandbox tree's memory, and turns whatever
goes wrong into one of four exceptions (the sandbox is dead after any of them): it did not
answer in time, it died, it used too much memory, or it said something the protocol does not
allow. A candidate sandbox's time is charged to the candidate's budget; stages the sandbox
announces as harness work (building the shared precompiled header) are not, up to their cap.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from htam_engine.evaluate import pch, proctree, wire
from htam_engine.evaluate.clock import CpuSnapshot
from htam_engine.evaluate.process import describe_exit, freeze_tree, kill_tree, tree_rss_mb
from htam_engine.evaluate.procstate import ProcessState, changes
from htam_engine.evaluate.protocol import ProtocolError, ReplyReader, send_request
from htam_engine.evaluate.shared import Exported
from htam_engine.evaluate.stages import Stage
from htam_engine.evaluate.zygote_client import HarnessStartError, SandboxLimits, ZygoteProcess

__all__ = ["Budget", "HarnessStartError", "SandboxDied", "SandboxLimits", "SandboxError", "SandboxMemory", "SandboxProcess",
           "SandboxProtocol", "SandboxTimeout", "ZygoteProcess", "fork_sandbox"]

POLL_S = 0.2
KILL_WAIT_S = 5.0
# SIGSTOP takes effect when a process is next scheduled (or leaves a system call it cannot be
# interrupted in): paused() waits up to this long for every process to report itself stopped.
STOP_SETTLE_S = 0.1


class SandboxError(Exception):
    """Base: the sandbox is dead (killed) after any of these."""


class SandboxTimeout(SandboxError):
    def __init__(self, stage: Stage, seconds: float):
        super().__init__(f"timed out after {seconds:g} s during {stage.value}")
        self.stage = stage


class SandboxDied(SandboxError):
    def __init__(self, stage: Stage, detail: str):
        super().__init__(f"the sandbox died during {stage.value}: {detail}")
        self.stage = stage


class SandboxMemory(SandboxError):
    def __init__(self, stage: Stage, used_mb: float, limit_mb: float):
        super().__init__(f"memory limit exceeded during {stage.value}: {used_mb:.0f} MB > {limit_mb:.0f} MB")
        self.stage = stage


class SandboxProtocol(SandboxError):
    """The sandbox wrote something that is not an expected message (candidate code in the channel)."""

    def __init__(self, stage: Stage, detail: str):
        super().__init__(f"the sandbox sent a malformed message during {stage.value}: {detail}")
        self.stage = stage


@dataclass
class Budget:
    """The candidate's timeout: seconds left, charged only while the candidate's sandbox works."""

    seconds: float
    spent: float = 0.0
    paused: dict[Stage, float] = field(default_factory=dict)

    @property
    def left(self) -> float:
        return self.seconds - self.spent

    def charge(self, stage: Stage, seconds: float) -> None:
        cap = stage.pause_cap_s
        if cap is not None and self.paused.get(stage, 0.0) < cap:
            self.paused[stage] = self.paused.get(stage, 0.0) + seconds
            return
        self.spent += seconds


class SandboxProcess:
    """One sandbox: requests in (pickled), checked msgpack replies out."""

    def __init__(self, pid: int, sock: socket.socket, role: str, exit_status: Callable[[int], int | None]):
        self.pid = pid
        self._exit_status = exit_status
        self.sock = sock
        self.role = role
        self.reader = ReplyReader(sock.fileno(), max_bytes=wire.MAX_SANDBOX_BYTES)
        self.seq = 0
        self.ready = False
        self.state: ProcessState | None = None  # read once it is ready (procstate)
        self.dead = False
        self.limits = SandboxLimits()
        self._pauses = 0  # paused() blocks entered and not left: only the outermost stops and continues

    def alive(self) -> bool:
        if self.dead:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return not _zombie(self.pid)

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def thread_cpu_ns(self) -> dict[str, int] | None:
        """CPU time each live thread of the sandbox has run, in ns, as the kernel accounts it (its
        /proc schedstat): the judge's own figure for how many cores a call used, which nothing in
        the sandbox can forge."""
        try:
            tasks = os.listdir(f"/proc/{self.pid}/task")
        except OSError:
            return None
        out: dict[str, int] = {}
        for tid in tasks:
            try:
                with open(f"/proc/{self.pid}/task/{tid}/schedstat", "rb") as f:
                    out[tid] = int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                continue  # a thread that ended meanwhile
        return out

    def cpu_snapshot(self) -> CpuSnapshot:
        """The sandbox's CPU time now, read from outside (clock.CpuSnapshot): the whole process's
        (user + system, every thread it ever had, the ended ones included) to the nanosecond from
        its CPU clock where the kernel lends it (clock_getcpuclockid), else at the tick of /proc
        stat (10 ms, which left a thread started and joined inside forward within a few ticks of
        the rule's floor); each live thread's; its children's that it waited for; and each
        process's below it (its CPU clock too: at the tick, a helper's 40 ms over the trials read
        as anything from 30 to 50, and a snapshot's truncation left some runs within the floor),
        with the children each waited for (proctree.cpu_with_reaped_ms)."""
        precise = proctree.cpu_clock_ms(self.pid)
        ticks = proctree.cpu_ticks_ms(self.pid)
        process_ms = precise if precise is not None else ticks[0] if ticks is not None else None
        below = {pid: proctree.cpu_with_reaped_ms(pid) for pid in proctree.descendants(self.pid)}
        return CpuSnapshot(process_ms, 0.0 if precise is not None else proctree.TICK_MS, self.thread_cpu_ns(),
                           ticks[1] if ticks is not None else None, below)

    def minor_faults(self) -> int | None:
        """The sandbox's minor page faults so far, read from outside (proctree.minor_faults)."""
        return proctree.minor_faults(self.pid)

    def memory_status(self) -> tuple[int | None, bool | None]:
        """The sandbox's resident anonymous memory now and whether huge pages may serve it, read from
        outside (proctree.memory_status)."""
        return proctree.memory_status(self.pid)

    def thread_count(self) -> int | None:
        """OS threads of the sandbox (its /proc task list stays readable while it is non-dumpable)."""
        try:
            return len(os.listdir(f"/proc/{self.pid}/task"))
        except OSError:
            return None

    def wait_ready(self, deadline_s: float) -> None:
        msg = self._wait(deadline_s, Stage.START, None, 0.0, None)
        reply = self._decode(msg, None, Stage.START)
        if not isinstance(reply, wire.Ready):
            self.kill()
            raise SandboxProtocol(Stage.START, f"a {type(reply).__name__} before it said it was ready")
        self.ready = True
        self.state = ProcessState.read(self.pid)

    def tampered(self) -> str:
        """What another process changed in this sandbox's limits or scheduling since it said it was
        ready ("" where nothing, or it is not ready yet): procstate's module docstring says why."""
        return changes(self.state, self.pid) if self.ready else ""

    def request(self, msg: Any, *, stage: Stage, deadline_s: float, budget: Budget | None, memory_mb: float,
                on_stage: Callable[[Stage], None] | None = None, fds: list[int] | None = None) -> Any:
        """Send one request and wait for its reply (a wire dataclass with the request's seq)."""
        if not self.ready:
            self.wait_ready(deadline_s)
        try:
            send_request(self.sock.fileno(), msg)
            if fds:
                socket.send_fds(self.sock, [b"F"], fds)
        except OSError as exc:
            self.kill()
            raise SandboxDied(stage, f"its channel failed ({exc.strerror or exc})") from None
        current = stage
        header_asked = False
        while True:
            raw = self._wait(deadline_s, current, budget, memory_mb, stage)
            reply = self._decode(raw, msg.seq, current)
            if isinstance(reply, wire.PchWanted):
                if stage is not Stage.COMPILE:
                    self.kill()
                    raise SandboxProtocol(current, "a request for a precompiled header outside a build")
                if not header_asked:  # one flag set counted (and at most one header built) a request
                    header_asked = True
                    self._build_header(reply, on_stage)
                try:
                    send_request(self.sock.fileno(), wire.PchDone())
                except OSError as exc:
                    self.kill()
                    raise SandboxDied(stage, f"its channel failed ({exc.strerror or exc})") from None
                continue
            if isinstance(reply, wire.Ready):
                self.kill()
                raise SandboxProtocol(current, "a second 'ready'")
            return reply

    @staticmethod
    def _build_header(asked: wire.PchWanted, on_stage: Callable[[Stage], None] | None) -> None:
        """The shared precompiled header a build asked for, counted and built here, in the judge
        (pch.wanted), never by the sandbox: its time is the PCH stage's, not the candidate's."""
        def on_build() -> None:
            if on_stage is not None:
                on_stage(Stage.PCH)

        if pch.wanted(asked.flags, asked.with_cuda, asked.name, on_build) and on_stage is not None:
            on_stage(Stage.COMPILE)

    def _decode(self, raw: dict[str, Any], seq: int | None, stage: Stage) -> Any:
        try:
            return wire.decode_reply(raw, seq)
        except wire.WireError as exc:
            self.kill()
            raise SandboxProtocol(stage, str(exc)) from None

    def _wait(self, deadline_s: float, stage: Stage, budget: Budget | None, memory_mb: float,
              request_stage: Stage | None) -> dict[str, Any]:
        """The next message, charging the time waited to `budget` (under the stage the sandbox is in)."""
        started = last = time.monotonic()
        while True:
            try:
                msg = self.reader.poll(POLL_S)
            except ProtocolError as exc:
                if not exc.closed:
                    self.kill()
                    raise SandboxProtocol(stage, str(exc)) from None
                code = self._reap()
                self.kill()
                raise SandboxDied(stage, describe_exit(code) if code is not None else str(exc)) from None
            except (OSError, ValueError) as exc:
                code = self._reap()
                self.kill()
                raise SandboxDied(stage, describe_exit(code) if code is not None else str(exc)) from None
            now = time.monotonic()
            if budget is not None:
                budget.charge(stage, now - last)
            last = now
            if msg is not None:
                return msg
            over = budget.left <= 0 if budget is not None else now - started > deadline_s
            if over:
                self.kill()
                raise SandboxTimeout(stage, budget.seconds if budget is not None else deadline_s)
            if memory_mb:
                used = tree_rss_mb(self.pid)
                if used > memory_mb:
                    self.kill()
                    raise SandboxMemory(stage, used, memory_mb)

    def _reap(self) -> int | None:
        """The sandbox's exit status once its channel closed (its parent, the zygote, reaps it)."""
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            code = self._exit_status(self.pid)
            if code is not None:
                return code
            time.sleep(0.05)
        return None

    def wait_idle(self, within_s: float) -> None:
        """Until the sandbox is back in its wait for the next request (it collects garbage after each
        reply), for at most `within_s`: the reference sandbox runs only while the candidate's tree is
        stopped, or a process of the candidate's could stop it mid-run and leave it stopped."""
        deadline = time.monotonic() + within_s
        while not self.dead and not proctree.waiting(self.pid) and time.monotonic() < deadline:
            time.sleep(0.0005)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The sandbox and every process it started stopped (SIGSTOP) for the block, round after
        round until no new one turns up (process.freeze_tree): nothing of the candidate's can run,
        load the host or queue device work while the baselines are timed or its judge waits."""
        if self._pauses:  # inside another pause (a wait for a lock while the baselines run)
            self._pauses += 1
            try:
                yield
            finally:
                self._pauses -= 1
            return
        if self.dead:
            yield
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGSTOP)
        family = [self.pid, *freeze_tree(self.pid)]  # round after round: a fork-hopper is stopped too
        _wait_stopped(family, STOP_SETTLE_S)
        self._pauses = 1
        try:
            yield
        finally:
            self._pauses = 0
            # The same processes, not the tree read again: a stopped process forks nothing, and one
            # forked before its parent stopped is in the sandbox's process group (continued by
            # killpg) unless it left it, and then it was never stopped.
            self._signal(family, signal.SIGCONT)

    def continue_(self) -> None:
        """SIGCONT to the sandbox: another candidate's sandbox, a sibling of the same user, may have
        stopped it (SIGSTOP) while it waited as the spare. A running process ignores it."""
        self._signal([self.pid], signal.SIGCONT)

    def _family(self) -> list[int]:
        return [self.pid, *proctree.descendants(self.pid)]

    def _signal(self, pids: list[int], sig: int) -> None:
        if self.dead:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)

    def attach(self, buffers: list[tuple[int, Exported]], fds: list[int], *, memory_mb: float) -> Any:
        msg = wire.Attach(self.next_seq(), buffers)
        return self.request(msg, stage=Stage.CHECK, deadline_s=120.0, budget=None, memory_mb=memory_mb, fds=fds)

    def kill(self) -> None:
        """Kill the sandbox's tree and wait (briefly) until the sandbox is gone: its memory, GPU
        context included, is free once this returns."""
        if not self.dead:
            kill_tree(self.pid, group=True)
            deadline = time.monotonic() + KILL_WAIT_S
            while not _zombie(self.pid) and time.monotonic() < deadline:
                time.sleep(0.01)
        self.dead = True
        with contextlib.suppress(OSError):
            self.sock.close()

    def close(self) -> None:
        if not self.dead:
            with contextlib.suppress(OSError):
                send_request(self.sock.fileno(), wire.Close(self.next_seq()))
        self.kill()


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def fork_sandbox(zygote: ZygoteProcess, role: str, device: str, limits: SandboxLimits) -> SandboxProcess:
    """A new sandbox from the zygote (HarnessStartError when it cannot fork one)."""
    pid, fd = zygote.fork(role, device, limits)
    sandbox = SandboxProcess(pid, socket.socket(fileno=fd), role, zygote.exit_status)
    sandbox.limits = limits
    return sandbox


def _wait_stopped(pids: list[int], within_s: float) -> None:
    """Until every process in `pids` is stopped or gone, for at most `within_s` seconds."""
    deadline = time.monotonic() + within_s
    pending = list(pids)
    while pending:
        pending = [pid for pid in pending if not proctree.settled(pid)]
        if not pending or time.monotonic() > deadline:
            return
        time.sleep(0.001)
