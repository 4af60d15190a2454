"""Shared pieces of the fault suite: the tiny problem, an honest candidate and its faulty
variants, process bookkeeping (no orphans), and the figures every test reports.

Faults are injected into an honest Triton candidate (run by TRITON_INTERPRET=1 on the CPU),
so no fault case needs a C++ compile; native faults (segfault, a hang inside C) go through
ctypes into libc.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# The loop tests' tiny problem and honest Triton candidate (read, never written, here).
DATA = ROOT / "tests" / "htam_engine" / "loop" / "data"
PROBLEM = DATA / "scale_relu.py"
HONEST = (DATA / "triton_scale_relu.py").read_text()
NO_KERNEL = ("import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
             "    def forward(self, x):\n        return torch.relu(x * 2.0 - 1.0)\n")
WORKER_MODULE = "htam_engine.evaluate.worker"  # a judge process
ZYGOTE_MODULE = "htam_engine.evaluate.zygote"  # what a judge forks its sandboxes from
# Set by tests/bench/fault_figures.py: the full-size runs (200 kills, 500-step soak).
FULL = os.environ.get("HTAM_FAULT_FULL") == "1"


def candidate(forward_extra: str = "", header: str = "") -> str:
    """The honest candidate with `header` after its imports and `forward_extra` in forward
    after the kernel ran (so a fault fires during the correctness check)."""
    code = HONEST.replace("import triton.language as tl\n", "import triton.language as tl\n" + header + "\n", 1)
    if forward_extra:
        body = "".join(f"        {line}\n" for line in forward_extra.splitlines())
        code = code.replace("        return y\n", body + "        return y\n", 1)
    return code


def fenced(code: str) -> str:
    return f"```python\n{code}```\n"


def quick_config(**kw):
    """Few trials and checks: the suite evaluates many candidates on two shared cores."""
    from htam_engine.evaluate.config import EvalConfig

    base = dict(timeout_s=60.0, trials=2, warmup=1, correctness_trials=1, time_compile_baseline=False)
    base.update(kw)
    return EvalConfig(**base)


def load_test_problem():
    from htam_engine.problems import load_problem

    return load_problem(str(PROBLEM))


# ---------------------------------------------------------------------------- processes
def descendants() -> list[psutil.Process]:
    try:
        return psutil.Process().children(recursive=True)
    except psutil.Error:
        return []


# Workers an earlier test file left running in this process (under pytest-xdist a process runs
# several files; tests/faults/conftest.py fills this per file): not this file's to count.
IGNORED_WORKERS: set[int] = set()


def worker_processes() -> list[psutil.Process]:
    """Live evaluation workers started by this process (for the test file under way)."""
    found = []
    for p in descendants():
        try:
            if p.pid in IGNORED_WORKERS:
                continue
            if WORKER_MODULE in " ".join(p.cmdline()) and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
        except psutil.Error:
            pass
    return found


def group_members(pgid: int) -> list[psutil.Process]:
    """Every live process in process group `pgid` (a worker's group is its own pid)."""
    found = []
    for p in psutil.process_iter(["pid", "status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(p.pid) == pgid:
                found.append(p)
        except (ProcessLookupError, PermissionError, psutil.Error):
            pass
    return found


def tagged(tag: str) -> list[psutil.Process]:
    """Live processes whose command line holds `tag` (how escaped grandchildren are found)."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and tag in " ".join(p.info["cmdline"] or []):
                found.append(p)
        except psutil.Error:
            pass
    return found


def sandboxes() -> list[psutil.Process]:
    """Live sandboxes (the zygotes' children) of this process's judges."""
    found = []
    for p in descendants():
        try:
            if ZYGOTE_MODULE in " ".join(p.cmdline()):
                found.extend(c for c in p.children() if c.status() != psutil.STATUS_ZOMBIE)
        except psutil.Error:
            pass
    return found


def described(pids) -> str:
    """Each pid's name, state, parent, group, age and command line, or that it is gone: what an
    assertion about processes that should have gone prints, so a rare failure explains itself."""
    lines = []
    for pid in sorted(pids):
        try:
            p = psutil.Process(pid)
            with p.oneshot():
                lines.append(f"{pid} {p.name()} {p.status()} ppid={p.ppid()} pgid={os.getpgid(pid)} "
                             f"age={time.time() - p.create_time():.1f}s {' '.join(p.cmdline())[:120]}")
        except (psutil.Error, ProcessLookupError):
            lines.append(f"{pid} gone")
    return "; ".join(lines)


def wait_until(predicate, timeout_s: float, poll_s: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(poll_s)
    return predicate()


def tree_files(folder: Path) -> dict[str, bytes]:
    """Relative path -> contents of every regular file under `folder`."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and not p.is_symlink():
            try:
                out[str(p.relative_to(folder))] = p.read_bytes()
            except OSError:
                pass
    return out


# ---------------------------------------------------------------------------- figures
@dataclass
class FaultFigure:
    """One row of the figures table: cases of a fault kind, how many htam survived, data lost."""

    kind: str
    tried: int = 0
    survived: int = 0
    lost: int = 0  # saved steps or input files that did not come back intact
    recover_s: float | None = None  # worst time from a crashed worker to the next good result
    notes: list[str] = field(default_factory=list)


class Figures:
    """Collects FaultFigure rows during a pytest run; written as JSON when asked."""

    def __init__(self) -> None:
        self.rows: dict[str, FaultFigure] = {}

    def add(self, kind: str, tried: int = 0, survived: int = 0, lost: int = 0,
            recover_s: float | None = None, note: str = "") -> None:
        row = self.rows.setdefault(kind, FaultFigure(kind))
        row.tried += tried
        row.survived += survived
        row.lost += lost
        if recover_s is not None:
            row.recover_s = max(row.recover_s or 0.0, recover_s)
        if note:
            row.notes.append(note)

    def dump(self, path: str | os.PathLike) -> None:
        Path(path).write_text(json.dumps([asdict(r) for r in self.rows.values()], indent=1))
