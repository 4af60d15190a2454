"""Does a GPU come up in a process whose writes Landlock confined? Each variant runs in a fresh
process (python3 tests/bench/gpu_probe_landlock.py):

  none          no ruleset: the control
  confined      the sandbox's ruleset (landlock.install as zygote.confine_writes calls it: a scratch
                folder, /dev/shm, device files opened for writing, its own /proc files)
  without_proc  the same without its own /proc files, as at b1c3113..ff6ebfe: the driver may not name
                its threads (/proc/self/task/<tid>/comm) and cuInit fails with error 304

Each then makes a CUDA context, allocates, runs a matmul, times it with events and launches a Triton
kernel (its compile writing into the scratch folder). Prints the device files' modes first.
(On the H100 at 873e576: none and confined ok, without_proc error 304.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

VARIANTS = ("none", "confined", "without_proc")


def _work() -> str:
    import torch
    import triton
    import triton.language as tl

    x = torch.randn(1024, 1024, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    y = x @ x
    end.record()
    torch.cuda.synchronize()

    @triton.jit
    def double(p, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(p + i, tl.load(p + i, mask=i < n) * 2, mask=i < n)

    z = y.flatten()[:4096].clone()
    double[(4,)](z, 4096, BLOCK=1024)
    torch.cuda.synchronize()
    return f"matmul {start.elapsed_time(end):.3f} ms, triton ok {bool(torch.allclose(z, y.flatten()[:4096] * 2))}"


def _child(variant: str, scratch: str) -> None:
    from htam_engine.evaluate import landlock

    os.environ["TRITON_CACHE_DIR"] = os.path.join(scratch, "triton")
    os.environ["TMPDIR"] = scratch
    os.environ["CUDA_CACHE_PATH"] = os.path.join(scratch, "nv")
    steps = []
    if variant != "none":
        refused = landlock.install([scratch, "/dev/shm"], own_process=variant == "confined")
        steps.append(f"ruleset: {refused or 'installed'} (ABI {landlock.abi_version()})")
    try:
        steps.append(_work())
    except Exception as exc:  # noqa: BLE001 - the probe reports what failed
        steps.append(f"FAILED: {type(exc).__name__}: {str(exc)[:300]}")
    print(json.dumps({"variant": variant, "steps": steps}))


def _run(variant: str) -> str:
    scratch = tempfile.mkdtemp(prefix=f"landlock-probe-{variant}-")
    proc = subprocess.run([sys.executable, __file__, "--child", variant, scratch],
                          capture_output=True, text=True, timeout=240)
    shutil.rmtree(scratch, ignore_errors=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    return lines[-1] if lines else f"{variant}: exit {proc.returncode}: {proc.stderr[-600:]}"


def main() -> None:
    print("uid", os.getuid())
    subprocess.run("ls -l /dev/nvidia* 2>&1", shell=True)
    for variant in VARIANTS:
        print(_run(variant), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3])
    else:
        main()
