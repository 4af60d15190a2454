"""The child process of `htam verify`: one call of KernelBench's own eval_kernel_against_ref,
its result written back as JSON.

    python -m htam_engine.verify.kb_child REQUEST.json

KernelBench executes the candidate in the process that calls it, so this runs apart from
htam (killable on a timeout) and imports nothing of htam's. REQUEST names the checkout's src
folder, both sources, the backend, the device, KernelBench's settings and where to write the
result: {"result": {...KernelExecResult's fields...}}, {"error": "..."} when its evaluation
raised or gave no result, {"setup_error": "..."} when the checkout could not be imported.
Whatever KernelBench prints goes to this process's stdout, which the parent keeps as a log.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import types
from pathlib import Path
from typing import Any

# Modules KernelBench's package imports for generating kernels (LLM clients, a .env loader,
# progress bars) and never uses to evaluate one. dotenv and litellm are always stood in:
# litellm is no dependency of htam, and the real load_dotenv would copy a .env file from the
# working folder into the environment. openai and tqdm only where they do not import here: missing,
# or installed without what they need (openai 3.63 wheels beside no httpx2 on a GPU machine).
ALWAYS_STOOD_IN = ("dotenv", "litellm")
STOOD_IN_WHERE_UNIMPORTABLE = ("openai", "tqdm")

# The fields of KernelBench's KernelExecResult.
RESULT_FIELDS = ("compiled", "correctness", "runtime", "runtime_stats", "ref_runtime", "ref_runtime_stats",
                 "metadata")


def _one_line(exc: BaseException) -> str:
    text = " | ".join(part.strip() for part in str(exc).splitlines() if part.strip())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _stand_in(name: str) -> types.ModuleType:
    module = types.ModuleType(name, f"stand-in from htam verify: KernelBench's evaluation does not use {name}")

    def unavailable(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError(f"{name} is a stand-in in htam verify's KernelBench process")

    def attribute(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return unavailable

    module.__getattr__ = attribute  # type: ignore[attr-defined] - PEP 562: any name imports
    module.load_dotenv = lambda *_a, **_k: False  # type: ignore[attr-defined]
    module.tqdm = lambda iterable=None, *_a, **_k: iterable  # type: ignore[attr-defined]
    return module


def _imports(name: str) -> bool:
    try:
        importlib.import_module(name)
    except Exception:  # noqa: BLE001 - any failure: stood in
        return False
    return True


def install_stand_ins() -> list[str]:
    """Put the stand-ins in sys.modules; the names stood in."""
    names = list(ALWAYS_STOOD_IN) + [n for n in STOOD_IN_WHERE_UNIMPORTABLE if not _imports(n)]
    for name in names:
        sys.modules[name] = _stand_in(name)
    return names


def _device(text: str) -> Any:
    """KernelBench wants a CUDA device as an int (it writes the index into CUDA_VISIBLE_DEVICES)."""
    import torch

    if text.startswith("cuda"):
        return int(text.split(":", 1)[1]) if ":" in text else torch.cuda.current_device()
    return torch.device(text)


def _plain(value: Any) -> Any:
    """JSON-safe: KernelBench's metadata holds exceptions and other objects."""
    return json.loads(json.dumps(value, default=str, allow_nan=True))


def _record_trials() -> list[list[float]]:
    """Every list of trial times KernelBench turns into its statistics, in its order (the
    candidate's, then the reference's): its result keeps only their mean and spread, and a row
    that parts from htam's median is read against its trials. eval.py calls
    timing.get_timing_stats through the module, so wrapping it there changes no measurement."""
    recorded: list[list[float]] = []
    try:
        from kernelbench import timing

        stats = timing.get_timing_stats
    except (ImportError, AttributeError):  # a checkout without the module: its statistics only
        return recorded

    def recording(elapsed_times: list[float], *args: Any, **kwargs: Any) -> Any:
        recorded.append([float(t) for t in elapsed_times])
        return stats(elapsed_times, *args, **kwargs)

    timing.get_timing_stats = recording
    return recorded


def evaluate(request: dict[str, Any]) -> dict[str, Any]:
    src = str(request["kernelbench_src"])
    try:
        stood_in = install_stand_ins()
        sys.path.insert(0, src)
        from kernelbench import eval as kb_eval
    except Exception as exc:  # noqa: BLE001 - reported as the checkout's fault
        return {"setup_error": _one_line(exc)}
    found = Path(kb_eval.__file__).resolve()
    if not found.is_relative_to(Path(src).resolve()):
        return {"setup_error": f"imported kernelbench from {found}, not from the checkout at {src}"}

    import torch

    trials = _record_trials()
    settings = request["settings"]
    precision = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[settings["precision"]]
    try:
        result = kb_eval.eval_kernel_against_ref(
            original_model_src=request["reference"],
            custom_model_src=request["solution"],
            seed_num=int(settings["seed"]),
            num_correct_trials=int(settings["correct_trials"]),
            num_perf_trials=int(settings["perf_trials"]),
            measure_performance=True,
            timing_method=settings["timing_method"],
            verbose=False,
            device=_device(request["device"]),
            backend=request["backend"],
            precision=precision,
            check_for_excessive_speedup=True,  # the branch that also times the reference
        )
    except Exception as exc:  # noqa: BLE001 - KernelBench's evaluation raised: a result, reported
        return {"error": f"eval_kernel_against_ref raised {_one_line(exc)}"}
    if result is None:  # its answer to a compile-lock clash: "please retry"
        return {"error": "eval_kernel_against_ref returned no result (a build lock clash; retry)"}
    tolerance = getattr(kb_eval, "get_tolerance_for_precision", None)
    return {"result": _plain({name: getattr(result, name, None) for name in RESULT_FIELDS}),
            "tolerance": float(tolerance(precision)) if tolerance else None,
            "trials": trials, "stood_in": stood_in}


def _write(path: Path, doc: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, allow_nan=True), encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    _write(Path(request["result_path"]), evaluate(request))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
