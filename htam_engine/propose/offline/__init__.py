"""The offline proposer: traces a problem and writes real fused kernels from templates.

    OfflineProposer()                      Proposer protocol (name "offline"), no network
    TEMPLATE_IDS                           template ids HTG local strategies may reference
    supports(template_id, backend, family) whether a template exists for that backend/family
    generate(problem, backend, template)   one candidate module (raises Unsupported with a reason)
"""

from htam_engine.propose.offline.decompose import Unsupported
from htam_engine.propose.offline.proposer import Generated, OfflineProposer, generate, plan_problem
from htam_engine.propose.offline.templates import TEMPLATE_IDS, TEMPLATES, supports

__all__ = [
    "TEMPLATES",
    "TEMPLATE_IDS",
    "Generated",
    "OfflineProposer",
    "Unsupported",
    "generate",
    "plan_problem",
    "supports",
]
