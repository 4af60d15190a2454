"""Direction selection by transition attention — the one place the formula lives.

For every global direction g:

    score(g) = λ_t · Σ_{k=1..K} w_k · sim(s_now, s_{t−k}) · V(d_{t−k} → g | s_now)
             + λ_p · prior(g | s_now)
             + λ_e · explore(g)

* History entries are keys: the entry k steps back holds its state s_{t−k} and the direction
  d_{t−k} it took (k = 1 is the most recent step). An empty history is one virtual entry
  (START, s_now), so a bank's first-step experience still counts.
* w_k = exp(−decay · (k − 1)): position-aware weights decaying with k.
* sim (state.similarity) is in [0, 1]: how alike the current state is to the key's state.
* V(a → g | s) is the learned value of the transition edge in states like s, a count-weighted
  blend over state levels (exact bucket, same status+family, same family, any) with
  the expert prior value of the edge as a pseudo-observation:
      V = (Σ_l c_l · reward_sum_l + τ · prior_edge) / (Σ_l c_l · count_l + τ),  c = LEVEL_WEIGHTS
  so an edge with no experience is worth its prior, and experience in the exact state counts most.
* prior(g | s) = base + status[s] + family[s] + bottleneck[s] from the direction's seed prior.
* explore(g) = sqrt(ln(1 + N) / (1 + n_g)), n_g = experience into g for this family in the bank
  plus the uses of g in the history, N = Σ n_g (a UCB bonus for directions tried less).

Pick: argmax (temperature 0; ties go to the earlier direction) or softmax sampling at the
temperature with the caller's seeded rng. Ablations:
  "no-prefix"   only the most recent history entry (K = 1)
  "no-position" w_k = 1 for every k
  "flat"        no hierarchy: every direction scores its best strategy ranked directly
                (retrieve(..., ablation="flat") then ranks all strategies)
  "random"      a direction drawn uniformly from those that apply in the state (a direction
                applies when one of its strategies does: retrieve.applies; when none does,
                every direction is drawn from); scores are still computed for the log
  "no-update"   honoured by learn.update (memory never changes); selection as usual
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from htam_engine.memory.graph import HTG, START, MemoryDataError, levels
from htam_engine.memory.retrieve import applies
from htam_engine.memory.state import similarity
from htam_engine.memory.types import DirectionScore, HistoryEntry, Selection, State, TransitionTerm

ABLATIONS = ("no-prefix", "no-position", "flat", "random", "no-update")
LEVEL_WEIGHTS = (1.0, 0.5, 0.25, 0.1)  # exact bucket, status|family, family, any


@dataclass(slots=True)
class SelectConfig:
    k_history: int = 4
    decay: float = 0.5  # w_k = exp(-decay * (k - 1))
    temperature: float = 0.0  # 0 = argmax
    transition_weight: float = 1.0  # λ_t
    prior_weight: float = 1.0  # λ_p
    exploration: float = 0.15  # λ_e
    prior_strength: float = 2.0  # τ: pseudo-count of the edge prior
    ablation: str | None = None

    def __post_init__(self) -> None:
        if self.ablation is not None and self.ablation not in ABLATIONS:
            raise ValueError(f"unknown ablation {self.ablation!r} (known: {', '.join(ABLATIONS)})")


def edge_value(htg: HTG, a: str, g: str, state: State, prior_strength: float = 2.0) -> float:
    """V(a → g | state): see the module docstring."""
    e = htg.edge(a, g)
    if e is None:
        return 0.0
    agg = e["agg"]
    num = prior_strength * e["prior"]
    den = prior_strength
    for c, lv in zip(LEVEL_WEIGHTS, levels(state.key())):
        st = agg.get(lv)
        if st is not None:
            num += c * st[2]
            den += c * st[0]
    return num / den


def state_prior(htg: HTG, g: str, state: State) -> float:
    p = htg.direction_info(g)["prior"]
    return (float(p.get("base", 0.0)) + float((p.get("status") or {}).get(state.status, 0.0))
            + float((p.get("family") or {}).get(state.family.value, 0.0))
            + float((p.get("bottleneck") or {}).get(state.bottleneck.value, 0.0)))


def _experience_into(htg: HTG, g: str, family: str) -> int:
    n = 0
    for a in htg.g.predecessors(g):
        e = htg.edge(a, g)
        if e is not None:
            st = e["agg"].get(family)
            if st is not None:
                n += st[0]
    return n


def applicable_directions(htg: HTG, state: State) -> list[str]:
    """Directions with at least one strategy meant for this state (all of them when none has)."""
    found = [g for g in htg.directions()
             if any(applies(htg.strategy_attrs(sid), state) for sid in htg.strategy_ids(g))]
    return found or htg.directions()


def position_weights(config: SelectConfig, k_max: int) -> list[float]:
    if config.ablation == "no-position":
        return [1.0] * k_max
    return [math.exp(-config.decay * k) for k in range(k_max)]


def _keys(history: list[HistoryEntry], state: State, config: SelectConfig) -> list[HistoryEntry]:
    """History entries attended over, most recent first."""
    k_max = 1 if config.ablation == "no-prefix" else max(1, config.k_history)
    recent = list(reversed(history[-k_max:]))
    return recent or [HistoryEntry(state=state, direction=START)]


def score_directions(htg: HTG, state: State, history: list[HistoryEntry],
                     config: SelectConfig) -> list[DirectionScore]:
    """Every direction's score with its per-term breakdown, best first."""
    directions = htg.directions()
    if config.ablation == "flat":
        return _flat_scores(htg, state, directions)
    keys = _keys(history, state, config)
    weights = position_weights(config, len(keys))
    used = {}
    for h in history:
        used[h.direction] = used.get(h.direction, 0) + 1
    n_g = {g: _experience_into(htg, g, state.family.value) + used.get(g, 0) for g in directions}
    total_n = sum(n_g.values())
    log_n = math.log(1 + total_n)
    scores = []
    for g in directions:
        terms = []
        for k, (h, w) in enumerate(zip(keys, weights), start=1):
            sim = similarity(state, h.state)
            v = edge_value(htg, h.direction, g, state, config.prior_strength) if h.direction in htg.g else 0.0
            terms.append(TransitionTerm(k=k, from_direction=h.direction, position_weight=w, similarity=sim,
                                        edge_value=v, contribution=w * sim * v))
        transition = config.transition_weight * sum(t.contribution for t in terms)
        prior = config.prior_weight * state_prior(htg, g, state)
        explore = config.exploration * (math.sqrt(log_n / (1 + n_g[g])) if total_n else 1.0)
        scores.append(DirectionScore(direction=g, total=transition + prior + explore, transition=transition,
                                     prior=prior, exploration=explore, terms=terms))
    scores.sort(key=lambda s: -s.total)  # stable: ties keep the directions' order
    return scores


