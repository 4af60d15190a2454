"""Every knob value's C++ (and, where nvcc exists, CUDA) source compiles for the built-in suite.

A full load_inline build costs ~20 s, so these checks compile the generated kernels in one
translation unit against a small stand-in for the torch headers: syntax and types of the
generated code, in seconds. (test_offline_cpp.py builds and runs real extensions.)

CUDA candidates use the split layout: the .cu unit must build with nvcc and no torch include
path at all, and the C++ unit (torch wrappers) with the host compiler against the real torch
headers.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sysconfig

import pytest

from htam_engine.families import Backend
from htam_engine.problems import builtin_names, load_problem
from htam_engine.propose.offline import Unsupported, plan_problem, plan_space
from htam_engine.propose.offline.module import build_module

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
}
"""
_INCLUDES = re.compile(r"#include <[^>]+>\n")  # standard headers go in the prelude, torch's are stood in for
_STD = "#include <algorithm>\n#include <cmath>\n#include <cstdint>\n#include <cstring>\n#include <vector>\n"


def _settings(space):
    """The defaults, then every other value of every knob (one knob changed at a time)."""
    base = space.defaults()
    yield base
    for spec in space:
        for value in spec.values:
            if value != base[spec.knob]:
                yield base.with_({spec.knob: value})


def _sources(backend: str, names: list[str], key: str = "") -> list[tuple[str, str]]:
    out, seen = [], set()
    key = key or ("_CUDA_SOURCE" if backend == "cuda" else "_CPP_SOURCE")
    for name in names:
        problem = load_problem(name)
        try:
            plan = plan_problem(problem, backend)  # traced once, written with every knob value
            space = plan_space(plan, Backend(backend))
        except Unsupported:
            continue
        for i, settings in enumerate(_settings(space)):
            code = build_module(problem, plan, Backend(backend), settings, "test")
            src = _INCLUDES.sub("", re.search(key + r" = r'''\n(.*?)'''", code, re.S).group(1))
            if src not in seen:  # settings differing only outside this unit write the same text (and symbols)
                seen.add(src)
                out.append((f"{name}_{i}", src))
    return out


def _unit(sources: list[tuple[str, str]], prelude: str) -> str:
    parts = [prelude]
    for tag, src in sources:
        parts.append(f"namespace t_{tag} {{\n{src}\n}}\n")
    return "\n".join(parts)


def test_cpp_sources_of_every_knob_value_compile():
    if shutil.which("g++") is None:
        pytest.skip("no g++")
    sources = _sources("cpp", builtin_names())
    assert len(sources) > 40
    prelude = _STD + TORCH_STANDIN
    text = _unit(sources, prelude)
    proc = subprocess.run(["g++", "-std=c++20", "-fsyntax-only", "-fopenmp-simd", "-x", "c++", "-"], input=text,
                          capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


_CUDA_PROBLEMS = ["relu", "softmax", "layernorm", "affine_gelu_scale", "mean_reduce", "rmsnorm"]


def test_cuda_host_units_compile_with_the_host_compiler_against_torch():
    """The C++ unit of every CUDA candidate: torch wrappers calling the launchers, no CUDA header."""
    if shutil.which("g++") is None:
        pytest.skip("no g++")
    from torch.utils.cpp_extension import include_paths

    sources = _sources("cuda", builtin_names(), key="_CPP_SOURCE")
    # host units differ by the launcher symbols' hash only when their kernels differ: one of each shape
    shapes: dict[str, tuple[str, str]] = {}
    for tag, src in sources:
        shapes.setdefault(re.sub(r"htam_[0-9a-f]{16}_", "htam_X_", src), (tag, src))
    sources = list(shapes.values())
    assert len(sources) >= 10
    assert all('extern "C"' in src and "<<<" not in src for _, src in sources)  # kernels live in the .cu
    # no CUDA include path below: the unit must build against the torch headers alone
    text = _unit(sources, "#include <torch/extension.h>\n#include <cstdint>\n")
    cmd = ["g++", "-std=c++20", "-fsyntax-only", "-x", "c++", "-"]
    for inc in include_paths() + [sysconfig.get_path("include")]:
        cmd += ["-isystem", inc]
    proc = subprocess.run(cmd, input=text, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
def test_cuda_sources_of_every_knob_value_compile_without_torch(tmp_path):
    """The .cu unit holds kernels and extern "C" launchers only: nvcc builds it with no torch include path."""
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc")
    sources = _sources("cuda", _CUDA_PROBLEMS)
    torch_names = re.compile(r"\b(torch|ATen|at|c10)::|#include <(torch|ATen|c10)")  # (symbol hashes may spell c10)
    assert sources and not any(torch_names.search(src) for _, src in sources)
    prelude = _STD + "#include <cuda_runtime.h>\n"
    path = tmp_path / "all.cu"
    path.write_text(_unit(sources, prelude))
    proc = subprocess.run(["nvcc", "-std=c++17", "-c", "-O0", "-o", str(tmp_path / "all.o"), str(path)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
