"""The judge's reference: the problem's Model in the judge, and the baseline sandbox.

ReferenceModel: Model built in the judge exactly as KernelBench builds it (seed, then
Model(*init), then .to(device)), never seen by any candidate; every reference output an
evaluation compares against comes from it, for the call's own seed. Its float64 copy (the
yardstick for precision and numerical noise) is made on first use and dropped after the
checks.

BaselineSandbox: the same sandbox code as a candidate's, running the problem's Model (eager
and torch.compile) and nothing else, kept alive per loaded problem across evaluations in one
judge, so torch.compile compiles once per judge.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from htam_engine.evaluate import wire
from htam_engine.evaluate.checks.rounded import Operands, Rounding, round_mantissa
from htam_engine.evaluate.draws import DrawNotes, DrawsDiverged
from htam_engine.evaluate.oom import is_out_of_memory
from htam_engine.evaluate.sandbox_client import SandboxProcess
from htam_engine.evaluate.seeding import seed_all


class ReferenceFailed(Exception):
    """The problem's own Model raised: nothing about the candidate can be concluded."""


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


def _to_double(x: Any) -> Any:
    """The float64 copy's own inputs: always copies (a float64 or integer input too), so the float64
    forward never modifies the inputs the float32 reference runs on next."""
    if isinstance(x, torch.Tensor) and x.dtype.is_floating_point:
        return x.to(torch.float64, copy=True)
    if isinstance(x, torch.Tensor):
        return x.clone()
    if isinstance(x, (list, tuple)):
        return type(x)(_to_double(v) for v in x)
    return x


# An input set this large (bytes) has its float64 transient's cached blocks returned to the
# device once it is freed: the caching allocator would otherwise keep blocks of sizes nothing
# else of the judge's uses (fragmentation), on the device's memory the next allocations need.
LARGE_INPUT_BYTES = 1 << 30
# The most a CPU copy of the model and an input set may take for accepts_on_host to try them.
HOST_PROBE_BYTES = 2 << 30


def input_bytes(inputs: Any) -> int:
    """Bytes of every tensor in a (nested) input list."""
    if isinstance(inputs, torch.Tensor):
        return inputs.numel() * inputs.element_size()
    if isinstance(inputs, (list, tuple)):
        return sum(input_bytes(x) for x in inputs)
    return 0


def return_cached_blocks(inputs: Any) -> None:
    """On CUDA, for a large input set: the allocator's free cached blocks back to the device."""
    tensors = [x for x in (inputs if isinstance(inputs, (list, tuple)) else [inputs]) if isinstance(x, torch.Tensor)]
    if any(t.is_cuda for t in tensors) and input_bytes(inputs) > LARGE_INPUT_BYTES:
        torch.cuda.empty_cache()


def _to_double_deep(x: Any) -> Any:
    """`x` with every floating tensor in it (through lists, tuples and dicts) in float64; `x`
    itself where nothing in it changed."""
    if isinstance(x, torch.Tensor):
        return x.double() if x.dtype.is_floating_point and x.dtype != torch.float64 else x
    if isinstance(x, (list, tuple)):
        items = [_to_double_deep(v) for v in x]
        if all(a is b for a, b in zip(items, x)):
            return x
        return type(x)(items) if type(x) in (list, tuple) else type(x)(*items)
    if isinstance(x, dict):
        items = {k: _to_double_deep(v) for k, v in x.items()}
        if all(items[k] is x[k] for k in x):
            return x
        return type(x)(items)
    return x


def double_copy(model: torch.nn.Module) -> torch.nn.Module:
    """A float64 copy of `model`: its parameters and buffers (Module.double) and the floating
    tensors it keeps as plain attributes, which .double() leaves as they are. A problem that keeps
    its weights that way would otherwise have no yardstick (its float64 copy fails on the first
    product), and lower precision there passed unmeasured."""
    exact = copy.deepcopy(model).double()
    for m in exact.modules():
        for k, v in list(vars(m).items()):
            if k in ("_parameters", "_buffers", "_modules"):
                continue
            new = _to_double_deep(v)
            if new is not v:
                m.__dict__[k] = new
    return exact


def fingerprints(model: torch.nn.Module) -> list[wire.ParamPrint]:
    from htam_engine.evaluate.sandbox import fingerprint

    prints = [fingerprint(n, p) for n, p in model.named_parameters()]
    return prints + [fingerprint(n, b) for n, b in model.named_buffers()]


