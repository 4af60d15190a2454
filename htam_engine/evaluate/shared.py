"""Tensors the judge and a sandbox share: the judge allocates them, the sandbox maps them.

Inputs go in and outputs come back through these buffers; nothing else the judge holds is
ever mapped into a sandbox.

- CPU: each tensor is a memfd (anonymous memory, freed with its last mapping), handed to the
  sandbox over its socket (SCM_RIGHTS) and mapped by both sides with
  ``torch.from_file(shared=True)``. Nothing is left behind in /dev/shm, whatever dies.
- CUDA: each sandbox gets a private allocation pool (``torch.cuda.MemPool``) that holds its
  buffers and nothing else of the judge's, because an IPC handle opens the whole segment a
  buffer lives in. The sandbox opens the buffers from their handles
  (``UntypedStorage._share_cuda_`` / ``_new_shared_cuda``) without IPC events, which hung on
  the H200 box: the judge synchronizes its device before each message, the sandbox before each
  reply. The pool is released only after the sandbox is dead, and the IPC reference counts a
  killed sandbox never returned are returned by the judge, so the memory does not stay in
  torch's IPC limbo.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Sequence

import torch

DTYPES: dict[str, torch.dtype] = {
    str(d).removeprefix("torch."): d
    for d in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.complex64, torch.complex128,
              torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool)
}
for _name in ("uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2"):
    if hasattr(torch, _name):
        DTYPES[_name] = getattr(torch, _name)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclass(frozen=True, slots=True)
class Layout:
    """Shape, strides, storage offset (elements) and dtype of one shared tensor."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int
    dtype: str

    @classmethod
    def of(cls, t: torch.Tensor, dense: bool = False) -> "Layout":
        """`t`'s layout; dense=True: the contiguous layout of its shape and dtype."""
        if dense:
            return cls(tuple(t.shape), contiguous_strides(tuple(t.shape)), 0, dtype_name(t.dtype))
        return cls(tuple(t.shape), tuple(t.stride()), int(t.storage_offset()), dtype_name(t.dtype))

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    @property
    def itemsize(self) -> int:
        return torch.empty((), dtype=self.torch_dtype).element_size()

    @property
    def elements(self) -> int:
        """Elements the storage must hold (offset plus the furthest element reached)."""
        if any(s == 0 for s in self.shape):
            return self.offset
        return self.offset + 1 + sum((n - 1) * abs(st) for n, st in zip(self.shape, self.stride))

    @property
    def nbytes(self) -> int:
        return self.elements * self.itemsize


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def is_dense(shape: Sequence[int], stride: Sequence[int]) -> bool:
    """Non-overlapping and dense: no stride-0 expansion, every element of its span used once.
    Decided from the numbers alone, so the judge can decide it from what a sandbox reported."""
    if len(shape) != len(stride):
        return False
    numel = 1
    for size in shape:
        numel *= size
    if numel <= 1:
        return True
    dims = [(size, st) for size, st in zip(shape, stride) if size > 1]
    if any(st == 0 for _, st in dims):
        return False
    return 1 + sum((size - 1) * abs(st) for size, st in dims) == numel


