"""Runs Triton candidates under TRITON_INTERPRET=1 in a fresh process and compares with the reference.

Triton must be imported with the interpreter switched on from the start, which a test
process that imported it earlier cannot promise; so the checks run here, in one batch.
Input (stdin): JSON list of {"id", "problem", "overrides", "code", "rtol", "atol"}.
Each output is compared with the float32 reference and, for a float32 output, with the reference
run in float64 (as the evaluation does).
Output (stdout, last line): JSON {id: {"ok": bool, "message": str}}.
The judge's kernel switch is installed as in a sandbox (its interpreter guard applies).
"""

from __future__ import annotations

import json
import os
import sys

os.environ["TRITON_INTERPRET"] = "1"


def _float64_outputs(model, inputs: list):
    """The reference run in float64 (parameters and floating inputs), or None where it cannot run so."""
    import copy

    import torch

    try:
        exact = copy.deepcopy(model).double()
        with torch.no_grad():
            return exact(*[x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                           for x in inputs])
    except Exception:  # noqa: BLE001 - a model with a dtype-specific op: the float32 comparison stands alone
        return None


def check(case: dict) -> dict:
    import torch

    from htam_engine.problems import instantiate, load_problem

    try:
        problem = load_problem(case["problem"], case.get("overrides") or None)
        ns: dict = {}
        exec(compile(case["code"], f"<candidate {case['id']}>", "exec"), ns)  # noqa: S102 - generated here
        inst = instantiate(problem)
        init = inst.get_init_inputs()
        torch.manual_seed(3)
        ref = inst.Model(*init)
        torch.manual_seed(3)
        new = ns["ModelNew"](*init)
        torch.manual_seed(4)
        xs = inst.get_inputs()
        exact = _float64_outputs(ref, xs)
        with torch.no_grad():
            expected, actual = ref(*xs), new(*xs)
        tol = {"rtol": case.get("rtol", 1e-4), "atol": case.get("atol", 1e-4)}
        torch.testing.assert_close(actual, expected, **tol)
        if exact is not None and isinstance(actual, torch.Tensor) and actual.dtype == torch.float32:
            # the evaluation also measures a candidate against the reference run in float64
            torch.testing.assert_close(actual.double(), exact, **tol, msg=lambda m: f"against float64: {m}")
        return {"ok": True, "message": ""}
    except Exception as exc:  # noqa: BLE001 - reported to the test
        return {"ok": False, "message": f"{type(exc).__name__}: {str(exc)[:800]}"}


def main() -> None:
    # The judge's kernel switch, as every sandbox installs it: on the CPU it holds each interpreted
    # kernel to what a GPU compile allows (evaluate/interpreter_guard.py), which every kernel the
    # generators write must meet.
    from htam_engine.evaluate.kernel_switch import KernelSwitch

    KernelSwitch().install()
    cases = json.load(sys.stdin)
    results = {case["id"]: check(case) for case in cases}
    sys.stdout.write("\n" + json.dumps(results) + "\n")


if __name__ == "__main__":
    main()
