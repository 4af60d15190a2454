"""The zygote: a clean process that has imported torch and the sandbox code, and forks sandboxes.

Run as `python -m htam_engine.evaluate.zygote` by the judge (behind HTAM_WORKER_WRAPPER when a
site sets one, so every sandbox runs inside the wrapper too), with one socket in
HTAM_ZYGOTE_FD. It never initializes CUDA and never runs a model, so a fork of it is a fresh
sandbox in tens of milliseconds instead of a 2-3 s interpreter start; each child initializes
CUDA itself.

For each request it forks a sandbox whose only descriptors are stdin/stdout/stderr and its own
end of a new socket pair (the other end goes to the judge with the child's pid). The child
gets a session of its own, the sandbox resource limits, and dies with the zygote. The zygote
is a child subreaper: a process a candidate double-forked away is re-parented here and killed
at the next sweep (any child that is not a live sandbox). It is non-dumpable, so a candidate
running as the same user cannot ptrace it to reach sandboxes forked later.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import resource
import select
import signal
import socket
import sys
import tempfile
from dataclasses import dataclass
from typing import Any, Callable

from htam_engine.evaluate import landlock, limits, owned_tree, seccomp, shm_sweep

SWEEP_S = 0.5


def _clean_up(action: Callable[..., object], *args: Any) -> None:
    """A cleanup that failed is said on stderr, never let through: a zygote that died of one (a
    RecursionError on a chain of folders 4,000 deep) took its reference and spare sandboxes along,
    and one that died at its start, removing what a dead zygote left, kept every later judge from
    evaluating anything (red-team pass 27, cheat_deep_private_tree)."""
    try:
        action(*args)
    except Exception as exc:  # noqa: BLE001 - whatever a sandbox's leftovers make a cleanup raise
        print(f"htam zygote: {action.__qualname__} failed: {exc!r}", file=sys.stderr)


def _import_everything() -> None:
    """What every sandbox needs, imported once here (shared copy-on-write by every fork)."""
    import torch  # noqa: F401
    import torch.utils.cpp_extension  # noqa: F401

    try:
        import triton  # noqa: F401
        import triton.language  # noqa: F401
    except Exception:  # noqa: BLE001 - no triton on this machine
        pass
    from htam_engine.evaluate import sandbox  # noqa: F401
    from htam_engine.problems import loader  # noqa: F401
    from htam_engine.session import codec  # noqa: F401 - the sandbox's replies are encoded with it


def _close_all_but(*keep: int) -> None:
    """Close every open descriptor not in `keep` (read from /proc: closing up to the descriptor
    limit one by one can take half a second where close_range is missing)."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0]))
    for fd in fds:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


# This sandbox's compile caches' folder (_private_compile_caches), for the sandbox's own code to
# renew them (the zygote runs as __main__: a module global would be another copy's).
PRIVATE_ROOT_ENV = "HTAM_PRIVATE_COMPILE_ROOT"


def _private_compile_caches(root: str) -> None:
    """Every sandbox compiles (torch.compile, Triton) into caches of its own, made now and empty:
    inductor and Triton load a generated module or kernel they find in their cache folder as it
    is, and a shared folder is writable by every sandbox of the user. A candidate that compiled
    the problem's Model itself and slowed the files it generated slowed the torch.compile
    baseline of every later evaluation; one that compiled a product and rewrote the generated
    wrapper to scale its result made a later honest candidate that calls torch.compile
    incorrect (cheat_inductor_poison). (The judge also stops the candidate's processes while the
    reference sandbox compiles: see Evaluation.run.) `root` is made by the zygote, which removes
    it once the sandbox has exited (Zygote.sweep, kill_all). What this costs: a kernel an
    earlier evaluation compiled is compiled again."""
    os.environ[PRIVATE_ROOT_ENV] = root
    renew_private_compile_caches()