def _view(flat_bytes: torch.Tensor, layout: Layout) -> torch.Tensor:
    usable = flat_bytes[: (flat_bytes.numel() // layout.itemsize) * layout.itemsize]
    return torch.as_strided(usable.view(layout.torch_dtype), layout.shape, layout.stride, layout.offset)


@dataclass(frozen=True, slots=True)
class Exported:
    """What a sandbox needs to map one shared storage (pickled to it; a memfd travels beside it).
    Each call then names the layout to view it under."""

    nbytes: int
    kind: str  # "memfd" | "cuda" | "empty"
    cuda_handle: tuple | None = None


class SharedStorage:
    """One shared allocation of the judge's (a slot), viewed under any layout that fits."""

    def __init__(self, nbytes: int, device: str, pool: Any = None):
        self.nbytes = max(0, int(nbytes))
        self.device = device
        self.fd: int | None = None
        self._ipc: tuple | None = None
        if self.nbytes == 0:
            self.kind = "empty"
            self.bytes = torch.empty(0, dtype=torch.uint8, device=device)
        elif device.startswith("cuda"):
            self.kind = "cuda"
            if pool is not None:
                with torch.cuda.use_mem_pool(pool):
                    self.bytes = torch.empty(self.nbytes, dtype=torch.uint8, device=device)
            else:
                self.bytes = torch.empty(self.nbytes, dtype=torch.uint8, device=device)
        else:
            self.kind = "memfd"
            self.fd = os.memfd_create("htam-shared", os.MFD_CLOEXEC)
            os.ftruncate(self.fd, self.nbytes)
            self.bytes = torch.from_file(f"/proc/self/fd/{self.fd}", shared=True, size=self.nbytes, dtype=torch.uint8)

    def view(self, layout: Layout) -> torch.Tensor:
        return view(self.bytes, layout, self.device)

    def export(self) -> Exported:
        if self.kind == "cuda" and self._ipc is None:
            self._ipc = tuple(self.bytes.untyped_storage()._share_cuda_())
        handle = None
        if self._ipc is not None:
            # (device, handle, size, offset, ref counter handle, ref counter offset, event, sync): the
            # IPC event is never used (see the module docstring).
            handle = (*self._ipc[:6], self._ipc[6], False)
        return Exported(self.nbytes, self.kind, handle)

    def release_after_sandbox_death(self) -> None:
        """Return the IPC reference count a dead sandbox held, so the allocation can be freed."""
        if self._ipc is not None:
            device, _h, _s, _o, counter_handle, counter_offset = self._ipc[:6]
            try:
                torch.UntypedStorage._release_ipc_counter(counter_handle, counter_offset, device=device)
            except Exception:  # noqa: BLE001 - already returned by the sandbox; nothing left to do
                pass
            self._ipc = None

    def close(self) -> None:
        self.bytes = torch.empty(0, dtype=torch.uint8)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def view(flat_bytes: torch.Tensor, layout: Layout, device: str) -> torch.Tensor:
    """A shared storage (flat bytes) seen as one tensor layout."""
    if layout.nbytes > flat_bytes.numel():
        raise ValueError(f"a layout of {layout.nbytes} bytes on a shared storage of {flat_bytes.numel()}")
    if layout.nbytes == 0:
        return torch.empty_strided(layout.shape, layout.stride, dtype=layout.torch_dtype, device=device)
    return _view(flat_bytes, layout)


def attach(exported: Exported, fd: int | None, device: str) -> torch.Tensor:
    """The sandbox's flat bytes of a shared storage (it owns `fd` and closes it once mapped)."""
    if exported.kind == "empty":
        return torch.empty(0, dtype=torch.uint8, device=device)
    if exported.kind == "memfd":
        if fd is None:
            raise ValueError("a memfd buffer arrived without its descriptor")
        try:
            return torch.from_file(f"/proc/self/fd/{fd}", shared=True, size=exported.nbytes, dtype=torch.uint8)
        finally:
            os.close(fd)
    if exported.kind == "cuda":
        torch.cuda._lazy_init()
        storage = torch.UntypedStorage._new_shared_cuda(*exported.cuda_handle)
        return torch.empty(0, dtype=torch.uint8, device=device).set_(storage, 0, (exported.nbytes,), (1,))
    raise ValueError(f"unknown shared buffer kind {exported.kind!r}")


class NoPrivatePool(RuntimeError):
    """This torch cannot give a sandbox's CUDA buffers a pool of their own (a harness limit)."""


def new_pool(device: str) -> Any:
    """A private CUDA allocation pool for one sandbox's buffers (None on the CPU).

    Without one, a buffer could share a segment with the judge's own tensors, which the
    sandbox would then see through the IPC handle: that is refused, not worked around."""
    if not device.startswith("cuda"):
        return None
    if not hasattr(torch.cuda, "MemPool"):
        raise NoPrivatePool(f"torch {torch.__version__} has no torch.cuda.MemPool for sandbox buffers")
    return torch.cuda.MemPool()