class ReferenceModel:
    def __init__(self, model_cls: type, init: list[Any], seed: int, device: str):
        self.init = init
        try:
            seed_all(seed)
            self.model = model_cls(*init).to(device)
        except Exception as e:  # noqa: BLE001 - the problem's fault
            raise ReferenceFailed(f"the reference Model could not be constructed: {_one_line(e)}") from e
        self._exact: torch.nn.Module | None = None
        self._exact_broken = False
        self._draws = DrawNotes()  # the random draws of the latest reference run, for the float64 copy's
        self.prints = fingerprints(self.model)

    def outputs(self, inputs: list[Any], seed: int, label: str) -> Any:
        """Model's output on `inputs` for a call seeded with `seed` (the inputs may be modified in
        place, as the model does)."""
        try:
            with torch.no_grad(), self._draws.taking():
                seed_all(seed)
                return self.model(*inputs)
        except Exception as e:  # noqa: BLE001 - the problem's fault
            if is_out_of_memory(e):
                raise
            raise ReferenceFailed(f"the reference Model raised on {label}: {_one_line(e)}") from e
        finally:
            return_cached_blocks(inputs)  # its intermediates' blocks, of sizes the next allocations may not fit

    def exact(self, inputs: list[Any], seed: int) -> Any | None:
        """The float64 copy's output (None where the model cannot run in double). Its float64
        inputs are a transient (twice a float32 input set): freed before this returns, and on CUDA,
        for a large set, their cached blocks returned to the device."""
        if self._exact_broken:
            return None
        try:
            if self._exact is None:
                self._exact = double_copy(self.model)
            # First, too: the blocks freed since (other draws, clones, a distribution's temporaries)
            # are a set's size, and the float64 copy, twice that, fits in none of them; on the H200
            # the reserve peaked there at 48 GiB for 4_Matrix_vector's 8 GiB set, 16 of them free.
            return_cached_blocks(inputs)
            doubles = [_to_double(x) for x in inputs]
            with torch.no_grad(), self._draws.replaying():
                seed_all(seed)
                out = self._exact(*doubles)
            del doubles
            return out
        except DrawsDiverged:  # no yardstick for this run; the next may follow its notes
            return None
        except Exception as e:  # noqa: BLE001 - a dtype-specific op, a hard-coded .float(): no yardstick
            if is_out_of_memory(e):
                raise
            self._exact_broken, self._exact = True, None
            return None
        finally:
            return_cached_blocks(inputs)

    @property
    def has_parameters(self) -> bool:
        """Whether the model keeps float32 parameters or buffers (what a rounded run may round)."""
        return any(t.dtype == torch.float32 for t in [*self.model.parameters(), *self.model.buffers()])

    def rounded(self, inputs: list[Any], seed: int, rounding: Rounding, operands: Operands) -> Any | None:
        """The model's output, in its own dtype and for the call's seed, where the float32 `operands`
        (inputs by position, parameters and buffers) are first rounded to `rounding` (checks/rounded.py):
        what a product of rounded operands comes close to. `inputs` must be as the reference got them
        (the caller asks only where the reference does not modify its inputs); None where it raises.
        Run on a copy: a forward may change the model's state (a training BatchNorm's running
        statistics), and the reference's next outputs must not depend on how many runs were made."""
        bits = rounding.mantissa_bits
        try:
            model = copy.deepcopy(self.model)
            if operands.parameters:
                with torch.no_grad():
                    for t in [*model.parameters(), *model.buffers()]:
                        if t.dtype == torch.float32:
                            t.copy_(round_mantissa(t, bits))
            values = [round_mantissa(x, bits) if i in operands.inputs else x for i, x in enumerate(inputs)]
            with torch.no_grad():
                seed_all(seed)
                return model(*values)
        except Exception as e:  # noqa: BLE001 - as exact(): no yardstick
            if is_out_of_memory(e):
                raise
            return None

    def accepts_on_host(self, inputs: list[Any], seed: int, limit_bytes: int = HOST_PROBE_BYTES) -> bool | None:
        """Whether Model runs on `inputs` without raising, tried on a CPU copy of it. On CUDA an
        input a kernel indexes with (a class label, a position) that is out of range ends in a
        device-side assert, which ends the judge's CUDA context with it; on the CPU it is an
        exception. None where the model's tensors or the inputs exceed limit_bytes (not tried)."""
        tensors_bytes = sum(t.numel() * t.element_size() for t in self.model.state_dict().values()
                            if isinstance(t, torch.Tensor))
        if tensors_bytes + input_bytes(inputs) > limit_bytes:
            return None
        host = [x.cpu() if isinstance(x, torch.Tensor) else x for x in inputs]
        try:
            model = copy.deepcopy(self.model).cpu()
            with torch.no_grad():
                seed_all(seed)
                model(*host)
        except Exception:  # noqa: BLE001 - the model refuses these inputs (or cannot run on the CPU)
            return False
        return True

    def drop_exact(self) -> None:
        self._exact = None


class BaselineSandbox:
    """The reference sandbox of one loaded problem (see the module docstring)."""

    def __init__(self, sandbox: SandboxProcess, problem_key: str):
        self.sandbox = sandbox
        self.problem_key = problem_key
        self.models: set[str] = set()
        self.compile_note = ""  # why there is no torch.compile baseline ("" while there may be one)
        self.evaluations = 0

    def alive(self) -> bool:
        return self.sandbox.alive()

    def close(self) -> None:
        self.sandbox.close()
