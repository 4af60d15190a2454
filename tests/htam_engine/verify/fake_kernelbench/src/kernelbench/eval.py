"""Test double of KernelBench's eval.py: eval_kernel_against_ref with its signature and
KernelExecResult's fields, on a CPU. It loads the sources as the real one does (exec for the
cuda backend, a temporary module for triton), seeds as it does, compares with torch.allclose
at its fp32 tolerance (1e-4) over num_correct_trials input sets, and times forward with
perf_counter (ms; its statistics from timing.get_timing_stats, as the real one's). metadata["double_called_with"] holds the
arguments it was given. A comment `# double: hang|crash|raise|none` in the solution makes it
sleep, die, raise or return None, as the real one may."""

import importlib.util
import os
import sys
import tempfile
import time

import torch

from . import timing, utils  # noqa: F401


class KernelExecResult:
    def __init__(self, compiled=False, correctness=False, metadata=None, runtime=-1.0, runtime_stats=None,
                 ref_runtime=-1.0, ref_runtime_stats=None):
        self.compiled, self.correctness, self.metadata = compiled, correctness, metadata or {}
        self.runtime, self.runtime_stats = runtime, runtime_stats or {}
        self.ref_runtime, self.ref_runtime_stats = ref_runtime, ref_runtime_stats or {}


def get_tolerance_for_precision(precision):
    return {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 1e-2}[precision]


def set_seed(seed):
    torch.manual_seed(seed)


def _load_custom(src, backend):
    if backend in ("triton", "tilelang", "cute"):
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(src)
        spec = importlib.util.spec_from_file_location("temp_module", f.name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.ModelNew
    context = {}
    exec(src, context)
    return context.get("ModelNew")


def _time(model, inputs, trials):
    times = []
    with torch.no_grad():
        for _ in range(3):
            model(*inputs)
        for _ in range(trials):
            t0 = time.perf_counter()
            model(*inputs)
            times.append((time.perf_counter() - t0) * 1000)
    return timing.get_timing_stats(times)


def eval_kernel_against_ref(original_model_src, custom_model_src, seed_num=42, num_correct_trials=1,
                            num_perf_trials=10, measure_performance=False, timing_method="cuda_event", verbose=False,
                            build_dir=None, device=None, backend="cuda", precision=torch.float32,
                            check_for_excessive_speedup=True, excessive_speedup_threshold=10):
    metadata = {"double_called_with": {
        "seed_num": seed_num, "num_correct_trials": num_correct_trials, "num_perf_trials": num_perf_trials,
        "measure_performance": measure_performance, "timing_method": timing_method, "device": str(device),
        "backend": backend, "precision": str(precision), "check_for_excessive_speedup": check_for_excessive_speedup,
        "stood_in": sorted(n for n in ("dotenv", "litellm", "openai", "tqdm") if not hasattr(sys.modules[n], "__file__")),
    }}
    for behaviour in ("hang", "crash", "raise", "none"):
        if f"# double: {behaviour}" in custom_model_src:
            if behaviour == "hang":
                time.sleep(3600)
            if behaviour == "crash":
                os._exit(3)
            if behaviour == "raise":
                raise AssertionError("CUDA is not available, cannot run Eval")
            return None
    context = {}
    exec(original_model_src, context)
    Model, get_inputs, get_init_inputs = context["Model"], context["get_inputs"], context["get_init_inputs"]
    set_seed(seed_num)
    init = [x.to(precision) if isinstance(x, torch.Tensor) else x for x in get_init_inputs()]
    with torch.no_grad():
        set_seed(seed_num)
        ref = Model(*init)
    try:
        ModelNew = _load_custom(custom_model_src, backend)
    except Exception as e:
        metadata["compilation_error"] = e
        return KernelExecResult(compiled=False, metadata=metadata)
    with torch.no_grad():
        set_seed(seed_num)
        new = ModelNew(*init)
    tol = get_tolerance_for_precision(precision)
    torch.manual_seed(seed_num)
    seeds = [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(num_correct_trials)]
    passed = 0
    with torch.no_grad():
        for s in seeds:
            set_seed(s)
            inputs = [x.to(precision) if isinstance(x, torch.Tensor) else x for x in get_inputs()]
            try:
                out, out_new = ref(*inputs), new(*inputs)
            except Exception as e:
                metadata["runtime_error"] = e
                return KernelExecResult(compiled=True, correctness=False, metadata=metadata)
            if out.shape == out_new.shape and torch.allclose(out, out_new, atol=tol, rtol=tol):
                passed += 1
            else:
                metadata["correctness_issue"] = "Output mismatch"
    metadata["correctness_trials"] = f"({passed} / {num_correct_trials})"
    result = KernelExecResult(compiled=True, correctness=passed == num_correct_trials, metadata=metadata)
    if measure_performance and result.correctness:
        set_seed(seed_num)
        inputs = [x.to(precision) if isinstance(x, torch.Tensor) else x for x in get_inputs()]
        result.runtime_stats = _time(new, inputs, num_perf_trials)
        result.runtime = result.runtime_stats["mean"]
        if check_for_excessive_speedup:
            result.ref_runtime_stats = _time(ref, inputs, num_perf_trials)
            result.ref_runtime = result.ref_runtime_stats["mean"]
    return result