def _flat_scores(htg: HTG, state: State, directions: list[str]) -> list[DirectionScore]:
    from htam_engine.memory.retrieve import rank_strategies

    best: dict[str, float] = {}
    for view in rank_strategies(htg, htg.strategy_ids(), state):
        best.setdefault(view.direction, view.score)
    scores = [DirectionScore(direction=g, total=best.get(g, -math.inf), transition=0.0,
                             prior=best.get(g, -math.inf), exploration=0.0) for g in directions]
    scores.sort(key=lambda s: -s.total)
    return scores


def select_direction(htg: HTG, state: State, history: list[HistoryEntry], *, rng: random.Random,
                     config: SelectConfig | None = None, forced: str | None = None) -> Selection:
    config = config or SelectConfig()
    if forced is not None and forced not in htg.directions():
        raise MemoryDataError(f"unknown direction {forced!r}")
    scores = score_directions(htg, state, history, config)
    if not scores:
        raise MemoryDataError("the memory has no directions")
    if forced is not None:
        chosen, mode = forced, "forced"
    elif config.ablation == "random":
        chosen, mode = rng.choice(applicable_directions(htg, state)), "random"
    elif config.temperature > 0:
        top = max(s.total for s in scores)
        ws = [math.exp((s.total - top) / config.temperature) for s in scores]
        z = sum(ws)
        for s, w in zip(scores, ws):
            s.probability = w / z
        chosen = rng.choices([s.direction for s in scores], weights=ws, k=1)[0]
        mode = "sample"
    else:
        chosen, mode = scores[0].direction, "argmax"
    if config.ablation in ("flat", "no-prefix", "no-position"):
        mode = config.ablation
    win = next(s for s in scores if s.direction == chosen)
    return Selection(direction=chosen, scores=scores, mode=mode, ablation=config.ablation,
                     reason=_reason(win, mode))


def _reason(s: DirectionScore, mode: str) -> str:
    best = max(s.terms, key=lambda t: abs(t.contribution), default=None)
    via = f" (mostly from {best.from_direction} at k={best.k})" if best and best.contribution else ""
    return (f"{s.direction} by {mode}: total {s.total:+.3f} = transition {s.transition:+.3f}{via}"
            f" + prior {s.prior:+.3f} + exploration {s.exploration:+.3f}")
