"""The engine's side of one worker process (a judge): start it, talk to it, watch it, kill it.

A worker starts in its own session (so killing its process group takes its zygote and
sandboxes along), with a scrubbed environment (no keys, tokens or secrets), and with its
stdout and stderr (and so every sandbox's) drained into a bounded log. The judge enforces the
candidate's timeout and memory ceiling on its sandboxes itself; the engine keeps a backstop
on the whole tree (a judge that does not answer in time is a harness fault).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import psutil

from htam_engine import settings
from htam_engine.evaluate.cache import cache_dir
from htam_engine.evaluate.devicelock import JUDGES_ENV
from htam_engine.evaluate.diagnostics import BoundedLog
from htam_engine.evaluate.protocol import ProtocolError, ReplyReader, send_request
from htam_engine.evaluate.stages import Stage, parse_stage

# Set per sandbox by its zygote from the request's limits, never inherited.
SANDBOX_LIMIT_ENV = ("HTAM_WORKER_AS_MB", "HTAM_WORKER_CPU_THREADS", "HTAM_WORKER_FILE_MB")
# Environment variables never handed to candidate code.
_SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.I)
START_TIMEOUT_S = 180.0
# Stages that are harness work, not the candidate's: they do not count against its timeout.
PAUSED_STAGES: dict[Stage, float] = {s: s.pause_cap_s for s in Stage if s.pause_cap_s is not None}
POLL_S = 0.2
KILL_MARGIN_S = 5.0
# The judge times the candidate out itself; the engine waits this much longer (plus the same
# again as the timeout, for the judge's own work on the outputs) before it gives up on the judge.
BACKSTOP_S = 60.0


class WorkerStartError(Exception):
    """The worker process could not be brought up; `log` holds its output."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class WorkerTimeout(Exception):
    def __init__(self, stage: Stage, seconds: float):
        super().__init__(f"the judge did not answer within {seconds:g} s (during {stage.value})")
        self.stage = stage


class WorkerCrash(Exception):
    def __init__(self, stage: Stage, detail: str):
        super().__init__(f"the judge died during {stage.value}: {detail}")
        self.stage = stage


class WorkerGarbled(WorkerCrash):
    """The worker wrote something that is not a reply."""

    def __init__(self, stage: Stage, detail: str):
        Exception.__init__(self, f"the judge sent a malformed reply during {stage.value}: {detail}")
        self.stage = stage


class WorkerMemory(Exception):
    def __init__(self, stage: Stage, used_mb: float, limit_mb: float):
        super().__init__(f"memory limit exceeded during {stage.value}: {used_mb:.0f} MB > {limit_mb:.0f} MB")
        self.stage = stage


def worker_env(device: str) -> dict[str, str]:
    """A judge's environment (and so its sandboxes'): the engine's without secrets, pinned to
    `device`. A candidate's own limits (address space, CPU threads) travel with each request."""
    env = {k: v for k, v in os.environ.items() if not _SECRET.search(k)}
    env.update(settings.environment())  # a value from a config file reaches the judge and its sandboxes too
    root = str(Path(__file__).resolve().parents[2])  # the folder holding htam_engine/
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env["HTAM_WORKER_DEVICE"], env["CUDA_VISIBLE_DEVICES"], env["HTAM_WORKER_LOCK"] = _pin_device(device)
    if env["CUDA_VISIBLE_DEVICES"] == "":
        env.pop("CUDA_VISIBLE_DEVICES")
    env["HTAM_CACHE_DIR"] = str(cache_dir())
    env.setdefault("TRITON_CACHE_DIR", str(cache_dir() / "triton"))
    if device == "cpu":
        env.setdefault("TRITON_INTERPRET", "1")  # the only way Triton kernels run on a CPU
        # The interpreter runs tl.dot through numpy, whose OpenBLAS the zygote loads before any
        # sandbox's thread setting exists (it reads this once, at load): on its own threads it
        # made an honest Triton matmul busy two cores against a baseline held to one, a
        # global_setting reject. One thread, as the baseline gets by default. (torch's MKL
        # follows torch's own thread setting, which each sandbox sets.)
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
    else:
        # Never inherited on a GPU: interpreted kernels copy to the host and back synchronously,
        # so timings are meaningless and work left on a side stream could not be seen.
        env.pop("TRITON_INTERPRET", None)
    for name in SANDBOX_LIMIT_ENV:
        env.pop(name, None)
    return env


