"""The float64 yardstick draws the reference's own random numbers.

A forward that draws random numbers (torch.randn_like(x), rand_like, normal_, RReLU in
training) draws them in the dtype of the tensor it is like. In the yardstick's float64 run the
same call draws float64 numbers, which is another stream (a generator spends more bits on a
double): the yardstick then computed something else than the reference, and its distance to
the reference, read as rounding noise, widened every set's allowance by about the noise's size
and stood the whole-output bound down. A candidate right only on get_inputs' range, or all
zeros where the reference is a dropout of a softmax, passed (red-team pass 31).

`DrawNotes.taking()` watches a reference run and notes, for each random draw (an aten op
tagged nondeterministic_seeded), the op and the dtypes of its tensors and dtype arguments.
`DrawNotes.replaying()` makes the float64 run's draws in those dtypes and widens what they
return to float64: the same numbers as the reference's. A float64 run whose draws do not
follow the notes raises DrawsDiverged: that run is no yardstick (the caller has none for it,
which leaves the comparison at its strictest). The draw's other inputs (a dropout's input, a
normal's mean) go through the narrower dtype too, so the yardstick is float32-exact there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_unflatten

_RANDOM = torch.Tag.nondeterministic_seeded


class DrawsDiverged(Exception):
    """The float64 run drew other random numbers than the noted reference run."""


@dataclass(frozen=True)
class Draw:
    op: torch._ops.OpOverload
    dtypes: tuple[torch.dtype, ...]  # of its tensor and dtype arguments, in flattened order


def _dtypes(leaves: list[Any]) -> tuple[torch.dtype, ...]:
    return tuple(x.dtype if isinstance(x, torch.Tensor) else x for x in leaves
                 if isinstance(x, (torch.Tensor, torch.dtype)))


class _Taking(TorchDispatchMode):
    def __init__(self, into: list[Draw]):
        super().__init__()
        self.into = into

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _RANDOM in func.tags:
            self.into.append(Draw(func, _dtypes(tree_flatten((args, kwargs))[0])))
        return func(*args, **kwargs)


class _Replaying(TorchDispatchMode):
    def __init__(self, notes: list[Draw]):
        super().__init__()
        self.notes, self.next = notes, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _RANDOM not in func.tags:
            return func(*args, **kwargs)
        note = self.notes[self.next] if self.next < len(self.notes) else None
        self.next += 1
        if note is None or note.op is not func:
            raise DrawsDiverged(f"draw {self.next} is {func}, not the reference's")
        leaves, spec = tree_flatten((args, kwargs))
        if len(_dtypes(leaves)) != len(note.dtypes):
            raise DrawsDiverged(f"{func} has other arguments than the reference's")
        want = iter(note.dtypes)
        narrowed = [_as(x, next(want)) if isinstance(x, (torch.Tensor, torch.dtype)) else x for x in leaves]
        if all(a is b for a, b in zip(narrowed, leaves)):
            return func(*args, **kwargs)  # drawn in the reference's dtypes already
        n_args, n_kwargs = tree_unflatten(narrowed, spec)
        out = func(*n_args, **n_kwargs)
        before, after = _by_name(func, args, kwargs), _by_name(func, n_args, n_kwargs)
        for arg in func._schema.arguments:
            if arg.alias_info is not None and arg.alias_info.is_write and arg.name in before:
                original, narrow = before[arg.name], after[arg.name]
                if narrow is not original:
                    original.copy_(narrow)  # an in-place or out= draw (normal_, out=) into the float64 tensor
                    if out is narrow:
                        out = original
        return _widened(out)


def _by_name(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> dict[str, Any]:
    return {**{a.name: v for a, v in zip(func._schema.arguments, args)}, **kwargs}


def _as(x: torch.Tensor | torch.dtype, dtype: torch.dtype) -> torch.Tensor | torch.dtype:
    if isinstance(x, torch.dtype):
        return dtype
    return x if x.dtype == dtype else x.to(dtype)


def _widened(out: Any) -> Any:
    leaves, spec = tree_flatten(out)
    return tree_unflatten([x.double() if isinstance(x, torch.Tensor) and x.is_floating_point()
                           and x.dtype != torch.float64 else x for x in leaves], spec)


@dataclass
class DrawNotes:
    """The draws of the latest noted reference run (an empty list: it drew nothing)."""

    draws: list[Draw] = field(default_factory=list)

    def taking(self) -> _Taking:
        self.draws = []
        return _Taking(self.draws)

    def replaying(self) -> _Replaying:
        return _Replaying(self.draws)