def renew_private_compile_caches() -> None:
    """The sandbox's compile caches in a new folder under its root, what was there before removed:
    at the fork, and again when its first request arrives. A spare sandbox is forked while the
    judge's current candidate runs, and that candidate found the spare's caches in the shared
    temporary folder and planted an inductor wrapper returning the product times 1.5 under the name inductor looks for; the next
    honest torch.compile candidate was judged incorrect (cheat_spare_private_cache). The candidate
    before is gone by then (the judge kills its tree before the next evaluation). The reference
    sandbox renews too, for a baseline compiled in a folder no earlier candidate saw. Candidates of
    other judges running at the same time can still reach it (README: one user's processes)."""
    root = os.environ.get(PRIVATE_ROOT_ENV)
    if not root or not os.path.isdir(root):
        return
    fresh = tempfile.mkdtemp(prefix="caches-", dir=root)
    for entry in os.listdir(root):
        if entry != os.path.basename(fresh):
            owned_tree.remove(os.path.join(root, entry))
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(fresh, "inductor")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(fresh, "triton")
    # A build outside the shared cache's key (a candidate's load_inline after its import) and every
    # compiler's and tempfile's scratch go here too: a sandbox writes nowhere else (landlock.py).
    os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(fresh, "torch_extensions")
    # the CUDA driver's JIT cache and PyTorch's jiterator kernels, which default to the home folder
    os.environ["CUDA_CACHE_PATH"] = os.path.join(fresh, "nv")
    os.environ["PYTORCH_KERNEL_CACHE_PATH"] = os.path.join(fresh, "torch_kernels")
    scratch = os.path.join(fresh, "tmp")
    os.makedirs(scratch, exist_ok=True)
    os.environ["TMPDIR"] = scratch
    tempfile.tempdir = scratch  # the zygote's tempfile had settled on the machine's own


def _child(sock: socket.socket, zygote_sock: socket.socket, role: str, device: str, bounds: dict[str, Any],
           private: str) -> None:
    """The forked child: cut loose from the zygote, take its limits (`bounds`: the fields of
    zygote_client.SandboxLimits), serve as a sandbox. Never returns."""
    code = 1
    try:
        limits.name_process(role)
        cpu_threads, compile_threads = bounds.get("cpu_threads"), bounds.get("compile_threads")
        for name, value in (("HTAM_WORKER_AS_MB", bounds.get("as_mb")), ("HTAM_WORKER_CPU_THREADS", cpu_threads),
                            ("HTAM_WORKER_FILE_MB", bounds.get("file_mb"))):
            if value:
                os.environ[name] = str(int(value))
            else:
                os.environ.pop(name, None)
        if cpu_threads:
            os.environ["OMP_NUM_THREADS"] = str(int(cpu_threads))
        if compile_threads:  # torch.compile's worker pool (zygote_client.compile_threads says why)
            os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = str(int(compile_threads))
        _private_compile_caches(private)
        zygote_sock.close()
        os.setsid()
        parent = os.getppid()
        limits.die_with_parent(signal.SIGKILL)
        if os.getppid() != parent:  # the zygote died before the flag was set
            os._exit(1)
        limits.adopt_orphans()  # what the candidate double-forks stays in this tree
        unfiltered = seccomp.install()  # ... and nothing it starts can leave it (seccomp.py)
        if unfiltered:
            print(f"htam sandbox: {unfiltered}: processes cloned beside it are not prevented", file=sys.stderr)
        # ... nor write outside its folders (unless a site turned that off: sandbox_confine_writes)
        unconfined = confine_writes(private) if bounds.get("confine_writes", True) else None
        if unconfined:
            print(f"htam sandbox: {unconfined}: it may write wherever its user may", file=sys.stderr)
        _close_all_but(0, 1, 2, sock.fileno(), *landlock.held_descriptors())  # the ruleset's hold on /proc
        limits.apply_sandbox_limits()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        from htam_engine.evaluate.sandbox import serve

        code = serve(sock.detach(), role, device)
    except BaseException:  # noqa: BLE001 - whatever happens, this process must not return into the zygote
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


# Set in a sandbox whose writes were confined at its fork (confine_writes): its build narrows them
# further (confine_build).
CONFINED_ENV = "HTAM_SANDBOX_CONFINED"