# The judge's and the zygote's interpreters start isolated (-I: no PYTHON* variables, no user
# site, no script folder on sys.path), so no startup hook a sandbox could plant runs in them: a
# sitecustomize.py or usercustomize.py in a folder of PYTHONPATH or the user site (both writable
# by the sandboxes' user) ran in every zygote started after a candidate killed the current one,
# in every reference sandbox forked from it, and would in a judge started later. PYTHONPATH's
# folders are put back on sys.path once the interpreter has started (modules are found there as
# before), and the two variables the harness sets for its own processes are honoured by hand.
_BOOTSTRAP = """\
import os, site, sys
sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
if os.environ.get("PYTHONUNBUFFERED"):
    sys.stdout.reconfigure(write_through=True)
    sys.stderr.reconfigure(write_through=True)
user = site.getusersitepackages()
if os.path.isdir(user):  # its packages, without its .pth files or usercustomize
    at = next((i for i, p in enumerate(sys.path) if p.endswith("site-packages")), len(sys.path))
    sys.path.insert(at, user)
sys.path[:0] = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
import runpy
module = sys.argv.pop(1)
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def isolated_module_command(module: str) -> list[str]:
    """`python -m module` with no startup hook of a folder a sandbox can write (see _BOOTSTRAP)."""
    return [sys.executable, "-I", "-c", _BOOTSTRAP, module]


def worker_command() -> list[str]:
    """The judge's command line. It never runs candidate code, so a site's HTAM_WORKER_WRAPPER
    wraps the sandboxes (through their zygote), not the judge."""
    return isolated_module_command("htam_engine.evaluate.worker")


def _pin_device(device: str) -> tuple[str, str, str]:
    """(device the worker uses, its CUDA_VISIBLE_DEVICES or "", its timing-lock name).

    A worker for `cuda:N` sees only that GPU (as its `cuda`), so a candidate's kernels,
    which launch on the current device, always run where its tensors live; the timing
    lock is per physical GPU.
    """
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    if not device.startswith("cuda"):
        return device, visible, "time-cpu"
    ids = [x.strip() for x in visible.split(",") if x.strip()] if visible else []
    index = int(device.split(":", 1)[1]) if ":" in device else 0
    physical = ids[index] if index < len(ids) else str(index)
    if ":" not in device:
        return "cuda", visible, f"time-gpu{physical}"
    return "cuda", physical, f"time-gpu{physical}"


def hide_engine_from_workers() -> None:
    """Make this (the engine's) process non-dumpable on Linux, once, before a worker starts.

    A candidate runs as the same user, so without this it could read the engine's startup
    environment (API keys included) from /proc/<parent>/environ, or its memory, however well
    the worker's own environment was scrubbed. Non-dumpable processes' /proc entries belong to
    root and refuse ptrace from other processes of the user. (Root sees through it; so does a
    debugger run as root.)
    """
    global _hidden
    if _hidden or not sys.platform.startswith("linux"):
        return
    _hidden = True
    import ctypes

    pr_set_dumpable = 4
    try:
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


_hidden = False


def default_memory_limit_mb() -> float:
    """Without a configured limit, a worker tree may use 80 % of the machine's memory."""
    return psutil.virtual_memory().total * 0.8 / (1024 * 1024)


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants, in MB (0 when it is gone)."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total / (1024 * 1024)


# Rounds of stopping a tree's new descendants before it is killed: each round finds those forked
# since the last; a tree that still grows after this many is killed as it stands.
FREEZE_ROUNDS = 50
# Rounds in a row that must find nothing new: a child whose parent exited is re-parented a moment
# later, and a round in between sees neither.
STABLE_ROUNDS = 3


def freeze_tree(pid: int) -> list[int]:
    """SIGSTOP a process and every descendant it has, round after round until rounds find none not
    yet stopped (a stopped process forks nothing), each round read from the kernel's children lists
    (proctree: a fraction of a millisecond); the descendants stopped. Read once, a helper that kept
    forking and exiting was missed: every 2 ms outside the group, through psutil's scan of the whole
    process table (it outlived a kill), and back to back, through one read of the children lists
    (it spun on while its sandbox was paused, red-team pass 30)."""
    from htam_engine.evaluate.proctree import descendants

    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGSTOP)
    stopped: list[int] = []
    seen: set[int] = set()
    calm = 0
    for _ in range(FREEZE_ROUNDS):
        new = [p for p in descendants(pid) if p not in seen]
        for p in new:
            seen.add(p)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, signal.SIGSTOP)
                stopped.append(p)
        calm = 0 if new else calm + 1
        if calm >= STABLE_ROUNDS:
            break
        if not new:
            time.sleep(0.002)
    return stopped


