"""Direction selection by transition attention — the one place the formula lives.

For every global direction g:

    score(g) = λ_t · Σ_{k=1..K} w_k · sim(s_now, s_{t−k}) · V(d_{t−k} → g | s_now)    (transition)
             + λ_p · prior(g | s_now) + λ_s · record*(g | s_now)                   (prior)
             + λ_e · ucb(g) − λ_r · r_g                                            (exploration)

* History entries are keys: the moves the current best candidate is made of (its lineage: the
  steps that improved the best, most recent first; k = 1 is the move that made the current best).
  A step that did not improve the best was not built on (the proposer starts from the best), so
  the next move does not follow it; the engine records a step's transition from the lineage's
  last move too (see lineage()). No lineage yet is one virtual entry (START, s_now), so a bank's
  first-step experience still counts.
* w_k = exp(−decay · (k − 1)): position-aware weights decaying with k.
* sim (state.similarity) is in [0, 1]: how alike the current state is to the key's state.
* V(a → g | s) is the learned value of the transition edge in states like s, a count-weighted
  blend over state levels (exact bucket, same status+family, same family, any) with
  the expert prior value of the edge as a pseudo-observation:
      V = (Σ_l c_l · reward_sum_l + τ · prior_edge) / (Σ_l c_l · count_l + τ),  c = LEVEL_WEIGHTS
  so an edge with no experience is worth its prior, and experience in the exact state counts most.
* prior(g | s) = base + status[s] + family[s] + bottleneck[s] from the direction's seed prior.
* record*(g | s) = the best of retrieve.record · n / (n + κ) among g's strategies meant for the
  state (what their n tries earned, most in this family and backend; 0 untried; strategy_records):
  the fine level informs the coarse pick once its evidence is consistent (κ keeps one lucky try
  in this session from pulling the next pick back to the same direction). Where the proposer
  names the strategy a direction's step would apply (propose.base.Moves: the offline proposer
  knows its first new candidate), record* is that strategy's record instead (applied_records): the
  step writes that move, and the best record among the direction's strategies let an untried one
  with nothing to change in this plan (0) hide what the applied move had earned (a convolution's
  NCHW layout, slower on every chain it was tried on, kept memory_access first on convolution
  chains because the broadcast-tile strategy beside it, which writes the same code there, was
  untried). Replay of the H200 table: warm steps to 95 % 2.43 -> 2.30, cold unchanged.
* ucb(g) = sqrt(ln(1 + N) / (1 + n_g)), n_g = experience into g for this family in the bank plus
  the uses of g in the history, N = Σ n_g (a bonus for directions tried less).
* r_g = the tries of g on the current best since it last improved: the state and the lineage are
  unchanged after such a try, so without this term the argmax would pick the direction that just
  failed again. λ_r = 0.3, not the 1.0 it was while the offline proposer could write the same
  candidate twice: now that it names the directions with new code left (`movable`, below), a
  direction that failed once keeps a second try while its other strategies rank high. Chosen on
  a replay of the H200 table (tests/bench/gpu_ablation.py --replay ... --select): warm steps to
  95 % 2.67 -> 2.43 with cold unchanged (3.03); 0.0 let a direction be re-picked at once.

A direction whose step found no move for the problem's code (the proposer's NO_MOVE: none of its
strategies changes anything this plan has) is barred for the rest of the session, in every arm,
random included: the plan does not change within a session, and on the H200 the full method spent
up to three of six steps re-picking such directions after a new best had reset r_g. A proposer that
can tell ahead (the offline one: propose.base.KnowsMoves) names the directions with a move left
before the step (`movable`), so no step is spent learning that a direction has none.

Why these weights: rewards are log speedups (a 1.5x step is +0.41), while the seed priors are
hand-written with spreads of 1-2; at λ_p = 1 and λ_e = 0.15 no learned edge could outweigh the
seed's ranking (a bank changed no choice) and untried directions got +0.3 of bonus. Measured on
the toy search (tests/support/toy_search.py) and on the offline proposer with synthetic timings
(tests/bench/gpu_ablation.py --synthetic); see the README's ablation section.

Pick, among the directions that apply in the state (applicable_directions: one of their strategies
is meant for it; every direction is scored and logged): argmax (temperature 0; ties go to the
earlier direction) or softmax sampling at the temperature with the caller's seeded rng. Ablations:
  "no-prefix"   only the most recent history entry (K = 1)
  "no-position" w_k = 1 for every k
  "flat"        no hierarchy: every direction scores its best strategy ranked directly
                (retrieve(..., ablation="flat") then ranks all strategies), less the retry term
  "random"      a direction drawn uniformly from those that apply in the state (a direction
                applies when one of its strategies does: retrieve.applies; when none does,
                every direction is drawn from); scores are still computed for the log
  "no-update"   honoured by learn.update (memory never changes); selection as usual
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from htam_engine.memory.graph import HTG, START, MemoryDataError, levels
from htam_engine.memory.retrieve import Match, applies, record
from htam_engine.memory.state import similarity
from htam_engine.memory.types import DirectionScore, HistoryEntry, Selection, State, TransitionTerm

if TYPE_CHECKING:  # the proposer's side of the seam imports memory's types, not the other way
    from htam_engine.propose.base import Moves

ABLATIONS = ("no-prefix", "no-position", "flat", "random", "no-update")
LEVEL_WEIGHTS = (1.0, 0.5, 0.25, 0.1)  # exact bucket, status|family, family, any


@dataclass(slots=True)
class SelectConfig:
    k_history: int = 4
    decay: float = 0.5  # w_k = exp(-decay * (k - 1))
    temperature: float = 0.0  # 0 = argmax
    transition_weight: float = 1.0  # λ_t
    prior_weight: float = 0.5  # λ_p
    exploration: float = 0.05  # λ_e
    retry_penalty: float = 0.3  # λ_r: per try of a direction on the current best that did not improve it
    prior_strength: float = 2.0  # τ: pseudo-count of the edge prior
    strategy_weight: float = 0.5  # λ_s: weight of the best record among g's strategies meant for the state
    strategy_confidence: float = 4.0  # κ: a strategy's record counts n / (n + κ) after its n tries
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


def strategy_records(htg: HTG, state: State, kappa: float = 0.0) -> dict[str, float | None]:
    """Per direction, the best record (retrieve.record: what the tries earned, most in this family
    and backend; 0 for an untried strategy), weighed n / (n + kappa) after n tries, among its
    strategies meant for the state; None when none of its strategies is meant for the state.
    One pass over the strategies."""
    m = Match.of(state)
    out: dict[str, float | None] = {}
    for g in htg.directions():
        best = None
        for a in htg.members_for_family(g, m.family):
            if applies(a, m):
                n = a["tries"]
                r = record(a, m) * n / (n + kappa) if n else 0.0  # what record() gives an untried strategy
                if best is None or r > best:
                    best = r
        out[g] = best
    return out


def applied_records(htg: HTG, state: State, records: dict[str, float | None], movable: Moves | None,
                    config: SelectConfig) -> dict[str, float | None]:
    """record*(g) as the step would earn it: where the proposer names the strategy a direction's step
    would apply (propose.base.Moves), that strategy's record (weighed n / (n + κ)) replaces the best
    record among the direction's strategies; the others keep the best."""
    named = movable.applies if movable is not None else None
    if not named:
        return records
    m = Match.of(state)
    out = dict(records)
    for g, sid in named.items():
        if g in out and htg.has_strategy(sid):
            a = htg.strategy_attrs(sid)
            n = a["tries"]
            out[g] = record(a, m) * n / (n + config.strategy_confidence) if n else 0.0
    return out