def confine_writes(private: str, build_key: str | None = None) -> str | None:
    """landlock.install for a sandbox: it may write beneath its compile caches' folder `private`,
    the shared cache's folders a build writes (cache.sandbox_writable_folders: with `build_key`,
    of the builds only its own) and /dev/shm, and into a diagnostic trace file where one is asked
    for (SANDBOX_TRACE_ENV, made now if missing). None once installed, else why not."""
    from htam_engine.evaluate.cache import sandbox_writable_folders
    from htam_engine.settings import SANDBOX_TRACE_ENV

    files = []
    trace = os.environ.get(SANDBOX_TRACE_ENV)
    if trace:
        with contextlib.suppress(OSError), open(trace, "a"):
            files.append(trace)
    refused = landlock.install([private, *sandbox_writable_folders(build_key), "/dev/shm"], files)
    if refused is None:
        os.environ[CONFINED_ENV] = "1"
    return refused


def confine_build(key: str) -> str | None:
    """In a candidate sandbox whose writes were confined at its fork, once its candidate's file is
    written and before its code runs: of the shared builds, only its own key's folder stays
    writable (a second ruleset, which can only narrow the first). A candidate had copied a library
    over another candidate's build, which a judge that did not ask for that build then loaded
    (cheat_so_poison: the honest source INCORRECT in a new judge). Landlock restricts the calling
    thread and those it starts: threads the sandbox already had (a GPU driver's) keep the first
    ruleset, and run no candidate code. None once narrowed or where nothing was confined."""
    private = os.environ.get(PRIVATE_ROOT_ENV)
    if os.environ.get(CONFINED_ENV) != "1" or not private:
        return None
    return confine_writes(private, build_key=key)


def private_folder(role: str) -> str:
    """A new sandbox's compile caches' folder (_private_compile_caches), named for this zygote:
    htam-<role>-compile-<zygote pid>-<random>. The zygote removes it when it reaps the sandbox or
    closes (sweep, kill_all); a zygote killed outright (its worker's tree killed on a cancel or a
    timeout) leaves its folders, which the next zygote to start removes
    (remove_orphaned_private_folders): test runs had left 516 in the temporary folder."""
    return tempfile.mkdtemp(prefix=f"htam-{role}-compile-{os.getpid()}-")


_PRIVATE_FOLDER = re.compile(r"htam-[a-z]+-compile-(\d+)-.+")


def remove_orphaned_private_folders() -> int:
    """Remove the temporary folder's sandbox compile-cache folders whose zygote is no longer alive; how
    many. One of a live process (of any user) is left alone."""
    root = tempfile.gettempdir()
    removed = 0
    try:
        names = os.listdir(root)
    except OSError:
        return 0
    for name in names:
        m = _PRIVATE_FOLDER.fullmatch(name)
        if m is None:
            continue
        try:
            os.kill(int(m.group(1)), 0)
            continue  # its zygote lives
        except ProcessLookupError:
            pass
        except (PermissionError, OverflowError, ValueError):
            continue
        path = os.path.join(root, name)
        if os.path.isdir(path) and not os.path.islink(path):
            owned_tree.remove(path)
            removed += 1
    return removed


@dataclass(frozen=True, slots=True)
class Forked:
    """What the zygote undoes once a sandbox it forked is gone."""

    private: str  # its compile caches' folder (_private_compile_caches): removed
    shm_before: frozenset[int]  # /dev/shm's entries at its fork: what appeared since, unheld, goes (shm_sweep)


