"""The work check's region statistics on one tensor a kernel wrote by value (an in-place ReLU over
all but the last row of a 4096 x 4096 float32: not a region, so the statistics pass alone runs):
milliseconds per call of kernel_switch._unwritten_region_made_real, 5 repeats after 2 warm-ups.

    PYTHONPATH=. python3 tests/bench/cpu_region_check.py
"""

import time

import torch

from htam_engine.evaluate import kernel_switch as ks

t = torch.empty(4096, 4096)
recipe, states = ks._garbage_recipe(torch.randn(10)), []
ks._draw(t, recipe, states)
t[:-1].clamp_min_(0)
was = t.clone()
for _ in range(2):
    ks._unwritten_region_made_real(t, was, recipe, states)
t0 = time.perf_counter()
for _ in range(5):
    ks._unwritten_region_made_real(t, was, recipe, states)
print(f"{(time.perf_counter() - t0) / 5 * 1e3:.1f} ms per 16M-element tensor")
