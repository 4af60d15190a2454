"""The Hierarchical Transition Graph memory: schema seed, selection, retrieval, update, bank.

    htg = load_bank()                                   # or HTG.seed()
    state = make_state("start", family, backend, estimate_bottleneck(problem, None, device), None)
    sel = select_direction(htg, state, history, rng=random.Random(seed))
    ret = retrieve(htg, sel.direction, state, k=3, selection=sel)
    delta = update(htg, history=history, state=state, direction=sel.direction, strategies=[...], ...)
"""

from htam_engine.memory.bank import (
    BankFileError, bank_lock, default_bank_path, load_bank, merge_into_bank, merge_session, save_bank,
)
from htam_engine.memory.graph import HTG, START, MemoryDataError
from htam_engine.memory.learn import apply_delta, compute_reward, record_lesson, update
from htam_engine.memory.retrieve import retrieve
from htam_engine.memory.select import ABLATIONS, SelectConfig, edge_value, select_direction
from htam_engine.memory.state import estimate_bottleneck, make_state, similarity, speedup_bucket
from htam_engine.memory.types import (
    DirectionScore, HistoryEntry, Retrieval, Selection, State, StrategyView, TransitionNote, TransitionRow,
    TransitionTerm,
)

__all__ = [
    "ABLATIONS", "BankFileError", "DirectionScore", "HTG", "HistoryEntry", "MemoryDataError", "Retrieval", "START",
    "SelectConfig", "Selection", "State", "StrategyView", "TransitionNote", "TransitionRow", "TransitionTerm",
    "apply_delta", "bank_lock", "compute_reward", "default_bank_path", "merge_into_bank", "edge_value", "estimate_bottleneck", "load_bank",
    "make_state", "merge_session", "record_lesson", "retrieve", "save_bank", "select_direction", "similarity",
    "speedup_bucket", "update",
]
