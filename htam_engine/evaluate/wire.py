"""The judge <-> sandbox messages: what each side may say, in one place.

Judge -> sandbox: the request dataclasses below, pickled (the trusted direction).
Sandbox -> judge: msgpack maps, at most MAX_SANDBOX_BYTES each, decoded by `decode_reply`
into exactly one of the reply dataclasses, every field type-checked (session/codec.py). A map
with another "t", an unknown or missing field, a wrong type or a reply to another request is a
WireError: the judge turns it into a `protocol` finding, never into a result.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from htam_engine.evaluate.kernel_switch import KernelMode
from htam_engine.evaluate.result import CompilerMessage
from htam_engine.evaluate.shared import Exported, Layout

# A sandbox message larger than this is refused (compiler logs are trimmed well below it).
MAX_SANDBOX_BYTES = 2 * 1024 * 1024


class WireError(Exception):
    """The sandbox said something the protocol does not allow."""


# ---------------------------------------------------------------- judge -> sandbox (pickled)
@dataclass(frozen=True, slots=True)
class BufRef:
    """Stands for a shared tensor in a call: storage `id` (attached before) seen as `layout`."""

    id: int
    layout: Layout


@dataclass(slots=True)
class Build:
    """Candidate sandbox: build and import the candidate module; find ModelNew."""

    seq: int
    code: str
    key: str
    backend: str


@dataclass(slots=True)
class LoadReference:
    """Reference sandbox: run the problem's module (its Model is all it ever runs)."""

    seq: int
    source: str
    label: str
    overrides: dict


@dataclass(slots=True)
class Construct:
    """Build model `model_id` (ModelNew, or the reference's Model) under `seed`, as KernelBench:
    seed, then Model(*init), then .to(device). compiled: wrap it in torch.compile (reference only)."""

    seq: int
    model_id: str
    init: list
    seed: int
    compiled: bool = False
    of: str = ""  # compiled: the model_id whose module is compiled (shares its weights)


@dataclass(slots=True)
class Attach:
    """Map shared buffers (CPU: their memfds follow the message on the socket, in this order)."""

    seq: int
    buffers: list[tuple[int, Exported]]


@dataclass(slots=True)
class Detach:
    seq: int
    ids: list[int]


@dataclass(slots=True)
class Call:
    """One forward of an Arm, always the same protocol (see sandbox.py): poison with `marker`, seed
    with its seed (which comes with the Go), (CUDA: flush L2, events), forward on `inputs`,
    synchronize, copy each output leaf into its buffer."""

    inputs: list
    outputs: list[tuple[str, BufRef]]  # (leaf path, where it goes) for the reference's tensor leaves
    marker: str  # "nan" | "sentinel"


@dataclass(slots=True)
class Arm:
    """Calls of `model_id`, announced before the judge writes their inputs: the sandbox resolves
    every buffer the calls name and, when `warm`, runs the model once, untimed and unchecked, on its
    private copy of inputs shaped as its last call's (a candidate's inputs too large to copy: the
    shared buffers, which still hold them), then answers (an Outcome) and waits for Go. The judge
    writes the inputs once answered, so the warm-up cannot compute anything of them; what the
    sandbox does between the warm-up and the first forward is only reading the Go, and each
    further call follows the one before at once, as in KernelBench's back-to-back loop (timing.py).
    kernels: what every custom kernel does in these calls (kernel_switch.KernelMode: off for the work check).
    garbage_above: with kernels GARBAGE, only tensors of more elements than this get garbage (0: all;
    kernel_switch's "on the bulk")."""

    seq: int
    model_id: str
    calls: list[Call]
    kernels: KernelMode = KernelMode.RUN
    warm: bool = True
    garbage_above: int = 0


@dataclass(slots=True)
class Go:
    """Run the armed calls, one right after another, the k-th seeded with seeds[k]; the answer is a
    Called for one call, else a Ran with one Called per call, in order (the first that fails ends
    the run). The seeds come here, not with the Arm: the warm-up runs candidate code while the Arm
    is handled, which could read them there and draw a stochastic forward's randomness ahead, off
    every clock (cheat_warmup_seed_masks)."""

    seq: int
    seeds: list[int]


@dataclass(slots=True)
class Close:
    seq: int


@dataclass(slots=True)
class PchDone:
    """The judge's answer to a PchWanted, within the Build it came in: the flag set's header is
    built where the judge built it (pch.wanted), and the build goes on. It answers the one request
    the sandbox is waiting on, so it carries nothing."""


# ---------------------------------------------------------------- sandbox -> judge (msgpack)
@dataclass(slots=True)
class Ready:
    pid: int
    role: str


