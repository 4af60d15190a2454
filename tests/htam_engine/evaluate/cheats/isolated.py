"""A judge of its own for cheats that poison what a judge keeps (its caches, the interpreter's
startup, its zygote and reference sandbox): everything it and its sandboxes write lives under
one folder, so a poisoning cheat reaches nothing the rest of the suite uses.

The judge runs in this process like the harness's (cheats/harness.py); the cache folder it
reads is this process's HTAM_CACHE_DIR, which is pointed at the folder while it evaluates.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Any, Iterator

import psutil

from cheats.harness import _problem, candidate_source, check_config
from htam_engine.evaluate import pch

# What the isolated judge's sandboxes must find under the folder rather than in the shared cache.
_CACHE_VARS = ("HTAM_CACHE_DIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TORCH_EXTENSIONS_DIR")
# The folder is thrown away after its test, so a precompiled torch header there (which the judge
# builds at a flag set's second extension: ~60 s of CPU on two cores, the planted-header test's
# second C++ source) would never pay back: none is built.
_PCH_NEVER = {pch.AFTER_ENV: "1000000"}


class IsolatedJudge:
    def __init__(self, root: Path, device: str = "cpu"):
        from htam_engine.evaluate.judge import Judge
        from htam_engine.evaluate.process import worker_env

        self.root = root
        self.site = root / "site"  # first on the sandboxes' PYTHONPATH, as htam's checkout is in a real worker
        self.site.mkdir(parents=True, exist_ok=True)
        self.device = device
        self.cache = {"HTAM_CACHE_DIR": root / "cache", "TRITON_CACHE_DIR": root / "cache" / "triton",
                      "TORCHINDUCTOR_CACHE_DIR": root / "inductor", "TORCH_EXTENSIONS_DIR": root / "extensions"}
        with self.caches():
            env = worker_env(device)
            env.update({k: str(v) for k, v in self.cache.items()})
            env["PYTHONPATH"] = os.pathsep.join([str(self.site), env["PYTHONPATH"]])
            self.judge = Judge(device, lambda msg: None, env=env)

    @contextlib.contextmanager
    def caches(self) -> Iterator[None]:
        """This process's cache variables pointed at the folder (the judge reads them as it works)."""
        saved = {k: os.environ.get(k) for k in (*_CACHE_VARS, *_PCH_NEVER)}
        os.environ.update({k: str(v) for k, v in self.cache.items()} | _PCH_NEVER)
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def run(self, problem: str, candidate: str, **config: Any) -> Any:
        """The EvalResult of cheats/<candidate>.py on problems/<problem>.py through this judge."""
        from htam_engine.evaluate.backend import resolve_backend
        from htam_engine.evaluate.cache import candidate_key
        from htam_engine.evaluate.evaluator import _torch_version

        code = candidate_source(candidate)
        cfg = check_config(self.device, **config)
        backend = resolve_backend(code, None, self.device)
        key = candidate_key(code, backend, self.device.split(":")[0], _torch_version())
        with self.caches():
            result, _healthy = self.judge.evaluate(_problem(problem), code, cfg, backend, key, memory_mb=16_000.0)
        return result

    def processes(self) -> list[psutil.Process]:
        """The zygote and everything under it."""
        proc = self.judge.zygote.proc
        if proc is None or proc.poll() is not None:
            return []
        with contextlib.suppress(psutil.Error):
            zygote = psutil.Process(proc.pid)
            return [zygote, *zygote.children(recursive=True)]
        return []

    def close(self) -> None:
        # A cheat may leave sandboxes stopped: continue them so they can be told to close.
        for p in self.processes():
            with contextlib.suppress(psutil.Error):
                p.send_signal(signal.SIGCONT)
        with self.caches():
            self.judge.close()


@contextlib.contextmanager
def isolated_judge(root: Path, device: str = "cpu") -> Iterator[IsolatedJudge]:
    judge = IsolatedJudge(root, device)
    try:
        yield judge
    finally:
        judge.close()
