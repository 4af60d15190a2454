"""Where does a CUDA load_inline compile spend its time? Prints a table.

Run on a GPU machine:  python3 tests/bench/gpu_compile_probe.py
Builds the same small kernel (distinct extension names, so nothing is cached)
under several build settings and prints the wall time of each.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time

import torch
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
__global__ void scale_kernel(const float* x, float* y, float a, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
torch::Tensor scale(torch::Tensor x, double a) {
    auto y = torch::empty_like(x);
    long n = x.numel();
    scale_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), (float)a, n);
    return y;
}
"""
CPP_DECL = "torch::Tensor scale(torch::Tensor x, double a);"


def build(tag: str, **kw) -> float:
    d = tempfile.mkdtemp(prefix=f"probe_{tag}_")
    t0 = time.perf_counter()
    mod = load_inline(name=f"probe_{tag}", cpp_sources=CPP_DECL, cuda_sources=CUDA_SRC,
                      functions=["scale"], build_directory=d, verbose=False, **kw)
    dt = time.perf_counter() - t0
    x = torch.randn(1000, device="cuda")
    assert torch.allclose(mod.scale(x, 2.0), 2 * x)
    log = os.path.join(d, ".ninja_log")
    if os.path.exists(log):  # per-target start/end times (ms): which translation unit dominates
        for line in open(log).read().splitlines()[1:]:
            start, end, _, target, _ = line.split("\t")
            print(f"   {tag:10s} {target:20s} {(int(end) - int(start)) / 1000:6.1f} s")
    shutil.rmtree(d, ignore_errors=True)
    return dt


def main() -> None:
    print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0), "cores", os.cpu_count())
    rows = []
    rows.append(("default", build("default")))
    os.environ["TORCH_CUDA_ARCH_LIST"] = "9.0"
    rows.append(("arch 9.0 only", build("arch90")))
    rows.append(("arch 9.0 + no error wrap", build("nowrap", with_pytorch_error_handling=False)))
    try:
        rows.append(("arch 9.0 + pch (first, builds pch)", build("pch1", use_pch=True)))
        rows.append(("arch 9.0 + pch (reused)", build("pch2", use_pch=True)))
    except Exception as exc:  # noqa: BLE001
        print("pch failed:", exc)
    rows.append(("arch 9.0 + -O1 host", build("o1", extra_cflags=["-O1"])))
    for name, dt in rows:
        print(f"{name:40s} {dt:7.1f} s")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
