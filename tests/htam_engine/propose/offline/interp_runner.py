"""Runs Triton candidates under TRITON_INTERPRET=1 in a fresh process and compares with the reference.

Triton must be imported with the interpreter switched on from the start, which a test
process that imported it earlier cannot promise; so the checks run here, in one batch.
Input (stdin): JSON list of {"id", "problem", "overrides", "code", "rtol", "atol"}.
Each output is compared with the float32 reference and, for a float32 output, with the reference
run in float64 (as the evaluation does).
Output (stdout, last line): JSON {id: {"ok": bool, "message": str}}.
"""

from __future__ import annotations

import json
import os
import sys

os.environ["TRITON_INTERPRET"] = "1"


def check(case: dict) -> dict:
    import torch

    from htam_engine.evaluate.checks.exact import Float64Reference
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
        exact = Float64Reference(ref).outputs(xs)
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
    cases = json.load(sys.stdin)
    results = {case["id"]: check(case) for case in cases}
    sys.stdout.write("\n" + json.dumps(results) + "\n")


if __name__ == "__main__":
    main()
