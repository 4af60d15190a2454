"""Where does a Triton candidate's first call spend its time in a fresh sandbox? Prints a table.

Run on a GPU machine:  python3 tests/bench/gpu_triton_first_call.py
Each sandbox compiles into a private, empty Triton cache (zygote._private_compile_caches), so its
first call pays for the driver's utilities and every kernel's launcher (both built with the C
compiler) beside the kernels themselves: 3-4 s a candidate in the throughput bench on the H200.
This runs the same sequence three times, each in a fresh process with an empty cache, and prints
the median of each step.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r'''
import json, time
t = [time.perf_counter()]
def mark(): t.append(time.perf_counter())
import torch, triton, triton.language as tl
mark()
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
mark()
triton.runtime.driver.active.utils  # the driver's utilities (cuda_utils, built with the C compiler)
mark()

@triton.jit
def scale(x, y, a, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y + i, tl.load(x + i, mask=i < n) * a, mask=i < n)

@triton.jit
def add3(x, y, z, o, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    m = i < n
    tl.store(o + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m) + tl.load(z + i, mask=m), mask=m)

@triton.jit
def relu(x, y, a, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y + i, tl.maximum(tl.load(x + i, mask=i < n), 0.0) * a, mask=i < n)

x = torch.randn(1 << 20, device="cuda"); y = torch.empty_like(x)
grid = (triton.cdiv(x.numel(), 1024),)
scale[grid](x, y, 2.0, x.numel(), B=1024); torch.cuda.synchronize()
mark()
add3[grid](x, x, x, y, x.numel(), B=1024); torch.cuda.synchronize()
mark()
relu[grid](x, y, 2.0, x.numel(), B=1024); torch.cuda.synchronize()
mark()
print(json.dumps([b - a for a, b in zip(t, t[1:])]))
'''
STEPS = ["import torch, triton", "CUDA context", "driver utilities (cuda_utils)",
         "first kernel (compile, its launcher, launch)", "a kernel of another signature",
         "a kernel of the first one's signature"]


def main() -> int:
    runs = []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "TRITON_CACHE_DIR": cache}
            child = os.path.join(cache, "first_call.py")  # @triton.jit reads its function's source file
            with open(child, "w") as fh:
                fh.write(CHILD)
            out = subprocess.run([sys.executable, child], env=env, capture_output=True, text=True, timeout=300)
            if out.returncode:
                print(out.stderr[-3000:])
                return 1
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{'step':48s} median s  (of {len(runs)} fresh processes, each with an empty Triton cache)")
    for i, step in enumerate(STEPS):
        print(f"{step:48s} {statistics.median(r[i] for r in runs):8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
