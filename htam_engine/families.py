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
