"""The judge's side of its zygote: the clean process sandboxes are forked from (zygote.py).

Free of torch, so a judge can launch its zygote before it imports torch itself and the two
import side by side.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import socket
import subprocess
import threading
from dataclasses import asdict, dataclass
from typing import Any

from htam_engine import settings
from htam_engine.evaluate.devicelock import judges_on_device
from htam_engine.evaluate.process import describe_exit, isolated_module_command, kill_tree
from htam_engine.evaluate.procstate import ProcessState, changes
from htam_engine.evaluate.protocol import ProtocolError, ReplyReader, send_request

ZYGOTE_START_S = 300.0
FORK_S = 60.0


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """What one sandbox is started under (from the evaluation's config)."""

    as_mb: int | None = None  # RLIMIT_AS, on the CPU only (CUDA maps far more than it uses)
    cpu_threads: int | None = None  # torch/OpenMP threads (the reference sandbox gets the same)
    file_mb: int | None = None  # RLIMIT_FSIZE: the largest file it may write (the sandbox_file_mb setting)
    compile_threads: int | None = None  # torch.compile's worker processes (TORCHINDUCTOR_COMPILE_THREADS)
    confine_writes: bool = True  # writes only beneath its own folders (landlock.py; the sandbox_confine_writes setting)

    @classmethod
    def of(cls, config: Any, device: str, role: str = "candidate") -> "SandboxLimits":
        as_mb = config.memory_limit_mb if role == "candidate" and not device.startswith("cuda") else None
        threads = config.cpu_threads if not device.startswith("cuda") else None
        return cls(int(as_mb) if as_mb else None, int(threads) if threads else None, settings.sandbox_file_mb(),
                   compile_threads(), settings.sandbox_confine_writes())


def compile_threads() -> int:
    """How many processes torch.compile may compile with in one sandbox: this machine's cores shared
    among the judges on the device. Left alone, inductor starts a pool of one worker per core (up to
    32) in every process that compiles for a GPU, each worker a Python with torch imported (over a GB
    of host memory, pytorch/pytorch#156187), kept until the compile ends: 16 judges of a pool on a
    16-core machine, each compiling its torch.compile baseline, would run up to 256 of them on 16
    cores. One thread compiles in the sandbox itself, with no pool."""
    return max(1, len(os.sched_getaffinity(0)) // judges_on_device())


class HarnessStartError(Exception):
    """The zygote or a sandbox could not be brought up: a harness fault."""


def zygote_command() -> list[str]:
    """The zygote's command line, behind `HTAM_WORKER_WRAPPER` when a site sets one.

    The wrapper is a command prefix (split like a shell would) that must run the rest of
    its arguments with the environment and open descriptors it was given: `env`,
    `bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --unshare-net --`, `nice -n 5`...
    Every sandbox is forked by the zygote, so it runs inside the wrapper too.
    """
    try:
        wrapper = shlex.split(settings.worker_wrapper())
    except ValueError as exc:
        raise HarnessStartError(f"the sandbox zygote cannot start: HTAM_WORKER_WRAPPER is not a valid command line "
                                f"({exc})") from None
    return [*wrapper, *isolated_module_command("htam_engine.evaluate.zygote")]


def _recv_message(sock: socket.socket, timeout_s: float, want_fd: bool) -> tuple[dict[str, Any], int | None]:
    """One framed msgpack message from the zygote, with the descriptor that came with its first byte."""
    sock.settimeout(timeout_s)
    try:
        data, fds, _flags, _addr = socket.recv_fds(sock, 65536, 1) if want_fd else (sock.recv(65536), [], 0, None)
    except (TimeoutError, socket.timeout):
        raise ProtocolError("no answer") from None
    finally:
        sock.settimeout(None)
    if not data:
        raise ProtocolError("closed", closed=True)
    reader = ReplyReader(sock.fileno(), max_bytes=4096)
    reader.feed(data)
    msg = reader.poll(timeout_s)
    if msg is None:
        raise ProtocolError("a truncated message")
    return msg, (fds[0] if fds else None)


class ZygoteProcess:
    """The clean process sandboxes are forked from (see zygote.py)."""

    def __init__(self, env: dict[str, str]):
        self.env = dict(env)
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.state: ProcessState | None = None  # read once it said it was ready, before any fork (procstate)
        self._lock = threading.Lock()  # one exchange at a time (a spare may be forked from a thread)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _continue(self) -> None:
        """SIGCONT before every request: a sandbox is a process of the zygote's user and may have
        stopped it (SIGSTOP); a stopped zygote still counts as alive and would never answer, and
        killing its tree as the remedy takes the sandboxes running from it along."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.proc.pid, signal.SIGCONT)

    def start(self) -> None:
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        """Start the process (its imports take seconds: the caller can do its own meanwhile)."""
        command = zygote_command()
        mine, theirs = socket.socketpair()
        env = {k: v for k, v in self.env.items() if k != "HTAM_WORKER_FDS"}
        env["HTAM_ZYGOTE_FD"] = str(theirs.fileno())
        try:
            self.proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, pass_fds=(theirs.fileno(),), env=env,
                                         close_fds=True)
        except OSError as exc:  # the wrapper (or the interpreter) cannot be run
            mine.close()
            raise HarnessStartError(f"the sandbox zygote failed to start ({exc})") from None
        finally:
            theirs.close()
        self.sock = mine

    def wait_ready(self) -> None:
        assert self.sock is not None and self.proc is not None
        try:
            msg, _ = _recv_message(self.sock, ZYGOTE_START_S, want_fd=False)
        except (ProtocolError, OSError) as exc:
            code = self.proc.poll()
            self.kill()
            why = describe_exit(code) if code is not None else str(exc)
            raise HarnessStartError(f"the sandbox zygote failed to start ({why})") from None
        if msg.get("t") != "ready":
            self.kill()
            raise HarnessStartError("the sandbox zygote failed to start (unexpected first message)")
        self.state = ProcessState.read(self.proc.pid)

    def tampered(self) -> str:
        """What another process changed in the zygote's limits or scheduling since it said it was
        ready ("" where nothing): every sandbox forked from it afterwards, the spare and the
        reference sandbox included, would inherit the change and read as untouched itself."""
        return changes(self.state, self.proc.pid) if self.alive() and self.state is not None else ""

    def fork(self, role: str, device: str, limits: "SandboxLimits") -> tuple[int, int]:
        """(pid, socket descriptor) of a new sandbox of `role` under `limits`."""
        with self._lock:
            return self._fork(role, device, limits)

    def _fork(self, role: str, device: str, limits: "SandboxLimits") -> tuple[int, int]:
        if not self.alive() or self.sock is None:
            self.kill()
            self.start()
        assert self.sock is not None
        self._continue()
        try:
            send_request(self.sock.fileno(), {"op": "fork", "role": role, "device": device, "limits": asdict(limits)})
            msg, fd = _recv_message(self.sock, FORK_S, want_fd=True)
        except (ProtocolError, OSError) as exc:
            self.kill()
            raise HarnessStartError(f"the zygote did not fork a sandbox ({exc})") from None
        pid = msg.get("pid")
        if msg.get("t") != "forked" or not isinstance(pid, int) or fd is None:
            self.kill()
            raise HarnessStartError("the zygote did not fork a sandbox (unexpected answer)")
        return pid, fd

    def exit_status(self, pid: int) -> int | None:
        """A sandbox's exit status once the zygote reaped it (None while it runs, or unknown)."""
        with self._lock:
            if self.sock is None or not self.alive():
                return None
            self._continue()
            try:
                send_request(self.sock.fileno(), {"op": "status", "pid": pid})
                msg, _ = _recv_message(self.sock, FORK_S, want_fd=False)
            except (ProtocolError, OSError):
                return None
        code = msg.get("code")
        return code if isinstance(code, int) else None

    def kill(self) -> None:
        if self.proc is not None:
            kill_tree(self.proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def close(self) -> None:
        """Closing its socket ends the zygote's loop (it kills its sandboxes on the way out)."""
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        self.kill()


