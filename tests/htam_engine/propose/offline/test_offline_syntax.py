"""Every template's C++ (and, where nvcc exists, CUDA) source compiles for the built-in suite.

A full load_inline build costs ~20 s, so these checks compile the generated kernels in one
translation unit against a small stand-in for the torch headers: syntax and types of the
generated code, in seconds. (test_offline_cpp.py builds and runs real extensions.)
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from htam_engine.families import Backend
from htam_engine.problems import builtin_names, load_problem
from htam_engine.propose.offline import TEMPLATE_IDS, TEMPLATES, Unsupported, plan_problem, supports
from htam_engine.propose.offline.module import build_module
from htam_engine.propose.offline.templates import applies

# The few torch / ATen names the generated host code uses.
TORCH_STANDIN = """
#include <cstdint>
#include <functional>
namespace torch {
struct Tensor {
  template <typename T> T* data_ptr() const { return nullptr; }
  int64_t numel() const { return 0; }
};
}
namespace at {
inline int get_num_threads() { return 1; }
inline void parallel_for(int64_t b, int64_t e, int64_t, const std::function<void(int64_t, int64_t)>& f) { f(b, e); }
namespace cuda { inline cudaStream_t getCurrentCUDAStream() { return 0; } }
}
#define C10_CUDA_KERNEL_LAUNCH_CHECK() do {} while (0)
"""
_INCLUDES = re.compile(r"#include <[^>]+>\n")  # standard headers go in the prelude, torch's are stood in for
_STD = "#include <algorithm>\n#include <cmath>\n#include <cstdint>\n#include <cstring>\n#include <vector>\n"


def _sources(backend: str, names: list[str]) -> list[tuple[str, str]]:
    out = []
    key = "_CUDA_SOURCE" if backend == "cuda" else "_CPP_SOURCE"
    for name in names:
        problem = load_problem(name)
        try:
            plan = plan_problem(problem)  # traced once, written with every applicable template
        except Unsupported:
            continue
        for tid in TEMPLATE_IDS:
            if not (supports(tid, backend, problem.family) and applies(tid, plan)):
                continue
            code = build_module(problem, plan, Backend(backend), TEMPLATES[tid].variant, tid)
            src = re.search(key + r" = r'''\n(.*?)'''", code, re.S).group(1)
            out.append((f"{name}_{tid}", _INCLUDES.sub("", src)))
    return out


def _unit(sources: list[tuple[str, str]], prelude: str) -> str:
    parts = [prelude]
    for tag, src in sources:
        parts.append(f"namespace t_{tag} {{\n{src}\n}}\n")
    return "\n".join(parts)


def test_cpp_sources_of_every_template_compile():
    if shutil.which("g++") is None:
        pytest.skip("no g++")
    sources = _sources("cpp", builtin_names())
    assert len(sources) > 40
    prelude = _STD + "typedef void* cudaStream_t;\n" + TORCH_STANDIN
    text = _unit(sources, prelude)
    proc = subprocess.run(["g++", "-std=c++20", "-fsyntax-only", "-fopenmp-simd", "-x", "c++", "-"], input=text,
                          capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
def test_cuda_sources_of_every_template_compile(tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc")
    sources = _sources("cuda", ["relu", "softmax", "layernorm", "affine_gelu_scale", "mean_reduce", "rmsnorm"])
    prelude = _STD + "#include <cuda_runtime.h>\n" + TORCH_STANDIN
    path = tmp_path / "all.cu"
    path.write_text(_unit(sources, prelude))
    proc = subprocess.run(["nvcc", "-std=c++17", "-c", "-O0", "-o", str(tmp_path / "all.o"), str(path)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
