"""Proposers: turn a problem, feedback and memory guidance into a candidate module.

`make_proposer(kind, config)` is the one way the engine gets one: "model" talks to an
OpenAI-compatible endpoint (`model.ModelProposer`), "offline" generates kernels from
templates without a network (`offline.OfflineProposer`, imported only when asked for).
`default_kind(config)` says which one a run uses when the person did not choose.
"""

from __future__ import annotations

from typing import Any

from htam_engine.errors import UsageError
from htam_engine.propose.base import Lesson, Proposal, ProposalRequest, Proposer, TokenSink, Usage
from htam_engine.propose.config import Config, ModelSettings, has_endpoint, load_config

KINDS = ("offline", "model")

__all__ = [
    "KINDS",
    "Config",
    "Lesson",
    "ModelSettings",
    "Proposal",
    "ProposalRequest",
    "Proposer",
    "TokenSink",
    "Usage",
    "default_kind",
    "has_endpoint",
    "load_config",
    "make_proposer",
]


def default_kind(config: Config) -> str:
    """"model" when an endpoint is configured, else "offline" (runs out of the box)."""
    return "model" if has_endpoint(config) else "offline"


def make_proposer(kind: str | None = None, config: Config | None = None, **kwargs: Any) -> Proposer:
    """A proposer of `kind` ("offline" | "model"; None picks `default_kind`).

    `kwargs` go to the proposer's constructor (e.g. `client=` or `rng=` for the model one)."""
    config = config or load_config()
    kind = kind or default_kind(config)
    if kind == "offline":
        from htam_engine.propose.offline import OfflineProposer

        return OfflineProposer(**kwargs)
    if kind == "model":
        if not has_endpoint(config):
            raise UsageError(
                "the model proposer needs an endpoint: set OPENAI_API_KEY, or OPENAI_BASE_URL/HTAM_BASE_URL "
                "for a local server, or [model] base_url in htam.toml"
            )
        from htam_engine.propose.model import ModelProposer

        return ModelProposer(config.model, **kwargs)
    raise UsageError(f"unknown proposer {kind!r} (choose from {', '.join(KINDS)})")
