"""The offline proposer: traces a problem and writes real fused kernels from a design space.

    OfflineProposer()                        Proposer protocol (name "offline"), no network
    MOVES, MOVE_IDS                          moves HTG local strategies may name (moves.py)
    generate(problem, backend, move, knobs)  one candidate module (raises Unsupported with a reason)
    plan_problem(problem), plan_space(plan, backend)   the plan and its design space
"""

from htam_engine.propose.offline.decompose import Unsupported
from htam_engine.propose.offline.design import plan_space
from htam_engine.propose.offline.moves import MOVE_IDS, MOVES, Move, options
from htam_engine.propose.offline.proposer import DEFAULT_MOVE, Generated, OfflineProposer, generate, plan_problem
from htam_engine.propose.offline.space import Knob, Settings, Space, parse_move, parse_settings

__all__ = [
    "DEFAULT_MOVE",
    "MOVES",
    "MOVE_IDS",
    "Generated",
    "Knob",
    "Move",
    "OfflineProposer",
    "Settings",
    "Space",
    "Unsupported",
    "generate",
    "options",
    "parse_move",
    "parse_settings",
    "plan_problem",
    "plan_space",
]
