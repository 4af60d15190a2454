"""A dispatch mode that records the largest tensor any operation made inside its block (views
aside, since a view makes no new memory): the tests that bound a check's temporaries use it."""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class LargestMade(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.numel = 0  # elements of the largest
        self.nbytes = 0  # bytes of the largest

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if not getattr(func, "is_view", False):
            for t in out if isinstance(out, (tuple, list)) else [out]:
                if isinstance(t, torch.Tensor):
                    self.numel = max(self.numel, t.numel())
                    self.nbytes = max(self.nbytes, t.numel() * t.element_size())
        return out