def applicable_directions(htg: HTG, state: State, records: dict[str, float | None] | None = None) -> list[str]:
    """Directions with at least one strategy meant for this state (all of them when none has)."""
    records = strategy_records(htg, state) if records is None else records
    return [g for g in htg.directions() if records[g] is not None] or htg.directions()


def _experience_into(htg: HTG, g: str, family: str) -> int:
    n = 0
    for a in htg.g.predecessors(g):
        e = htg.edge(a, g)
        if e is not None:
            st = e["agg"].get(family)
            if st is not None:
                n += st[0]
    return n


def position_weights(config: SelectConfig, k_max: int) -> list[float]:
    if config.ablation == "no-position":
        return [1.0] * k_max
    return [math.exp(-config.decay * k) for k in range(k_max)]


def lineage(history: list[HistoryEntry]) -> list[HistoryEntry]:
    """The moves the current best is made of (the steps that improved the best), oldest first."""
    return [h for h in history if h.improved]


def retries(history: list[HistoryEntry]) -> dict[str, int]:
    """How often each direction was tried on the current best since the best last improved."""
    last = max((i for i, h in enumerate(history) if h.improved), default=-1)
    out: dict[str, int] = {}
    for h in history[last + 1:]:
        out[h.direction] = out.get(h.direction, 0) + 1
    return out


