"""A tensor's memory as integers, for comparisons by bits (the work check's garbage run)."""

from __future__ import annotations

import functools
from typing import Any


def bits_of(t: Any) -> Any:
    """`t`'s memory as integers, element for element (a complex128 as two int64 each): equal bits
    are the same value, NaN included, and a dtype without == of its own compares too."""
    import torch

    kinds = integer_kinds()
    if t.element_size() not in kinds:
        return torch.view_as_real(t).view(torch.int64)
    return t.view(kinds[t.element_size()])


@functools.cache
def integer_kinds() -> dict[int, Any]:
    """The signed integer dtype of each element size."""
    import torch

    return {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