def kill_tree(pid: int, group: bool = True) -> None:
    """SIGKILL a process, its process group (it leads one) and every descendant it has: frozen first
    (freeze_tree), then killed with every process group they belong to but the caller's."""
    stopped = freeze_tree(pid)
    ours = os.getpgrp()
    groups = {pid} if group else set()
    for p in stopped:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            groups.add(os.getpgid(p))
    for g in groups - {ours, 0, 1}:  # a group is killed at once, a child forked meanwhile included
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(g, signal.SIGKILL)
    family = []
    for p in [pid, *stopped]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, signal.SIGKILL)
        if p != pid:
            with contextlib.suppress(psutil.Error):
                family.append(psutil.Process(p))
    psutil.wait_procs(family, timeout=2)


def describe_exit(code: int | None) -> str:
    """'killed by SIGABRT', 'exited with status 3', ..."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


@dataclass(slots=True)
class Exchange:
    """What came back for one request."""

    reply: dict[str, Any]
    stage: str


class WorkerProcess:
    def __init__(self, device: str, judges_on_device: int | None = None):
        self.device = device
        self.judges_on_device = judges_on_device  # told to the judge (devicelock.JUDGES_ENV); None: not known
        self.log = BoundedLog()
        self.proc: subprocess.Popen | None = None
        self._to_worker = -1
        self._reader: ReplyReader | None = None
        self._drain: threading.Thread | None = None
        self.ready: dict[str, Any] = {}  # the judge's first message (its pid, device, dumpable flag)

    # ------------------------------------------------------------------ lifecycle
    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        command = worker_command()
        hide_engine_from_workers()
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        out_r, out_w = os.pipe()
        env = worker_env(self.device)
        env["HTAM_WORKER_FDS"] = f"{req_r},{rep_w}"
        if self.judges_on_device is not None:
            env[JUDGES_ENV] = str(self.judges_on_device)
        try:
            self.proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL, stdout=out_w, stderr=out_w,
                pass_fds=(req_r, rep_w), env=env, start_new_session=True, close_fds=True,
            )
        except OSError as exc:  # the wrapper (or the interpreter) cannot be run
            for fd in (req_w, rep_r, out_r):
                os.close(fd)
            raise WorkerStartError(f"evaluation judge failed to start ({exc})") from None
        finally:
            for fd in (req_r, rep_w, out_w):
                os.close(fd)
        self._to_worker = req_w
        self._reader = ReplyReader(rep_r)
        self._drain = threading.Thread(target=self._drain_output, args=(out_r,), name="htam-worker-output", daemon=True)
        self._drain.start()
        try:
            msg = self._reader.poll(timeout_s)
        except ProtocolError:
            msg = None
        self.ready = msg or {}
        if not msg or msg.get("t") != "ready":
            self.kill()
            tail = self.log.text().strip().splitlines()
            why = tail[-1] if tail else "no output"
            raise WorkerStartError(f"evaluation judge failed to start ({why})", self.log.text())

    def _drain_output(self, fd: int) -> None:
        try:
            while True:
                data = os.read(fd, 65536)
                if not data:
                    break
                self.log.write(data)
        except OSError:
            pass
        finally:
            os.close(fd)

    def kill(self) -> None:
        """Kill the worker and everything it started, including children that left its group."""
        proc = self.proc
        if proc is None:
            return
        kill_tree(proc.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        self._close_pipes()

    def _close_request_pipe(self) -> None:
        fd, self._to_worker = self._to_worker, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _close_pipes(self) -> None:
        self._close_request_pipe()
        if self._reader is not None:
            with contextlib.suppress(OSError):
                os.close(self._reader.fd)
            self._reader = None
        if self._drain is not None:
            self._drain.join(timeout=2)

    def close(self) -> None:
        """Ask politely (closing the request pipe ends the worker's loop), then make sure."""
        if self.proc is None:
            return
        self._close_request_pipe()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=3)
        self.kill()

    # ------------------------------------------------------------------ one request
    def request(self, msg: dict[str, Any], *, timeout_s: float, memory_limit_mb: float,
                on_message: Callable[[dict[str, Any]], None] | None = None) -> Exchange:
        """Send one request and wait for its final reply ("t": "result").

        Intermediate replies (stages, live trial times) go to `on_message`. timeout_s and
        memory_limit_mb are the backstop on the whole tree (the judge applies the candidate's own
        limits to its sandbox). Raises WorkerTimeout, WorkerCrash or WorkerMemory; the worker is
        dead after any of them.
        """
        assert self._reader is not None and self.proc is not None
        self.log.clear()
        stage = Stage.START
        try:
            send_request(self._to_worker, msg)
        except OSError as exc:
            self.kill()
            raise WorkerCrash(stage, f"request pipe failed ({exc.strerror or exc})") from None
        budget = float(timeout_s)
        paused: dict[Stage, float] = dict(PAUSED_STAGES)
        last = time.monotonic()
        while True:
            try:
                reply = self._reader.poll(POLL_S)
            except ProtocolError as exc:
                if not exc.closed:  # alive but garbling the channel: no use waiting for it to exit
                    self.kill()
                    raise WorkerGarbled(stage, str(exc)) from None
                code = self._reap()
                self.kill()
                raise WorkerCrash(stage, describe_exit(code) if code is not None else str(exc)) from None
            except (OSError, ValueError) as exc:  # pipes closed under us by a kill (a cancelled evaluation)
                code = self._reap()
                self.kill()
                detail = describe_exit(code) if code is not None else str(exc)
                raise WorkerCrash(stage, detail) from None
            now = time.monotonic()
            spent, last = now - last, now
            if stage in paused and paused[stage] > 0:
                paused[stage] -= spent
            else:
                budget -= spent
            if reply is not None:
                kind = reply.get("t")
                if kind == "result":
                    return Exchange(reply, stage)
                if kind == "stage" and parse_stage(reply.get("stage")) is not None:
                    stage = Stage(reply["stage"])
                if on_message:
                    try:
                        on_message(reply)
                    except Exception:  # noqa: BLE001 - a failing progress display must not strand the worker
                        on_message = None
                continue
            if budget <= 0:
                self.kill()
                raise WorkerTimeout(stage, timeout_s)
            used = tree_rss_mb(self.proc.pid)
            if used > memory_limit_mb:
                self.kill()
                raise WorkerMemory(stage, used, memory_limit_mb)

    def _reap(self) -> int | None:
        """The worker's exit status once its reply pipe closed (it may take a moment to exit)."""
        assert self.proc is not None
        try:
            return self.proc.wait(timeout=KILL_MARGIN_S)
        except subprocess.TimeoutExpired:
            return None