@dataclass(slots=True)
class PchWanted:
    """Before a build that can use a shared precompiled torch header (compile_cache). The judge
    puts the header's link right, counts the flag set, builds the header itself where it recurs
    (pch.wanted) and answers PchDone, which the sandbox waits for. Only a request: the judge
    checks every field."""

    flags: list[str]
    with_cuda: bool
    name: str


@dataclass(slots=True)
class Note:
    """An early, cheap finding the sandbox saw in its own process (advice: it can be suppressed)."""

    rule: str
    message: str


@dataclass(slots=True)
class Outcome:
    """Reply to build / construct / attach / detach / load."""

    seq: int
    ok: bool
    kind: str = ""  # on failure: compile_error | runtime_error | harness_error
    message: str = ""
    log: str = ""
    compile_cached: bool = False
    extension_ops: bool = False  # the build registered torch.ops operators (launches not counted)
    compiler: list[CompilerMessage] = field(default_factory=list)
    params: list[ParamPrint] = field(default_factory=list)


@dataclass(slots=True)
class ParamPrint:
    """A parameter's or buffer's fingerprint, in the model's own order."""

    name: str
    numel: int
    total: float
    squares: float


@dataclass(slots=True)
class LeafMeta:
    """One leaf of the forward's output, as the sandbox saw it before copying it."""

    path: str
    kind: str  # tensor | number | none | other
    type_name: str
    shape: list[int] = field(default_factory=list)
    stride: list[int] = field(default_factory=list)  # the judge decides density from these
    dtype: str = ""
    device: str = ""
    aliases: int = -1  # index of an input whose storage this output overlaps, or -1
    copied: bool = False  # written into its shared buffer
    value: Any = None  # number leaves


@dataclass(slots=True)
class Called:
    seq: int
    ok: bool
    kind: str = ""  # on failure: compile_error | runtime_error
    message: str = ""
    ms: float = 0.0  # the forward as the sandbox timed it (CUDA events / perf_counter)
    outputs: list[LeafMeta] = field(default_factory=list)
    launches: int = 0  # custom-kernel calls (Triton launches, extension functions) that returned
    notes: list[Note] = field(default_factory=list)
    tail_ms: float = 0.0  # device work after the end event, by the sandbox's host clock (timing.run_trial)
    flush_ms: float = 0.0  # the L2 flush before the start event, by events (timing.run_trial; 0 on the CPU)


@dataclass(slots=True)
class Ran:
    """The answer to a Go of several calls: each call's Called, in order, up to the first that failed."""

    seq: int
    called: list[Called] = field(default_factory=list)


REPLIES: dict[str, type] = {"ready": Ready, "pch": PchWanted, "outcome": Outcome, "called": Called, "ran": Ran}
_TAG = {cls: tag for tag, cls in REPLIES.items()}


def encode_reply(reply: Any) -> dict[str, Any]:
    """The plain map for a reply dataclass (sandbox side)."""
    from htam_engine.session.codec import to_plain

    d = to_plain(reply)
    d["t"] = _TAG[type(reply)]
    return d


def _known_fields(cls: type, body: dict[str, Any], tag: str) -> None:
    names = {f.name for f in dataclasses.fields(cls)}
    extra = [k for k in body if k not in names]
    if extra:
        raise WireError(f"a {tag!r} message with unknown field(s) {', '.join(map(str, extra[:4]))}")


def decode_reply(msg: Any, expected_seq: int | None = None) -> Any:
    """The reply dataclass a sandbox map stands for; WireError for anything else."""
    from htam_engine.session.codec import CodecError, decode

    if not isinstance(msg, dict):
        raise WireError(f"a message that is not a map ({type(msg).__name__})")
    cls = REPLIES.get(msg.get("t"))
    if cls is None:
        raise WireError(f"a message of unknown type {str(msg.get('t'))[:40]!r}")
    body = {k: v for k, v in msg.items() if k != "t"}
    _known_fields(cls, body, msg["t"])
    if cls is Ran and isinstance(body.get("called"), list):  # the codec would drop a nested call's extras
        for called in body["called"]:
            if isinstance(called, dict):
                _known_fields(Called, called, "called")
    try:
        reply = decode(cls, body)
    except CodecError as exc:
        raise WireError(f"a malformed {msg['t']!r} message ({exc})") from None
    for called in getattr(reply, "called", [reply]):
        for leaf in getattr(called, "outputs", ()):
            if leaf.value is not None and not isinstance(leaf.value, (bool, int, float)):
                raise WireError(f"an output value of type {type(leaf.value).__name__}")
    seq = getattr(reply, "seq", None)
    if expected_seq is not None and seq is not None and seq != expected_seq:
        raise WireError(f"a reply to request {seq} while request {expected_seq} was pending")
    return reply
