"""Random memories of any size, for round-trip properties and the benchmark."""

from __future__ import annotations

import random

from htam_engine.families import Backend, Bottleneck, Family
from htam_engine.memory import HTG, START, make_state
from htam_engine.memory.state import STATE_STATUSES, speedup_bucket
from htam_engine.memory.types import HistoryEntry, State

FAMILIES = list(Family)
BOTTLENECKS = list(Bottleneck)
BACKENDS = list(Backend)
SPEEDUPS = [None, 0.3, 0.7, 1.2, 1.7, 2.5]


def random_state(rng: random.Random) -> State:
    return make_state(rng.choice(STATE_STATUSES), rng.choice(FAMILIES), rng.choice(BACKENDS),
                      rng.choice(BOTTLENECKS), rng.choice(SPEEDUPS))


def random_bucket(rng: random.Random) -> str:
    return "|".join((rng.choice(STATE_STATUSES), rng.choice(FAMILIES).value, rng.choice(BOTTLENECKS).value,
                     speedup_bucket(rng.choice(SPEEDUPS))))


def grow(h: HTG, rng: random.Random, n_strategies: int, n_records: int, notes: int = 0) -> HTG:
    """Add about n_strategies learned strategies (with records) and n_records transition records."""
    dirs = h.directions()
    for i in range(n_strategies):
        d = rng.choice(dirs)
        sid = h.add_strategy(d, f"learned strategy {i}", f"apply trick number {i} to {d} with care {rng.random()}",
                             pitfalls="watch tails" if i % 2 else "", template=None,
                             families=[rng.choice(FAMILIES).value], backends=[], states=[], id=f"{d}/learned_{i}")
        a = h.strategy_attrs(sid)
        a["tries"] = rng.randint(0, 20)
        a["successes"] = rng.randint(0, a["tries"])
        a["gain_sum"] = rng.uniform(-2, 2)
        a["ctx"] = {f"{rng.choice(FAMILIES).value}|cuda": [a["tries"], a["successes"], a["gain_sum"]]}
        a["last_used"] = float(i)
        a["uses"] = [["s", j, 0.1] for j in range(i % 3)]
    sources = [START, *dirs]
    seen = 0
    while seen < n_records:
        a, b, bucket = rng.choice(sources), rng.choice(dirs), random_bucket(rng)
        e = h.edge(a, b)
        if e is not None and bucket in e["stats"]:
            continue
        r = rng.uniform(-1, 1)
        h.add_transition(a, b, bucket, rng.randint(1, 5), rng.randint(0, 1), r, r * r)
        seen += 1
    for i in range(notes):
        h.add_note(rng.choice(sources), rng.choice(dirs), {"when": f"w{i}", "why": "y", "risk": "", "source": "learned",
                                                           "session": "s", "step": i})
    return h


def random_history(rng: random.Random, h: HTG, n: int) -> list[HistoryEntry]:
    return [HistoryEntry(state=random_state(rng), direction=rng.choice(h.directions()), reward=rng.uniform(-1, 1))
            for _ in range(n)]
