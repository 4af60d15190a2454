"""Which import poisons fork for CUDA (a child of the process then cannot use CUDA)?

Each step runs in a fresh interpreter: import up to that step, fork, and ask the child whether
torch marks it as a bad fork (and whether it can allocate on the GPU). Run on a CUDA machine:

    python3 tests/bench/gpu_probe_fork.py
"""

import os
import subprocess
import sys

STEPS = [
    "import torch",
    "import torch.utils.cpp_extension",
    "import triton",
    "import triton.language",
    "from htam_engine.evaluate import sandbox",
    "from htam_engine.problems import loader",
    "from htam_engine.session import codec",
    "from htam_engine.evaluate import zygote; zygote._import_everything()",
]

CHILD = r"""
import os, sys, traceback
import torch
spied = []
for name in ("_cuda_getDeviceCount", "_cuda_init"):
    if hasattr(torch._C, name):
        orig = getattr(torch._C, name)
        def spy(*a, _orig=orig, _name=name):
            spied.append(_name + "\n" + "".join(traceback.format_stack(limit=12)))
            return _orig(*a)
        setattr(torch._C, name, spy)
exec(sys.argv[1])
pid = os.fork()
if pid == 0:
    bad = torch._C._cuda_isInBadFork()
    try:
        torch.empty(1, device="cuda"); ok = "alloc ok"
    except Exception as e:
        ok = "alloc failed: " + str(e)[:80]
    print(f"child bad_fork={bad} {ok}", flush=True)
    os._exit(0)
os.waitpid(pid, 0)
print("nvml count", torch.cuda._device_count_nvml(), "; calls before fork:", len(spied))
for s in spied[:2]:
    print(s)
"""

for env_extra in ({}, {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"}):
    print("== env", env_extra, flush=True)
    for step in range(len(STEPS)):
        code = "\n".join(STEPS[: step + 1])
        r = subprocess.run([sys.executable, "-c", CHILD, code], capture_output=True, text=True,
                           env={**os.environ, **env_extra}, timeout=120)
        print(f"-- after: {STEPS[step]}\n{r.stdout.strip()}\n{r.stderr.strip()[-600:]}", flush=True)
