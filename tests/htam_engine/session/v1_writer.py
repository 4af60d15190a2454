"""Writer of format-version-1 session files (the layout before envelopes and positional records).

Kept to produce fixtures/session_v1.htam: `python3 v1_writer.py` rewrites it. The layout is
documented in htam_engine/session/migrate.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import msgpack

FIXTURE = Path(__file__).parent / "fixtures" / "session_v1.htam"

CODE = ("import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
        "        return ext.relu(x)\n")


def _result(status: str, speedup: float | None) -> dict:
    return {"status": status, "correct": status == "ok", "runtime_ms": 0.5 if speedup else None,
            "ref_runtime_ms": 0.5 * speedup if speedup else None, "speedup_eager": speedup,
            "speedup_compile": None, "diagnostics": {"compiler": [], "mismatch": None,
                                                     "message": "" if status == "ok" else "boom", "log": ""},
            "integrity": [], "device": "cpu", "backend": "cpp", "timings": [0.5, 0.51]}


def v1_document() -> dict:
    state = {"status": "start", "family": "elementwise", "bottleneck": "memory", "speedup_bucket": "none",
             "backend": "cpp"}
    steps = [
        {"step": 1, "state": state, "direction": "operator_fusion", "mode": "argmax",
         "scores": [{"direction": "operator_fusion", "total": 0.9, "transition": 0.0, "prior": 0.8,
                     "exploration": 0.1}],
         "strategies": [{"id": "operator_fusion/fuse_chain", "direction": "operator_fusion",
                         "title": "Fuse chain", "description": "one kernel"}],
         "prompt": "prompt 1", "output": "```python\n" + CODE + "```", "code": CODE,
         "result": _result("compile_error", None), "decision": {"action": "approve", "by": "auto", "reason": ""},
         "reward": -1.0, "started_at": 10.0, "finished_at": 11.0,
         "delta": {"v": 1, "session": "v1-session", "step": 1, "reward": -1.0, "status": "compile_error",
                   "transitions": [["_start", "operator_fusion", "start|elementwise|memory|none", 1, 0, -1.0, 1.0]],
                   "strategies": [["operator_fusion/fuse_chain", "elementwise|cpp", 1, 0, -1.0, 11.0]],
                   "notes": [], "added": []}},
        {"step": 2, "state": dict(state, status="compile_error"), "direction": "vectorization", "mode": "argmax",
         "scores": [{"direction": "vectorization", "total": 0.5, "transition": 0.1, "prior": 0.3,
                     "exploration": 0.1}],
         "strategies": [{"id": "vectorization/float4", "direction": "vectorization", "title": "float4",
                         "description": "wide loads"}],
         "prompt": "prompt 2", "output": CODE, "code": CODE, "result": _result("ok", 1.5),
         "decision": {"action": "approve", "by": "person", "reason": "looks right"},
         "reward": 0.405, "started_at": 12.0, "finished_at": 13.0,
         "delta": {"v": 1, "session": "v1-session", "step": 2, "reward": 0.405, "status": "ok",
                   "transitions": [["operator_fusion", "vectorization", "compile_error|elementwise|memory|none",
                                    1, 1, 0.405, 0.164]],
                   "strategies": [["vectorization/float4", "elementwise|cpp", 1, 1, 0.405, 13.0]],
                   "notes": [], "added": []}},
    ]
    memory = {
        "directions": [
            {"id": "operator_fusion", "title": "Operator fusion", "description": "fuse", "prior": {"base": 0.1}},
            {"id": "vectorization", "title": "Vectorization", "description": "wide", "prior": {"base": 0.0}},
        ],
        "strategies": [
            {"id": "operator_fusion/fuse_chain", "direction": "operator_fusion", "title": "Fuse chain",
             "description": "one kernel", "pitfalls": "", "template": "ew_fused_scalar", "families": ["elementwise"],
             "backends": [], "states": [], "tries": 3, "successes": 2, "gain_sum": 0.7},
            {"id": "vectorization/float4", "direction": "vectorization", "title": "float4",
             "description": "wide loads", "pitfalls": "alignment", "template": "ew_fused_vec4", "families": [],
             "backends": [], "states": [], "tries": 0, "successes": 0, "gain_sum": 0.0},
        ],
        "edges": [{"from": "operator_fusion", "to": "vectorization", "bucket": "faster|elementwise|memory|1-1.5",
                   "count": 4, "successes": 3, "reward_sum": 1.2, "prior": 0.2,
                   "notes": [{"when": "fused", "why": "wider loads", "risk": "alignment", "source": "prior"}]}],
    }
    return {"format_version": 1, "id": "v1-session", "created_at": 1.0, "updated_at": 13.0, "parent": None,
            "problem": {"id": "builtin:relu", "source": "class Model: ...\n", "path": "relu.py", "overrides": {"N": 64}},
            "config": {"backend": "cpp", "device": "cpu", "proposer": "model", "model_name": "deepseek-r1",
                       "policy": "ask", "steps": 6, "samples": 1, "seed": 3},
            "memory": memory, "steps": steps, "best": {"code": CODE, "result": _result("ok", 1.5), "step": 2}}


def write_v1(path: Path) -> None:
    path.write_bytes(msgpack.packb(v1_document(), use_bin_type=True))


if __name__ == "__main__":
    write_v1(Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURE)
