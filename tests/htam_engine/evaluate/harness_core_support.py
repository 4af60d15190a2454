"""Shared pieces for the harness-core tests: the test problem, candidate sources, one evaluator.

The C++ candidate costs ~20 s to compile once; every test that needs it reuses the
build through the shared compile cache (HTAM_CACHE_DIR, set by tests/conftest.py).
Triton candidates run through TRITON_INTERPRET=1 on a small override of the problem.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent
PROBLEM_PATH = HERE / "problems" / "scale_shift_relu.py"
FUSED_CPP = (HERE / "candidates" / "fused_cpp.py").read_text()
TRITON_CHAIN = (HERE / "candidates" / "triton_chain.py").read_text()
SMALL = {"N": 8192}


def triton_variant(forward_extra: str = "", header: str = "") -> str:
    """The honest Triton candidate with extra lines: `header` at module level (after the
    imports), `forward_extra` in forward after the kernel has run."""
    code = TRITON_CHAIN.replace("import triton.language as tl\n", "import triton.language as tl\n" + header + "\n", 1)
    if forward_extra:
        body = "".join(f"        {line}\n" for line in forward_extra.splitlines())
        code = code.replace("        return y\n", body + "        return y\n", 1)
    return code


def fast_config(**kw):
    from htam_engine.evaluate.config import EvalConfig

    base = dict(timeout_s=120.0, trials=5, warmup=1, time_compile_baseline=False)
    base.update(kw)
    return EvalConfig(**base)