class Zygote:
    def __init__(self, fd: int):
        self.sock = socket.socket(fileno=fd)
        self.parent = os.getppid()
        self.sandboxes: dict[int, Forked] = {}  # the live sandboxes by pid
        self.exits: dict[int, int] = {}  # recent sandboxes' exit statuses, as subprocess reports them

    def _send(self, msg: dict, fds: list[int] | None = None) -> None:
        from htam_engine.evaluate.protocol import frame_reply

        data = frame_reply(msg)
        if fds:
            socket.send_fds(self.sock, [data], fds)
        else:
            self.sock.sendall(data)

    def fork(self, role: str, device: str, bounds: dict[str, Any]) -> None:
        judge_end, child_end = socket.socketpair()
        forked = Forked(private_folder(role), shm_sweep.present())
        pid = os.fork()
        if pid == 0:
            judge_end.close()
            _child(child_end, self.sock, role, device, bounds, forked.private)
        child_end.close()
        self.sandboxes[pid] = forked
        try:
            self._send({"t": "forked", "pid": pid}, [judge_end.fileno()])
        finally:
            judge_end.close()

    def sweep(self) -> None:
        """Reap exited sandboxes; kill every other child (a candidate's escaped grandchild)."""
        while True:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            forked = self.sandboxes.pop(pid, None)
            if forked is not None:
                _clean_up(owned_tree.remove, forked.private)
                _clean_up(shm_sweep.remove_left, forked.shm_before)
                self.exits[pid] = -os.WTERMSIG(_status) if os.WIFSIGNALED(_status) else os.WEXITSTATUS(_status)
                while len(self.exits) > 64:
                    del self.exits[next(iter(self.exits))]
        try:
            import psutil

            strays = [c for c in psutil.Process().children() if c.pid not in self.sandboxes]
        except Exception:  # noqa: BLE001 - psutil failing: the sandboxes' own kills still apply
            return
        for child in strays:
            try:
                child.kill()
            except psutil.Error:
                pass

    def kill_all(self) -> None:
        for pid in list(self.sandboxes):
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for forked in self.sandboxes.values():
            _clean_up(owned_tree.remove, forked.private)
        if self.sandboxes:  # what appeared since the oldest fork (a sandbox still dying keeps what it holds)
            _clean_up(shm_sweep.remove_left, frozenset.intersection(*(f.shm_before for f in self.sandboxes.values())))
        self.sandboxes.clear()

    def serve(self) -> int:
        from htam_engine.evaluate.protocol import ProtocolError, recv_request

        self._send({"t": "ready", "pid": os.getpid()})
        while True:
            ready, _, _ = select.select([self.sock], [], [], SWEEP_S)
            self.sweep()
            if os.getppid() != self.parent:  # the judge is gone: so are its sandboxes
                self.kill_all()
                return 0
            if not ready:
                continue
            try:
                req = recv_request(self.sock.fileno())
            except (ProtocolError, OSError, EOFError):
                self.kill_all()
                return 0
            if req.get("op") == "fork":
                self.fork(str(req["role"]), str(req["device"]), dict(req.get("limits") or {}))
            elif req.get("op") == "status":
                self.sweep()
                self._send({"t": "status", "pid": req["pid"], "code": self.exits.get(req["pid"])})
            else:
                self.kill_all()
                return 0


def _fork_is_poisoned() -> bool:
    """Whether a child forked now could not use CUDA: torch marks fork unsafe once the CUDA
    driver was initialized, which `torch.cuda.is_available()` does unless NVML answers it."""
    import torch

    if not torch.cuda._is_compiled():
        return False
    pid = os.fork()
    if pid == 0:
        os._exit(1 if torch._C._cuda_isInBadFork() else 0)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 1


def main() -> int:
    fd = int(os.environ.pop("HTAM_ZYGOTE_FD"))
    # Importing torch.utils.cpp_extension asks torch.cuda.is_available() when CUDA_HOME is set;
    # answered by the driver, that initializes CUDA and poisons every later fork (measured on an
    # H200 box: each sandbox died with "Cannot re-initialize CUDA in forked subprocess").
    # Answered by NVML it does not. Sandboxes inherit the setting.
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    limits.name_process("zygote")
    limits.no_core_files()
    limits.make_non_dumpable()
    limits.adopt_orphans()
    _clean_up(remove_orphaned_private_folders)
    _import_everything()
    import torch

    if torch.cuda.is_initialized() or _fork_is_poisoned():  # a fork could not use CUDA
        print("htam zygote: CUDA was initialized while importing; sandboxes could not use it", file=sys.stderr)
        return 1
    gc.collect()
    gc.freeze()  # the imported world is shared by every fork; a sandbox's collections skip it
    return Zygote(fd).serve()


if __name__ == "__main__":
    sys.exit(main())
