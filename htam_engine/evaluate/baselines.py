"""Reference baselines (eager and torch.compile), timed like candidates and cached.

The cache is one JSON file under the cache dir, keyed by the problem's source hash,
its overrides, the device (by name, so two GPU models never share an entry), the
torch version and the trial settings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from htam_engine.evaluate.cache import atomic_write_text, cache_dir, file_lock, read_json, sha256_text
from htam_engine.evaluate.diagnostics import one_line
from htam_engine.evaluate.timing import is_cuda, time_forward

_FILE = "baselines.json"


@dataclass(slots=True)
class Baseline:
    eager_ms: float | None
    compile_ms: float | None  # None where torch.compile is unavailable or failed
    compile_note: str = ""


def device_label(device: str) -> str:
    if is_cuda(device):
        return f"cuda:{torch.cuda.get_device_name(torch.device(device))}"
    return "cpu"


def baseline_key(source: str, overrides: dict[str, Any], device: str, warmup: int, trials: int) -> str:
    ov = json.dumps(overrides, sort_keys=True, default=repr)
    return sha256_text(source, ov, device_label(device), torch.__version__, f"{warmup}/{trials}")[:24]


def lookup(key: str) -> Baseline | None:
    entry = read_json(cache_dir() / _FILE).get(key)
    if not isinstance(entry, dict) or entry.get("eager_ms") is None:
        return None
    return Baseline(entry.get("eager_ms"), entry.get("compile_ms"), entry.get("compile_note", ""))


def store(key: str, value: Baseline, *, problem_id: str = "") -> None:
    with file_lock("baselines"):
        path = cache_dir() / _FILE
        data = read_json(path)
        data[key] = {"eager_ms": value.eager_ms, "compile_ms": value.compile_ms,
                     "compile_note": value.compile_note, "problem": problem_id}
        atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True))


def measure(ref_model: Callable[..., Any], inputs: Sequence[Any], device: str, *, warmup: int, trials: int,
            with_compile: bool) -> Baseline:
    """Time the reference eagerly and, if asked, compiled with torch.compile (failure -> None)."""
    eager = time_forward(ref_model, inputs, device, warmup=warmup, trials=trials).median
    compile_ms: float | None = None
    note = ""
    if with_compile:
        try:
            compiled = torch.compile(ref_model)
            compile_ms = time_forward(compiled, inputs, device, warmup=max(warmup, 2), trials=trials).median
        except Exception as exc:  # noqa: BLE001 - no C++ compiler, unsupported op, ...: no compile baseline
            note = one_line(exc)
    else:
        note = "not measured"
    return Baseline(eager, compile_ms, note)
