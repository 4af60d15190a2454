"""Vocabularies shared by problems, memory, proposers and the UI (one place each)."""

from __future__ import annotations

from enum import Enum


class Family(str, Enum):
    """Operator family of a problem (DESIGN.md, 'State')."""

    ELEMENTWISE = "elementwise"
    REDUCTION = "reduction"
    NORMALIZATION = "normalization"
    MATMUL = "matmul"
    CONVOLUTION = "convolution"
    ATTENTION = "attention"
    FUSED_CHAIN = "fused_chain"
    WHOLE_MODEL = "whole_model"
    OTHER = "other"


class Backend(str, Enum):
    CUDA = "cuda"
    TRITON = "triton"
    CPP = "cpp"


class Bottleneck(str, Enum):
    MEMORY = "memory"
    COMPUTE = "compute"
    LAUNCH = "launch"
    UNKNOWN = "unknown"


class ProposalOutcome(str, Enum):
    """What a proposer's answer to one request was (memory learns from the non-candidates too)."""

    CANDIDATE = "candidate"  # a module to evaluate
    EXHAUSTED = "exhausted"  # the strategies' moves have nothing left to change from the current best
    NO_MOVE = "no_move"  # none of the retrieved strategies has a move that changes this problem's code
    UNSUPPORTED = "unsupported"  # the problem cannot be written as kernels by this proposer
    ERROR = "error"  # the proposer failed (a fault, an endpoint error, no module in the answer)
