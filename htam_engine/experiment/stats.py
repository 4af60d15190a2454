"""The experiment's statistics, computed in one place from run records.

Per run:
  * reference best of a problem: the best correct speedup any run (any arm, seed or start) found for it;
  * steps to 95 %: the first step after which the run's best reaches THRESHOLD x the reference best;
    a run that never does counts as the step budget + 1. Problems no run solved are left out;
  * best@k: the run's best correct speedup after k steps, 1.0 when it has none yet (the user keeps
    PyTorch, as in the batch metrics);
  * correct: the run found a correct kernel within its budget.

Per arm (and starting memory): the correctness rate, the median and mean of steps to 95 %, the
geometric mean of best@k, each with a bootstrap 95 % interval over problems x seeds.

Intervals resample problems, each with all its seeds (a cluster bootstrap): runs of one
problem share its kernels, and an arm that ignores its seed (argmax selection) repeats one
result per seed, so problems, not runs, are the independent samples.

Paired comparison against a reference arm: per (problem, seed), delta = other's steps - the
reference's steps (positive: the reference got there sooner); its mean with a bootstrap
interval; how many pairs each side won; a Wilcoxon signed-rank test on the per-problem mean
deltas; and `cut`, the share of steps the reference saves, 1 - mean_ref / mean_other.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np
from scipy import stats as sps

from htam_engine.experiment.plan import UNMEASURED, Arm, ExperimentSpec, RunRecord, Start

THRESHOLD = 0.95
BEST_AT = (3, 6)
CONFIDENCE = 0.95
RESAMPLES = 2000
BOOTSTRAP_SEED = 20260


@dataclass(slots=True)
class Interval:
    value: float | None
    low: float | None = None
    high: float | None = None


@dataclass(slots=True)
class Paired:
    pairs: int
    mean_delta: Interval
    reference_better: int  # pairs where the reference reached the target in fewer steps
    other_better: int
    ties: int
    p_value: float | None  # Wilcoxon signed-rank on per-problem mean deltas
    cut: float | None  # 1 - mean_ref / mean_other


@dataclass(slots=True)
class ArmRow:
    start: Start
    arm: Arm
    runs: int
    problems: int
    correct_rate: float | None
    steps_median: Interval
    steps_mean: float | None
    best_at: dict[int, Interval]
    vs_full: Paired | None  # None for the full method itself


@dataclass(slots=True)
class Summary:
    budget: int
    best_at: tuple[int, ...]
    reference: dict[str, float]  # problem -> best correct speedup any run found
    unsolved: list[str]  # problems no run found a correct kernel for
    rows: list[ArmRow]
    transfer: dict[Arm, Paired] = field(default_factory=dict)  # warm (reference) against cold
    runs: int = 0
    errors: int = 0
    distinct_candidates: int = 0  # distinct (problem, candidate) pairs the runs evaluated, bank runs included


def reference_best(records: Iterable[RunRecord], budget: int) -> dict[str, float]:
    best: dict[str, float] = {}
    for r in records:
        b = r.best_after(budget)
        if b is not None and b > 0 and math.isfinite(b):
            best[r.key.problem] = max(best.get(r.key.problem, 0.0), b)
    return best


def steps_to_reach(record: RunRecord, target: float, budget: int) -> int:
    """First step whose best is at least THRESHOLD x target; budget + 1 if none is."""
    for row in record.steps:
        if row.step > budget:
            break
        if row.best is not None and row.best >= THRESHOLD * target:
            return row.step
    return budget + 1


def best_at(record: RunRecord, k: int) -> float:
    b = record.best_after(k)
    return b if b is not None and b > 0 and math.isfinite(b) else 1.0


def geomean(values: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.exp(np.mean(np.log(values), axis=axis))


Statistic = Callable[..., Any]  # statistic(values, axis=-1), numpy-style (np.mean, np.median, geomean)


def cluster_interval(groups: list[np.ndarray], statistic: Statistic, seed: int = BOOTSTRAP_SEED) -> Interval:
    """statistic over all values, with a percentile bootstrap interval that resamples the groups."""
    groups = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if not groups:
        return Interval(None)
    value = float(statistic(np.concatenate(groups), axis=-1))
    if len(groups) < 2:
        return Interval(value)
    if len({len(g) for g in groups}) == 1:  # every problem has all its seeds: resample rows at once
        table = np.stack(groups)

        def on_groups(idx: np.ndarray, axis: int = -1) -> np.ndarray:
            picked = table[np.asarray(idx, dtype=int)]  # (..., problems, seeds)
            return statistic(picked.reshape(*picked.shape[:-2], -1), axis=-1)

        vectorized = True
    else:
        def on_groups(idx: np.ndarray, axis: int = -1) -> float:
            return float(statistic(np.concatenate([groups[int(i)] for i in idx]), axis=-1))

        vectorized = False
    # random_state, not rng: the GPU boxes' scipy may predate rng (1.15)
    res = sps.bootstrap((np.arange(len(groups)),), on_groups, vectorized=vectorized, n_resamples=RESAMPLES,
                        confidence_level=CONFIDENCE, method="percentile",
                        random_state=np.random.default_rng(seed))
    return Interval(value, float(res.confidence_interval.low), float(res.confidence_interval.high))


Values = dict[tuple[str, int], float]  # (problem, seed) -> a run's figure


def _by_problem(values: Values) -> list[np.ndarray]:
    groups: dict[str, list[float]] = defaultdict(list)
    for (problem, _seed), v in sorted(values.items()):
        groups[problem].append(v)
    return [np.array(v) for v in groups.values()]


def paired(reference: Values, other: Values) -> Paired | None:
    common = sorted(set(reference) & set(other))
    if not common:
        return None
    deltas: Values = {k: other[k] - reference[k] for k in common}
    groups = _by_problem(deltas)
    per_problem = np.array([g.mean() for g in groups])
    if np.all(per_problem == 0):
        p = 1.0
    elif len(per_problem) < 2:
        p = None
    else:
        p = float(sps.wilcoxon(per_problem).pvalue)
    ref_mean = float(np.mean([reference[k] for k in common]))
    other_mean = float(np.mean([other[k] for k in common]))
    d = np.array(list(deltas.values()))
    return Paired(pairs=len(common), mean_delta=cluster_interval(groups, np.mean),
                  reference_better=int(np.sum(d > 0)), other_better=int(np.sum(d < 0)), ties=int(np.sum(d == 0)),
                  p_value=p, cut=(1.0 - ref_mean / other_mean) if other_mean > 0 else None)


def _steps(records: list[RunRecord], reference: dict[str, float], budget: int) -> Values:
    return {(r.key.problem, r.key.seed): float(steps_to_reach(r, reference[r.key.problem], budget))
            for r in records if r.key.problem in reference}


def unmeasured_steps(records: Iterable[RunRecord]) -> dict[tuple[Start, Arm], int]:
    """(start, arm) -> how many of its steps asked for a candidate the replayed table lacks."""
    out: dict[tuple[Start, Arm], int] = defaultdict(int)
    for r in records:
        out[(r.key.start, r.key.arm)] += sum(s.status == UNMEASURED for s in r.steps)
    return dict(out)


def measured_only(records: list[RunRecord]) -> tuple[list[RunRecord], int, int]:
    """The runs of every (problem, seed) for which no run, of any arm or start, asked for an
    unmeasured candidate; and how many (problem, seed) pairs were kept of how many. Dropping the
    pair for every arm keeps the comparisons paired; an arm that asks for candidates the table
    lacks more often than another (one whose choices changed since the table was measured) is no
    longer charged a failed step for each, but its pairs are chosen by that, so both tables are
    shown, never this one alone."""
    pairs = {(r.key.problem, r.key.seed) for r in records}
    touched = {(r.key.problem, r.key.seed) for r in records if any(s.status == UNMEASURED for s in r.steps)}
    return [r for r in records if (r.key.problem, r.key.seed) not in touched], len(pairs - touched), len(pairs)


def summarize(spec: ExperimentSpec, records: list[RunRecord], bank_records: Iterable[RunRecord] = ()) -> Summary:
    budget = spec.steps
    ok = [r for r in records if not r.error]
    reference = reference_best(ok, budget)
    cells: dict[tuple[Start, Arm], list[RunRecord]] = defaultdict(list)
    for r in ok:
        cells[(r.key.start, r.key.arm)].append(r)
    ks = tuple(sorted({min(k, budget) for k in BEST_AT}))
    steps = {cell: _steps(rs, reference, budget) for cell, rs in cells.items()}
    rows = []
    for start in spec.starts:
        for arm in spec.arms:
            rs = cells.get((start, arm), [])
            st = steps.get((start, arm), {})
            best = {k: cluster_interval(_by_problem({(r.key.problem, r.key.seed): best_at(r, k) for r in rs}),
                                        geomean) for k in ks}
            rows.append(ArmRow(
                start=start, arm=arm, runs=len(rs), problems=len({r.key.problem for r in rs}),
                correct_rate=(sum(r.best_after(budget) is not None for r in rs) / len(rs)) if rs else None,
                steps_median=cluster_interval(_by_problem(st), np.median),
                steps_mean=float(np.mean(list(st.values()))) if st else None, best_at=best,
                vs_full=None if arm is Arm.FULL else paired(steps.get((start, Arm.FULL), {}), st)))
    transfer = {}
    if Start.COLD in spec.starts and Start.WARM in spec.starts:
        for arm in spec.arms:
            p = paired(steps.get((Start.WARM, arm), {}), steps.get((Start.COLD, arm), {}))
            if p is not None:
                transfer[arm] = p
    distinct = {(r.key.problem, s.code_hash) for r in [*records, *bank_records] for s in r.steps if s.code_hash}
    return Summary(budget=budget, best_at=ks, reference=reference,
                   unsolved=sorted({r.key.problem for r in ok} - set(reference)), rows=rows, transfer=transfer,
                   runs=len(records), errors=len(records) - len(ok), distinct_candidates=len(distinct))
