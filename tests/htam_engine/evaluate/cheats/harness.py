"""Runs a candidate file from here through a judge on a problem from problems/.

The judge runs in this process (it never runs candidate code: every candidate runs in a
sandbox it forks), one per device for the whole test run, so each check costs a sandbox fork
and the candidate's own calls. Static checks are not applied here, so every cheat meets the
runtime defences; tests that want the engine's whole path use an Evaluator.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
from pathlib import Path
from typing import Any, Iterator

os.environ.setdefault("TRITON_INTERPRET", "1")  # Triton kernels run on the CPU in this process's imports

HERE = Path(__file__).parent
PROBLEMS = HERE / "problems"
_JUDGES: dict[str, Any] = {}


def problem_path(name: str) -> Path:
    return PROBLEMS / f"{name}.py"


def candidate_path(name: str) -> Path:
    return HERE / f"{name}.py"


# A candidate's line that stands for the whole of another file here: cheats that share one C++
# extension include it (ext_*.py), so its source is written once between them (each candidate still
# builds it under its own key: the build cache is keyed by the whole candidate source).
INCLUDE = "# include: "


def candidate_source(name: str) -> str:
    """cheats/<name>.py as a judge gets it: each `# include: <part>` line replaced by cheats/<part>.py, its
    own includes expanded in turn (a variant of a cheat that is itself built on a part)."""
    lines = candidate_path(name).read_text().splitlines(keepends=True)
    return "".join(candidate_source(line[len(INCLUDE):].strip()) if line.startswith(INCLUDE) else line
                   for line in lines)


def load_candidate(name: str) -> Any:
    """cheats/<name>.py imported here as a module (to show on an input of the test's own what its kernel
    gets wrong), its includes expanded into a file of its own: Triton's jit reads a kernel's source
    from its file."""
    import importlib.util
    import tempfile

    os.environ.setdefault("TRITON_INTERPRET", "1")
    code = candidate_source(name)
    path = Path(tempfile.gettempdir()) / "htam-test-candidates" / f"{name}.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(code)
    spec = importlib.util.spec_from_file_location(f"candidate_{name}", path)
    module = importlib.util.module_from_spec(spec)
    with _builds_where_a_cpu_sandbox_builds(code):
        spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def _builds_where_a_cpu_sandbox_builds(code: str) -> Iterator[None]:
    """torch's load_inline/load, for the candidate's import, routed as a CPU sandbox routes them
    (compile_cache): into build/<key>/<name>_<key> of the shared cache under the key run_check gives
    this source, so its evaluation that follows finds the library built rather than building the same
    source a second time under another name (a CPU compile costs 10-20 s). torch's loaders are put
    back after the import."""
    import torch.utils.cpp_extension as ce

    from htam_engine.evaluate.backend import resolve_backend
    from htam_engine.evaluate.cache import candidate_key, file_lock
    from htam_engine.evaluate.compile_cache import CompileCache
    from htam_engine.evaluate.evaluator import _torch_version

    key = candidate_key(code, resolve_backend(code, None, "cpu"), "cpu", _torch_version())
    originals = {name: getattr(ce, name) for name in ("load_inline", "load")}
    try:
        CompileCache().key = key
        with file_lock(f"build-{key}"):
            yield
    finally:
        for name, fn in originals.items():
            setattr(ce, name, fn)


@functools.lru_cache(maxsize=None)
def _problem(name: str, overrides: tuple = ()) -> Any:
    from htam_engine.problems import load_problem

    return load_problem(str(problem_path(name)), dict(overrides) or None)


def judge_for(device: str) -> Any:
    """The test run's judge for `device` (its sandboxes get a worker's environment)."""
    from htam_engine.evaluate.judge import Judge
    from htam_engine.evaluate.process import worker_env

    if device not in _JUDGES:
        _JUDGES[device] = Judge(device, lambda msg: None, env=worker_env(device))
    return _JUDGES[device]


@atexit.register
def close_judges() -> None:
    """Close the test run's judges (at exit, or earlier where a test needs no process left)."""
    for judge in _JUDGES.values():
        judge.close()
    _JUDGES.clear()


def check_config(device: str = "cpu", **config: Any) -> Any:
    from htam_engine.evaluate.config import EvalConfig

    base: dict[str, Any] = dict(device=device, timeout_s=120.0, trials=3, warmup=1, time_compile_baseline=False)
    base.update(config)
    return EvalConfig(**base)


def run_code(problem: str, code: str, overrides: dict | None = None, device: str = "cpu",
             unseen: dict | None = None, **config: Any) -> Any:
    """The EvalResult of `code` on `problem` through the judge (no static checks)."""
    from htam_engine.evaluate.backend import resolve_backend
    from htam_engine.evaluate.cache import candidate_key
    from htam_engine.evaluate.evaluator import _torch_version

    cfg = check_config(device, unseen_shape=unseen, **config)
    backend = resolve_backend(code, None, device)
    key = candidate_key(code, backend, device.split(":")[0], _torch_version())
    result, _healthy = judge_for(device).evaluate(_problem(problem, tuple(sorted((overrides or {}).items()))), code,
                                                  cfg, backend, key, memory_mb=16_000.0)
    return result


def run_check(problem: str, candidate: str, overrides: dict | None = None, device: str = "cpu",
              unseen: dict | None = None, **config: Any) -> Any:
    """run_code on the candidate file cheats/<candidate>.py."""
    return run_code(problem, candidate_source(candidate), overrides, device, unseen, **config)


def rules(result: Any) -> set[str]:
    return {f.rule for f in result.integrity}


def finding(result: Any, rule: str) -> Any:
    return next(f for f in result.integrity if f.rule == rule)


def in_forked_child(fn: Any) -> Any:
    """fn() run in a forked child (for what must not touch this process: a seccomp filter), its
    JSON-able answer returned here; an exception there comes back as {"error": repr}."""
    import json

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            answer = fn()
        except Exception as exc:  # noqa: BLE001 - reported to the caller
            answer = {"error": repr(exc)}
        os.write(w, json.dumps(answer).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(data)


# <linux/capability.h>: _LINUX_CAPABILITY_VERSION_3, and the capabilities that pass permission bits
_CAP_VERSION_3 = 0x20080522
_PASSING_BITS = (1 << 1) | (1 << 2) | (1 << 3)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER


def as_an_ordinary_user() -> None:
    """This process (a forked child: in_forked_child) without the capabilities that pass permission
    bits, as an ordinary user's judge is: where the suite runs as root, modes bind nobody otherwise."""
    import ctypes

    if os.geteuid() != 0:
        return
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # two of {effective, permitted, inheritable}
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.capget(header, data) == 0, os.strerror(ctypes.get_errno())
    for i in (0, 1):  # effective and permitted, low word
        data[i] &= ~_PASSING_BITS
    assert libc.capset(header, data) == 0, os.strerror(ctypes.get_errno())


@functools.lru_cache(maxsize=None)
def seccomp_refusal() -> str | None:
    """Why this machine's kernel would not take the sandboxes' seccomp filter (tried in a forked
    child), or None where it does."""
    from htam_engine.evaluate import seccomp

    return in_forked_child(seccomp.install)