def barred(history: list[HistoryEntry]) -> set[str]:
    """Directions that found no move for this problem earlier in the session (see the docstring)."""
    return {h.direction for h in history if h.no_move}


def _keys(history: list[HistoryEntry], state: State, config: SelectConfig) -> list[HistoryEntry]:
    """History entries attended over, most recent first."""
    k_max = 1 if config.ablation == "no-prefix" else max(1, config.k_history)
    recent = list(reversed(lineage(history)[-k_max:]))
    return recent or [HistoryEntry(state=state, direction=START)]


def score_directions(htg: HTG, state: State, history: list[HistoryEntry], config: SelectConfig,
                     records: dict[str, float | None] | None = None) -> list[DirectionScore]:
    """Every direction's score with its per-term breakdown, best first."""
    directions = htg.directions()
    records = strategy_records(htg, state, config.strategy_confidence) if records is None else records
    tried = retries(history)
    if config.ablation == "flat":
        return _flat_scores(htg, state, directions, tried, config.retry_penalty)
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
        prior = (config.prior_weight * state_prior(htg, g, state)
                 + config.strategy_weight * (records[g] or 0.0))
        explore = (config.exploration * (math.sqrt(log_n / (1 + n_g[g])) if total_n else 1.0)
                   - config.retry_penalty * tried.get(g, 0))
        scores.append(DirectionScore(direction=g, total=transition + prior + explore, transition=transition,
                                     prior=prior, exploration=explore, terms=terms))
    scores.sort(key=lambda s: -s.total)  # stable: ties keep the directions' order
    return scores


def _flat_scores(htg: HTG, state: State, directions: list[str], tried: dict[str, int],
                 retry_penalty: float) -> list[DirectionScore]:
    from htam_engine.memory.retrieve import rank_strategies

    best: dict[str, float] = {}
    for view in rank_strategies(htg, htg.strategy_ids(), state):
        best.setdefault(view.direction, view.score)
    scores = []
    for g in directions:
        prior, explore = best.get(g, -math.inf), -retry_penalty * tried.get(g, 0)
        scores.append(DirectionScore(direction=g, total=prior + explore, transition=0.0, prior=prior,
                                     exploration=explore))
    scores.sort(key=lambda s: -s.total)
    return scores


def select_direction(htg: HTG, state: State, history: list[HistoryEntry], *, rng: random.Random,
                     config: SelectConfig | None = None, forced: str | None = None,
                     movable: Moves | None = None) -> Selection:
    """`movable`: the directions the proposer says would change the code from here (None: it cannot
    tell); the others are set aside like barred ones, in every arm."""
    config = config or SelectConfig()
    if forced is not None and forced not in htg.directions():
        raise MemoryDataError(f"unknown direction {forced!r}")
    records = strategy_records(htg, state, config.strategy_confidence)
    scores = score_directions(htg, state, history, config, applied_records(htg, state, records, movable, config))
    if not scores:
        raise MemoryDataError("the memory has no directions")
    applicable = applicable_directions(htg, state, records)
    no_move = barred(history)
    applicable = [g for g in applicable if g not in no_move and (movable is None or g in movable)] or applicable
    fits = set(applicable)
    candidates = [s for s in scores if s.direction in fits]  # best first
    if forced is not None:
        chosen, mode = forced, "forced"
    elif config.ablation == "random":
        chosen, mode = rng.choice(applicable), "random"
    elif config.temperature > 0:
        top = max(s.total for s in candidates)
        ws = [math.exp((s.total - top) / config.temperature) for s in candidates]
        z = sum(ws)
        for s in scores:
            s.probability = 0.0
        for s, w in zip(candidates, ws):
            s.probability = w / z
        chosen = rng.choices([s.direction for s in candidates], weights=ws, k=1)[0]
        mode = "sample"
    else:
        chosen, mode = candidates[0].direction, "argmax"
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
