"""Older session formats -> the current Session record.

Format version 1 (no envelope, no checksum): one msgpack map of named records
    {"format_version": 1, "id", "created_at", "updated_at", "parent",
     "problem": {"id", "source", "path", "overrides"},
     "config": {"backend", "device", "proposer", "model_name", "policy", "steps", "samples", "seed"},
     "memory": {"directions": [{"id", "title", "description", "prior"}],
                "strategies": [{"id", "direction", "title", "description", "pitfalls", "template",
                                "families", "backends", "states", "tries", "successes", "gain_sum"}],
                "edges": [{"from", "to", "bucket", "count", "successes", "reward_sum", "prior",
                           "notes": [{"when", "why", "risk", "source"}]}]},
     "steps": [{"step", "state": {State fields}, "direction", "mode",
                "scores": [{"direction", "total", "transition", "prior", "exploration"}],
                "strategies": [{"id", "direction", "title", "description"}],
                "prompt", "output", "code", "result": EvalResult dict | None,
                "decision": {"action", "by", "reason"}, "reward", "delta", "started_at", "finished_at"}],
     "best": {"code", "result", "step"} | None}
Version 1 kept one sample per step, no per-term selection breakdown and no squared rewards on
edges (migrated as sum² / count, the smallest consistent value).
"""

from __future__ import annotations

from typing import Any

from htam_engine.evaluate.result import EvalResult
from htam_engine.memory.graph import HTG
from htam_engine.memory.types import DirectionScore, Retrieval, Selection, State, StrategyView
from htam_engine.propose.base import Usage
from htam_engine.session import codec
from htam_engine.session.model import Candidate, Decision, ProblemRef, Session, SessionConfig, StepRecord


def _memory_v1(m: dict[str, Any]) -> dict[str, Any]:
    h = HTG()
    for d in m["directions"]:
        h.add_direction(d["id"], d["title"], d["description"], d.get("prior") or {}, source="seed")
    for s in m["strategies"]:
        sid = h.add_strategy(s["direction"], s["title"], s["description"], s.get("pitfalls", ""), s.get("template"),
                             source="seed", families=s.get("families", ()), backends=s.get("backends", ()),
                             states=s.get("states", ()), id=s["id"])
        a = h.strategy_attrs(sid)
        a["tries"], a["successes"], a["gain_sum"] = int(s.get("tries", 0)), int(s.get("successes", 0)), \
            float(s.get("gain_sum", 0.0))
    for e in m["edges"]:
        n, rs = int(e.get("count", 0)), float(e.get("reward_sum", 0.0))
        if n:
            h.add_transition(e["from"], e["to"], e["bucket"], n, int(e.get("successes", 0)), rs, rs * rs / n)
        edge = h.ensure_edge(e["from"], e["to"])
        edge["prior"] = float(e.get("prior", 0.0))
        for note in e.get("notes") or ():
            edge["notes"].append({"when": note.get("when", ""), "why": note.get("why", ""),
                                  "risk": note.get("risk", ""), "source": note.get("source", "prior"),
                                  "session": "", "step": 0})
    return h.to_data()


def _step_v1(s: dict[str, Any]) -> StepRecord:
    state = codec.decode(State, s["state"])
    scores = [DirectionScore(direction=x["direction"], total=float(x["total"]), transition=float(x["transition"]),
                             prior=float(x["prior"]), exploration=float(x["exploration"])) for x in s["scores"]]
    selection = Selection(direction=s["direction"], scores=scores, mode=s.get("mode", "argmax"))
    retrieval = Retrieval(direction=s["direction"], notes=[], strategies=[
        StrategyView(id=v["id"], direction=v.get("direction", s["direction"]), title=v["title"],
                     description=v.get("description", "")) for v in s.get("strategies", [])])
    dec = s.get("decision")
    result = s.get("result")
    cand = Candidate(sample=0, code=s.get("code"), prompt=s.get("prompt", ""), model_output=s.get("output", ""),
                     decision=Decision(action=dec["action"], by=dec["by"], reason=dec.get("reason", "")) if dec else None,
                     result=EvalResult.from_dict(result) if result else None)
    return StepRecord(step=int(s["step"]), state=state, selection=selection, retrieval=retrieval, candidates=[cand],
                      chosen=0, reward=float(s.get("reward", 0.0)), started_at=float(s.get("started_at", 0.0)),
                      finished_at=float(s.get("finished_at", 0.0)), memory_delta=dict(s.get("delta") or {}))


def migrate_v1(d: dict[str, Any]) -> Session:
    """A version-1 map (see the module docstring) as a current Session."""
    if d.get("format_version") != 1:
        raise codec.CodecError(f"unknown legacy format {d.get('format_version')!r}")
    p, c = d["problem"], d["config"]
    config = SessionConfig(backend=c.get("backend", "cpp"), device=c.get("device", "cpu"),
                           proposer=c.get("proposer", "offline"), model=c.get("model_name", ""),
                           policy=c.get("policy", "auto"), steps=int(c.get("steps", 6)),
                           samples=int(c.get("samples", 1)), seed=int(c.get("seed", 0)))
    steps = [_step_v1(s) for s in d["steps"]]
    best = d.get("best") or None
    best_result = EvalResult.from_dict(best["result"]) if best and best.get("result") else None
    running = None
    for rec in steps:
        r = rec.outcome.result if rec.outcome else None
        if r is not None and r.ok and r.speedup_eager is not None:
            running = r.speedup_eager if running is None else max(running, r.speedup_eager)
        rec.best_speedup = running
    return Session(id=d["id"], problem=ProblemRef(id=p["id"], source=p["source"], path=p.get("path"),
                                                  overrides=dict(p.get("overrides") or {})),
                   config=config, memory_initial=_memory_v1(d["memory"]), steps=steps,
                   best_code=best.get("code") if best else None, best_result=best_result,
                   best_step=best.get("step") if best else None, parent=d.get("parent"),
                   created_at=float(d.get("created_at", 0.0)), updated_at=float(d.get("updated_at", 0.0)),
                   usage=Usage())
