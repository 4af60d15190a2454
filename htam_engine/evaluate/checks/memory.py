"""Memory hygiene for the checks: poisoning freed memory, cloning inputs, spotting aliases.

Poisoning: before each candidate call, blocks the size of the tensors in play are
allocated, filled with a marker (NaN, or a finite sentinel) and freed. torch's CUDA
caching allocator hands recently freed blocks back first, so an output built from
torch.empty_like and never fully written shows the marker instead of whatever the
reference left behind. On the CPU, torch allocates through posix_memalign, which does not
reliably reuse a block of the same size, so glibc's own perturbation (mallopt M_PERTURB)
is switched on around the candidate's call: every block malloc hands out is pre-filled
with a byte pattern, and every freed block overwritten.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from typing import Any, Callable, Iterable, Iterator, NamedTuple

import torch

from htam_engine.evaluate.checks.compare import runs, tensors

NAN = float("nan")
SENTINEL = 1234.5  # finite, distinctive, exactly representable in every float dtype

_MAX_POISON_BYTES = 1 << 30  # never allocate more than this for one marker block

# On the CPU every sandbox (the candidate's and the reference's) maps each allocation past this
# size afresh (mallopt M_MMAP_THRESHOLD, set before any candidate code runs; a fixed threshold also
# turns off glibc's raising it as big blocks are freed). An output past it then costs an honest
# forward a page fault a page inside its call, whatever the process allocated before, and the
# judge counts them (clock.fresh_pages_check): an output ring, or pages touched off the clock, do
# not take them. Small enough for a 1024x1024 float32 output, large enough that the many small
# temporaries of a forward stay on the heap.
FRESH_MAPPING_BYTES = 1 << 20


def nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def poison(device: str, sizes: Iterable[int], value: float = NAN, copies: int = 2,
           mark: Callable[[str], None] | None = None) -> None:
    """Allocate, fill with `value` and free `copies` blocks of each size (largest first). mark(phase),
    where given (a sandbox's trace), notes when the blocks were allocated and their fills queued,
    before the device finished them."""
    blocks = []
    # On the CPU a block past FRESH_MAPPING_BYTES is unmapped when freed: its fill reaches no later
    # allocation (the heap's perturbation fills those, perturbed_heap), and would only add page faults
    # to the calls the judge counts them over (clock.fresh_pages_check).
    largest = _MAX_POISON_BYTES if device.startswith("cuda") else FRESH_MAPPING_BYTES
    for size in sorted({s for s in sizes if 0 < s <= largest}, reverse=True):
        for _ in range(copies):
            b = torch.empty((size + 3) // 4, dtype=torch.float32, device=device)
            b.fill_(value)
            blocks.append(b)
    if mark is not None:
        mark("poison_queued")
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    del blocks  # freed newest-last; the allocator reuses them for the next allocations


# glibc perturb bytes: malloc fills new blocks with (byte ^ 0xff). 0x80 -> 0x7f7f7f7f, a huge
# float32 (3.4e38) and NaN in float16; 0x35 -> 0xcacacaca, a large negative float32.
PERTURB_FOR = {"nan": 0x80, "sentinel": 0x35}
_M_PERTURB = -6


def _mallopt() -> Any | None:
    try:
        fn = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc: the explicit poison blocks still apply
        return None
    fn.argtypes, fn.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return fn


_MALLOPT = _mallopt()


_M_MMAP_THRESHOLD = -3
_PR_SET_THP_DISABLE = 41


def map_big_blocks_afresh() -> None:
    """Allocations past FRESH_MAPPING_BYTES are mapped afresh from now on (see above), a 4 KiB page at
    a time: transparent huge pages off (prctl PR_SET_THP_DISABLE), as one fault would otherwise map
    and zero 2 MiB, and a cheat met the judge's figures of a fresh output's cost for a fraction of it
    with one huge page a call (red-team pass 22). A candidate can turn them on again; the judge reads
    whether it did (channel.call_run, clock's prefaulted_output)."""
    if _MALLOPT is not None:
        _MALLOPT(_M_MMAP_THRESHOLD, FRESH_MAPPING_BYTES)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_THP_DISABLE, 1, 0, 0, 0)


@contextlib.contextmanager
def perturbed_heap(marker: float) -> Iterator[None]:
    """Within the block, the C heap hands out pre-filled memory (see module docstring)."""
    byte = PERTURB_FOR["nan" if marker != marker else "sentinel"]
    if _MALLOPT is None:
        yield
        return
    _MALLOPT(_M_PERTURB, byte)
    try:
        yield
    finally:
        _MALLOPT(_M_PERTURB, 0)


def tensor_leaves(values: Any) -> list[torch.Tensor]:
    """Every tensor in a (nested) input or argument list, in order."""
    if isinstance(values, torch.Tensor):
        return [values]
    if isinstance(values, (list, tuple)):
        return [t for v in values for t in tensor_leaves(v)]
    if isinstance(values, dict):
        return [t for v in values.values() for t in tensor_leaves(v)]
    return []


def clone_inputs(values: Any) -> Any:
    """`values` with every tensor (nested in lists and tuples too) cloned; others kept."""
    if isinstance(values, torch.Tensor):
        return values.clone()
    if isinstance(values, (list, tuple)):
        return type(values)(clone_inputs(v) for v in values)
    return values


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise-style equality that treats NaN as equal to NaN, read in runs of CHUNK_ELEMENTS
    (compare.py): its temporaries stay bounded by a run whatever the inputs' size."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    floating = a.dtype.is_floating_point or a.dtype.is_complex
    for _, (x, y) in runs(a, b):
        if torch.equal(x, y):
            continue
        if not (floating and torch.allclose(x, y, rtol=0.0, atol=0.0, equal_nan=True)):
            return False
    return True


def changed_inputs(now: list[Any], before: list[Any]) -> list[int]:
    """Positions of tensor inputs whose values differ from their pristine copy."""
    return [i for i, (x, y) in enumerate(zip(now, before))
            if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and not same_values(x, y)]


def _span(t: torch.Tensor) -> tuple[int, int] | None:
    try:
        st = t.untyped_storage()
    except Exception:
        return None
    start = st.data_ptr()
    if start == 0 or st.nbytes() == 0:
        return None
    return start, start + st.nbytes()


def overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True when two tensors' storages overlap (views, reshapes and same-buffer returns)."""
    if a.device != b.device:
        return False
    return _spans_overlap(_span(a), _span(b))


def _spans_overlap(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    return bool(a and b and a[0] < b[1] and b[0] < a[1])


# The latest outputs kept alive with a sample of their bytes, up to this many and this many bytes
# together (HeldOutputs), and how many elements of each the sample reads.
SAMPLED_KEPT = 64
SAMPLED_KEPT_BYTES = 256 << 20
SAMPLE_ELEMENTS = 64


class _Sampled(NamedTuple):
    """An earlier output kept alive, the flat places its sample reads (on its device) and their bytes then."""

    out: torch.Tensor
    places: torch.Tensor
    bytes: torch.Tensor


class HeldOutputs:
    """The memory of every output forward returned that the candidate still holds.

    Weak references to the outputs' storages, not to the tensors: a model that keeps one buffer
    (or a ring of them) and returns a fresh view of it on each call drops the view once the
    sandbox delivered it, but the storage lives on in the model. An honest forward's outputs are
    freed once delivered, so their references expire and the allocator may hand the same
    addresses out again without a finding.

    Addresses do not see memory handed out again beneath a storage that is not the earlier one: a
    ring of numpy arrays wrapped anew each call (cheat_output_ring_numpy), a memfd mapped anew each
    call, C++ buffers behind fresh storages that free nothing (red-team passes 17 and 19). So the
    latest outputs (SAMPLED_KEPT, SAMPLED_KEPT_BYTES) are also kept alive with a sample of their
    bytes at places drawn from a stream of the sandbox's own. Kept, an honest output's memory is
    nobody else's (and its storage's reference cannot expire); one whose bytes change after later
    calls was written by them.

    With `let_go_between_runs` (the CPU) the kept outputs past those bounds are let go of only
    between runs (let_go, at each wire.Arm), not as a call returns: the judge reads the growth of
    the sandbox's resident memory over a run (clock.fresh_memory_check), which an older output freed
    inside the run would cut. On a GPU at once, as the device's memory is the scarcer."""

    def __init__(self, let_go_between_runs: bool = False) -> None:
        self.let_go_between_runs = let_go_between_runs
        self._held: list[tuple[Any, tuple[int, int]]] = []  # (StorageWeakRef, its span when returned)
        self._sampled: list[_Sampled] = []
        self._sampled_bytes = 0
        self._places = torch.Generator().manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)

    def reused(self, out: Any, inputs: list[Any] = ()) -> bool:
        """True when an output of `out` overlaps the memory of an earlier output still held, or an
        earlier output kept alive no longer holds what it held; then remembers `out`'s outputs too
        (an output on an input's memory is not sampled: the judge writes the inputs anew)."""
        from torch.multiprocessing.reductions import StorageWeakRef

        self._held = [(ref, span) for ref, span in self._held if not ref.expired()]
        fresh = [(t, _span(t)) for t in tensors(out)]
        hit = any(_spans_overlap(span, held) for _, span in fresh for _, held in self._held) or self._rewritten()
        for t, span in fresh:
            if span:
                self._held.append((StorageWeakRef(t.untyped_storage()), span))
                if t.numel() and not any(isinstance(x, torch.Tensor) and overlaps(t, x) for x in inputs):
                    places = torch.randint(t.numel(), (SAMPLE_ELEMENTS,), generator=self._places).to(t.device)
                    self._sampled.append(_Sampled(t, places, _sample(t, places)))
                    self._sampled_bytes += nbytes(t)
        if not self.let_go_between_runs:
            self.let_go()
        return hit

    def let_go(self) -> None:
        """Drop the oldest kept outputs past SAMPLED_KEPT and SAMPLED_KEPT_BYTES (the latest always stays)."""
        while len(self._sampled) > SAMPLED_KEPT or (self._sampled_bytes > SAMPLED_KEPT_BYTES and len(self._sampled) > 1):
            self._sampled_bytes -= nbytes(self._sampled.pop(0).out)

    def _rewritten(self) -> bool:
        """Whether a kept output's sampled bytes changed: one comparison per device (on a GPU, one
        synchronize a call, not one a kept output)."""
        by_device: dict[torch.device, tuple[list[torch.Tensor], list[torch.Tensor]]] = {}
        for kept in self._sampled:
            now, was = by_device.setdefault(kept.out.device, ([], []))
            now.append(_sample(kept.out, kept.places))
            was.append(kept.bytes)
        return any(not torch.equal(torch.cat(now), torch.cat(was)) for now, was in by_device.values())


def _sample(t: torch.Tensor, places: torch.Tensor) -> torch.Tensor:
    """The bytes of t's elements at flat `places` (on t's device) now, bit for bit (a NaN equals itself)."""
    with torch.no_grad():
        picked = t.detach().reshape(-1)[places].contiguous()
    return picked.view(torch.uint8) if picked.element_size() else picked


def aliased_outputs(out: Any, inputs: list[Any]) -> list[tuple[int, int]]:
    """(output index, input index) pairs whose storage overlaps."""
    ins = [(i, x) for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)]
    return [(o, i) for o, t in enumerate(tensors(out)) for i, x in ins if overlaps(t, x)]


def sizes_of(*groups: Any) -> set[int]:
    """Byte sizes of every tensor in the given inputs/outputs (the sizes worth poisoning)."""
    out: set[int] = set()
    for g in groups:
        for t in tensors(list(g) if isinstance(g, (list, tuple)) else g):
            out.add(nbytes(t))
    return out
