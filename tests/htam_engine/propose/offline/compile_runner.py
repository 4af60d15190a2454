"""Compiles every Triton kernel a candidate launches for an sm_90 GPU (the H200), with no GPU.

The interpreter (interp_runner.py) checks what kernels compute, but not that Triton's compiler
accepts them (types of loop-carried values, mixed integer widths, layouts). Here each launch of a
candidate's forward on small CPU inputs is intercepted: the kernel is compiled with Triton's real
compiler for GPUTarget("cuda", 90, 32) from the launch's argument types and constexprs (through
cubin), and the launch itself is skipped (outputs are not meaningful; correctness is the
interpreter's job). Runs in a fresh process without TRITON_INTERPRET.
Input (stdin): JSON list of {"id", "problem", "overrides", "code"}.
Output (stdout, last line): JSON {id: {"ok": bool, "message": str, "kernels": int}}.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.pop("TRITON_INTERPRET", None)

_DTYPES = {"float32": "*fp32", "float16": "*fp16", "bfloat16": "*bf16", "float64": "*fp64", "int64": "*i64",
           "int32": "*i32", "bool": "*i1", "uint8": "*u8", "int8": "*i8"}


def _type(value) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        return _DTYPES[str(value.dtype).replace("torch.", "")]
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -2**31 <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    raise TypeError(f"kernel argument of type {type(value).__name__}")


def install(compiled: list[str]) -> None:
    """Launches compile for sm_90 instead of running (one compile per distinct specialisation)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, compile as triton_compile
    from triton.runtime.jit import JITFunction

    target = GPUTarget("cuda", 90, 32)
    seen: set[str] = set()

    def run(self, *args, grid, warmup, **kwargs):
        options = {k: kwargs.pop(k) for k in ("num_warps", "num_stages") if k in kwargs}
        names = [p.name for p in self.params]
        values = dict(zip(names, args))
        values.update(kwargs)
        signature, constexprs = {}, {}
        for p in self.params:
            value = values[p.name]
            if p.is_constexpr:
                signature[p.name] = "constexpr"
                constexprs[p.name] = value
            else:
                signature[p.name] = _type(value)
        key = repr((self.fn.__name__, signature, sorted(constexprs.items()), sorted(options.items())))
        if key not in seen:
            seen.add(key)
            triton_compile(ASTSource(fn=self, signature=signature, constexprs=constexprs), target=target,
                           options=options)
            compiled.append(self.fn.__name__)
        return None

    JITFunction.run = run


def _import(code: str, folder: str):
    import importlib.util

    path = os.path.join(folder, "candidate.py")
    with open(path, "w") as f:
        f.write(code)
    spec = importlib.util.spec_from_file_location(f"htam_candidate_{abs(hash(code))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check(case: dict) -> dict:
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="htam-compile-")  # the candidate's file, removed once checked
    try:
        return _check(case, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _check(case: dict, folder: str) -> dict:
    import torch

    from htam_engine.problems import instantiate, load_problem

    compiled: list[str] = []
    install(compiled)
    try:
        problem = load_problem(case["problem"], case.get("overrides") or None)
        module = _import(case["code"], folder)  # Triton's compiler reads a kernel's source from its file
        inst = instantiate(problem)
        torch.manual_seed(3)
        model = module.ModelNew(*inst.get_init_inputs())
        torch.manual_seed(4)
        with torch.no_grad():
            model(*inst.get_inputs())
        return {"ok": bool(compiled), "message": "" if compiled else "no Triton kernel was launched",
                "kernels": len(compiled)}
    except Exception as exc:  # noqa: BLE001 - reported to the caller
        return {"ok": False, "message": f"{type(exc).__name__}: {str(exc)[:1500]}", "kernels": len(compiled)}


def main() -> None:
    cases = json.load(sys.stdin)
    results = {case["id"]: check(case) for case in cases}
    sys.stdout.write("\n" + json.dumps(results) + "\n")


if __name__ == "__main__":
    main()
