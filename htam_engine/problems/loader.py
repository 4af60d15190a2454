"""Load a KernelBench-format problem file into a Problem, and run it as a fresh module.

A problem file defines ``class Model(nn.Module)``, ``get_inputs()``, ``get_init_inputs()``
and module-level size constants. Loading never allocates the problem's inputs: get_inputs
runs under the meta device, falling back to a real call only when meta cannot run it.
"""

from __future__ import annotations

import ast
import contextlib
import itertools
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from htam_engine.problems import builtin as builtin_suite
from htam_engine.problems.family import classify_family
from htam_engine.problems.model import Problem, ProblemError, TensorSpec
from htam_engine.problems.overrides import OVERRIDES_GLOBAL, apply_overrides, top_level_assigned

GPU_SIZES_NAME = "GPU_SIZES"
_module_ids = itertools.count()


@dataclass
class ProblemInstance:
    """A problem's module executed under its overrides, ready to build models and inputs."""

    Model: type
    get_inputs: Callable[[], list[Any]]  # returns inputs on the instance's device
    get_init_inputs: Callable[[], list[Any]]
    namespace: dict[str, Any]
    module: types.ModuleType
    device: str = "cpu"


# ---------------------------------------------------------------- source -> module


def _label(problem_path: str | None, fallback: str) -> str:
    return problem_path or fallback


def parse_source(source: str, label: str) -> ast.Module:
    try:
        return ast.parse(source, filename=label)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" if exc.lineno else "unknown line"
        raise ProblemError(label, f"syntax error at {where}: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ProblemError(label, f"cannot parse: {exc}") from None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _refusal(missing: str) -> Callable[..., Any]:
    def refuse(*_a: Any, **_k: Any) -> None:
        raise ModuleNotFoundError(f"No module named {missing!r}", name=missing)

    return refuse


class _StandInType(type):
    """Class-level attributes of a stand-in class (AutoConfig.from_pretrained) refuse too."""

    def __getattr__(cls, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _refusal(cls._missing)


class _StandIn(types.ModuleType):
    """Takes the place of a third-party module a problem imports but this machine lacks.

    Listing a problem only needs its top level and get_inputs(), which rarely use such a
    module (KernelBench's Mamba files import einops for forward only); any use raises.
    """

    __path__: list[str] = []  # a package, so `from missing.sub import x` resolves too

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        root = self.__name__.split(".")[0]
        refuse = _refusal(root)
        return _StandInType(attr, (), {"__init__": refuse, "__call__": refuse, "_missing": root})


def execute_source(
    source: str,
    label: str,
    overrides: dict[str, Any] | None,
    *,
    keep: bool,
    missing: list[str] | None = None,
) -> types.ModuleType:
    """Run the file's top level as a new module with `overrides` applied to its constants.

    `keep` leaves the module registered in sys.modules (the worker keeps it so classes
    defined in it can be pickled and introspected); otherwise it is removed afterwards.
    With a `missing` list, third-party modules that cannot be imported get stand-ins for
    the duration of the run and their names are appended to the list.
    """
    if missing is None:
        return _execute(source, label, overrides, keep=keep)
    stand_ins: dict[str, _StandIn] = {}
    try:
        for _ in range(8):
            try:
                return _execute(source, label, overrides, keep=keep)
            except _ImportFault as fault:
                name = fault.name
                if not name or name in stand_ins or name.split(".")[0] in ("torch", "htam_engine"):
                    raise ProblemError(label, fault.message) from None
                stand_ins[name] = sys.modules[name] = _StandIn(name)
                missing.append(name)
        raise ProblemError(label, "module code imports too many missing modules")
    finally:
        for name in stand_ins:
            sys.modules.pop(name, None)


class _ImportFault(ProblemError):
    def __init__(self, label: str, message: str, name: str | None):
        super().__init__(label, message)
        self.message = message
        self.name = name


_KEPT_MODULES = 64  # problem modules a long-lived worker keeps registered in sys.modules


def _forget_old_modules() -> None:
    """Unregister all but the newest problem modules (live references keep working)."""
    ours = [n for n in sys.modules if n.startswith("htam_problem_")]
    if len(ours) >= _KEPT_MODULES:
        ours.sort(key=lambda n: int(n.rsplit("_", 1)[1]))
        for name in ours[: len(ours) - _KEPT_MODULES + 1]:
            sys.modules.pop(name, None)


def _execute(source: str, label: str, overrides: dict[str, Any] | None, *, keep: bool) -> types.ModuleType:
    return _execute_tree(parse_source(source, label), label, overrides, keep=keep)


def _execute_tree(tree: ast.Module, label: str, overrides: dict[str, Any] | None, *, keep: bool) -> types.ModuleType:
    """Run a parsed problem file (the tree is not changed, so one parse serves several runs)."""
    overrides = dict(overrides or {})
    tree, unknown = apply_overrides(tree, set(overrides))
    if unknown:
        known = sorted(n for n in top_level_assigned(tree) if not n.startswith("_"))
        listed = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
        raise ProblemError(
            label,
            f"unknown constant {sorted(unknown)[0]!r} for --set (module-level constants: {listed or 'none'})",
        )
    name = f"htam_problem_{next(_module_ids)}"
    _forget_old_modules()
    module = types.ModuleType(name)
    module.__file__ = label
    module.__dict__[OVERRIDES_GLOBAL] = overrides
    sys.modules[name] = module
    try:
        code = compile(tree, label, "exec")
        exec(code, module.__dict__)  # noqa: S102 - running the problem file is the point
    except ProblemError:
        sys.modules.pop(name, None)
        raise
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - any fault in the file is the file's fault
        sys.modules.pop(name, None)
        message = f"module code raised {_one_line(exc)}"
        if isinstance(exc, ModuleNotFoundError):
            raise _ImportFault(label, message, exc.name) from None
        raise ProblemError(label, message) from None
    except BaseException:  # an interrupt (Ctrl-C, a load time limit) is not the file's fault
        sys.modules.pop(name, None)
        raise
    finally:
        module.__dict__.pop(OVERRIDES_GLOBAL, None)
    if not keep:
        sys.modules.pop(name, None)
    return module


def _required(module: types.ModuleType, label: str) -> tuple[type, Callable, Callable]:
    import torch.nn as nn

    ns = module.__dict__
    model = ns.get("Model")
    if model is None:
        raise ProblemError(label, "missing class Model")
    if not (isinstance(model, type) and issubclass(model, nn.Module)):
        raise ProblemError(label, "Model is not a subclass of torch.nn.Module")
    fns = []
    for fn_name in ("get_inputs", "get_init_inputs"):
        fn = ns.get(fn_name)
        if fn is None:
            raise ProblemError(label, f"missing function {fn_name}()")
        if not callable(fn):
            raise ProblemError(label, f"{fn_name} is not a function")
        fns.append(fn)
    return model, fns[0], fns[1]


# ---------------------------------------------------------------- inputs


_SCALARS = (bool, int, float, complex, str, type(None))


def _check_items(items: Any, fn_name: str, label: str) -> list[Any]:
    import torch

    if not isinstance(items, (list, tuple)):
        raise ProblemError(label, f"{fn_name}() returned {type(items).__name__}, expected a list")

    def ok(x: Any) -> bool:
        if isinstance(x, (torch.Tensor, *_SCALARS, torch.dtype, torch.Size)):
            return True
        if isinstance(x, (list, tuple)):
            return all(ok(v) for v in x)
        return False

    for i, item in enumerate(items):
        if not ok(item):
            raise ProblemError(
                label, f"{fn_name}() item {i} is a {type(item).__name__}, expected tensors or numbers"
            )
    return list(items)


def _call_inputs(fn: Callable, fn_name: str, label: str) -> list[Any]:
    """Call fn under the meta device (no allocation); call it for real only if meta fails."""
    import torch

    try:
        with torch.device("meta"):
            result = fn()
    except (Exception, SystemExit):  # noqa: BLE001 - fall back to a real call below
        try:
            result = fn()
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - the file's fault, reported in one line
            raise ProblemError(label, f"{fn_name}() raised {_one_line(exc)}") from None
    return _check_items(result, fn_name, label)


def spec_of(value: Any) -> TensorSpec:
    import torch

    if isinstance(value, torch.Tensor):
        return TensorSpec(shape=[int(s) for s in value.shape], dtype=str(value.dtype).removeprefix("torch."))
    return TensorSpec(shape=[], dtype=type(value).__name__)


# ---------------------------------------------------------------- constants and GPU sizes


def _jsonable(value: Any) -> bool:
    if isinstance(value, (bool, int, float, str, type(None))):
        return True
    if isinstance(value, (list, tuple)):
        return len(value) <= 64 and all(_jsonable(v) for v in value)
    return False


def module_constants(tree: ast.Module, namespace: dict[str, Any]) -> dict[str, Any]:
    """Top-level constants with plain values (numbers, strings, tuples of them)."""
    out: dict[str, Any] = {}
    for name in sorted(top_level_assigned(tree)):
        if name.startswith("__") or name == GPU_SIZES_NAME:
            continue
        value = namespace.get(name)
        if _jsonable(value) and name in namespace:
            out[name] = list(value) if isinstance(value, tuple) else value
    return out


def gpu_sizes(source: str, label: str = "<problem>") -> dict[str, Any]:
    """The file's literal ``GPU_SIZES = {...}`` dict (empty when it has none)."""
    tree = parse_source(source, label)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == GPU_SIZES_NAME for t in node.targets
        ):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError):
                raise ProblemError(label, f"{GPU_SIZES_NAME} must be a literal dict") from None
            if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
                raise ProblemError(label, f"{GPU_SIZES_NAME} must be a dict of constant names to values")
            return value
    return {}


# ---------------------------------------------------------------- refs and ids


def _level_from_path(path: Path) -> int | None:
    for part in reversed(path.parent.parts):
        low = part.lower()
        if low.startswith("level") and low[5:].isdigit():
            return int(low[5:])
    return None


def _is_kernelbench(path: Path) -> bool:
    return any("kernelbench" in part.lower() for part in path.parent.parts)


def problem_id(path: Path, level: int | None) -> str:
    builtin_name = builtin_suite.name_of(path)
    if builtin_name is not None:
        return f"builtin:{builtin_name}"
    if level is not None and _is_kernelbench(path):
        return f"kernelbench:level{level}/{path.stem}"
    return path.stem


def kernelbench_root() -> Path | None:
    """The folder holding level1..levelN of the checkout named by HTAM_KERNELBENCH, if any."""
    from htam_engine import settings

    root = settings.value("kernelbench")
    if not root:
        return None
    base = Path(root).expanduser()
    if (base / "KernelBench").is_dir():
        base = base / "KernelBench"
    return base if (base / "level1").is_dir() else None


def _kernelbench_file(ref: str) -> Path | None:
    """`kernelbench:level1/19_ReLU` under HTAM_KERNELBENCH, when that is set."""
    base = kernelbench_root()
    if base is None:
        return None
    rel = ref.split(":", 1)[1]
    path = base / (rel if rel.endswith(".py") else rel + ".py")
    return path if path.is_file() else None


def resolve_ref(ref: str) -> Path:
    """A problem reference -> its file: a path, `builtin:NAME`, a built-in NAME, or `kernelbench:levelN/STEM`."""
    if ref.startswith("builtin:"):
        return builtin_suite.builtin_path(ref.split(":", 1)[1])
    if ref.startswith("kernelbench:"):
        found = _kernelbench_file(ref)
        if found is None:
            raise ProblemError(ref, "no such KernelBench problem (set HTAM_KERNELBENCH to a checkout)")
        return found
    path = Path(ref).expanduser()
    if path.is_dir():
        raise ProblemError(ref, "is a folder, not a problem file")
    if path.is_file():
        return path
    if ref in builtin_suite.builtin_names():
        return builtin_suite.builtin_path(ref)
    raise ProblemError(ref, "no such file or built-in problem")


# ---------------------------------------------------------------- public entry points


def load_problem(ref: str, overrides: dict[str, Any] | None = None, *, device: str = "cpu") -> Problem:
    """Load and check a problem; fill inputs (shapes and dtypes), family, level, constants.

    device="cuda" applies the file's GPU_SIZES first, then the explicit overrides on top.
    Raises ProblemError (one line naming the file and the fault).
    """
    path = resolve_ref(ref)
    label = str(path)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProblemError(label, f"cannot read: {_one_line(exc)}") from None
    effective: dict[str, Any] = {}
    if device.startswith("cuda"):
        effective.update(gpu_sizes(source, label))
    effective.update(overrides or {})
    level = _level_from_path(path)
    problem = Problem(
        id=problem_id(path, level),
        name=path.stem,
        source=source,
        path=label,
        level=level,
        overrides=effective,
    )
    fill_problem(problem)
    return problem


def fill_problem(problem: Problem) -> Problem:
    """Run problem.source under problem.overrides and fill inputs, constants and family.

    Whatever the file prints goes to stderr: stdout may be carrying a --json document.
    """
    with contextlib.redirect_stdout(sys.stderr):
        return _fill(problem)


def _fill(problem: Problem) -> Problem:
    label = _label(problem.path, problem.id)
    missing: list[str] = []
    module = execute_source(problem.source, label, problem.overrides, keep=False, missing=missing)
    problem.missing_modules = missing
    _, get_inputs, get_init_inputs = _required(module, label)
    inputs = _call_inputs(get_inputs, "get_inputs", label)
    _call_inputs(get_init_inputs, "get_init_inputs", label)
    problem.inputs = [spec_of(x) for x in inputs]
    problem.constants = module_constants(parse_source(problem.source, label), module.__dict__)
    problem.family = classify_family(problem.source, level=problem.level)
    return problem


def with_overrides(problem: Problem, overrides: dict[str, Any]) -> Problem:
    """The same problem under more overrides (on top of its own), re-checked."""
    variant = Problem(
        id=problem.id,
        name=problem.name,
        source=problem.source,
        path=problem.path,
        level=problem.level,
        overrides={**problem.overrides, **overrides},
    )
    return fill_problem(variant)


def _to_device(value: Any, device: str) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        # .to(device) keeps the dtype: integer and boolean inputs stay what they are
        return value.to(device)
    if isinstance(value, list):
        return [_to_device(v, device) for v in value]
    if isinstance(value, tuple):
        return tuple(_to_device(v, device) for v in value)
    return value


def instantiate(problem: Problem, device: str = "cpu") -> ProblemInstance:
    """Execute problem.source as a fresh module under problem.overrides."""
    label = _label(problem.path, problem.id)
    module = execute_source(problem.source, label, problem.overrides, keep=True)
    return _instance(module, label, device)


def _instance(module: types.ModuleType, label: str, device: str) -> ProblemInstance:
    model, get_inputs, get_init_inputs = _required(module, label)

    def inputs_on_device() -> list[Any]:
        if device == "cpu":
            items = get_inputs()
        else:
            # draw on the device itself: GPU-sized inputs made on the CPU and copied over
            # would cost seconds per input set
            import torch

            with torch.device(device):
                items = get_inputs()
        if not isinstance(items, (list, tuple)):
            raise ProblemError(label, f"get_inputs() returned {type(items).__name__}, expected a list")
        return [_to_device(x, device) for x in items]

    def init_inputs() -> list[Any]:
        return list(get_init_inputs())

    return ProblemInstance(
        Model=model,
        get_inputs=inputs_on_device,
        get_init_inputs=init_inputs,
        namespace=module.__dict__,
        module=module,
        device=device,
    )


# ---------------------------------------------------------------- the judge's loaded problem


@dataclass(frozen=True)
class LoadedProblem:
    """A problem as the judge uses it, built once per evaluation request (and reused while the
    same problem keeps coming): the file parsed once, its module executed once, and its
    unseen-shape variant (sizes only get_inputs reads, bumped) found at load and executed once.

    input_layouts / unseen_input_layouts: (shape, stride, dtype) of get_inputs' tensors as the
    meta device draws them (None where get_inputs cannot run on meta), so the judge can size
    shared buffers for both before the first real draw.
    """

    key: str
    problem_id: str
    label: str
    source: str
    overrides: types.MappingProxyType
    device: str
    main: ProblemInstance
    unseen_overrides: types.MappingProxyType | None
    unseen: ProblemInstance | None
    unseen_note: str  # why there is no unseen-shape variant ("" when there is one)
    input_layouts: tuple | None
    unseen_input_layouts: tuple | None


def layouts_bytes(layouts: Any) -> int:
    """The bytes of one input set from its (shape, stride, dtype) layouts (each tensor's storage span):
    what the judge admits an evaluation by (devicelock) and bounds an unseen shape with."""
    total = 0
    for shape, stride, dtype in layouts:
        if any(s == 0 for s in shape):
            continue
        span = 1 + sum((s - 1) * abs(st) for s, st in zip(shape, stride))
        size = getattr(dtype, "itemsize", None)
        if size is None:
            import torch

            size = torch.empty((), dtype=dtype).element_size()
        total += span * int(size)
    return total


def _unseen_variant(tree: ast.Module, label: str, overrides: dict[str, Any], bumped: dict[str, int],
                    layouts: tuple | None, device: str,
                    current: dict[str, Any] | None) -> tuple[ProblemInstance, dict[str, int], tuple | None]:
    """The problem under `bumped` (variant, the bumps used, its input layouts). With `current`
    (the sizes before bumping: the bumps were found, not given), a variant whose input set is
    over UNSEEN_CAPPED_BYTES and more than UNSEEN_GROWTH times the main set's is replaced by one
    with fewer bumps (shapes.fewer_bumps). Raises ProblemError."""
    from htam_engine.problems.shapes import UNSEEN_CAPPED_BYTES, UNSEEN_GROWTH, fewer_bumps

    tries = [bumped] + (fewer_bumps(bumped, current) if current is not None else [])
    main_bytes = layouts_bytes(layouts or ())
    for attempt in tries:
        variant = _instance(_execute_tree(tree, label, {**overrides, **attempt}, keep=True), label, device)
        unseen_layouts = _meta_layouts(variant.module.get_inputs)
        grown = layouts_bytes(unseen_layouts or ())
        if layouts is None or unseen_layouts is None or grown <= max(UNSEEN_CAPPED_BYTES, UNSEEN_GROWTH * main_bytes):
            break
    return variant, attempt, unseen_layouts


def _meta_layouts(get_inputs: Callable[[], Any]) -> tuple | None:
    import torch

    try:
        with torch.device("meta"):
            items = get_inputs()
    except (Exception, SystemExit):  # noqa: BLE001 - get_inputs needs real values: no layouts ahead
        return None
    if not isinstance(items, (list, tuple)):
        return None
    return tuple((tuple(x.shape), tuple(x.stride()), x.dtype) for x in _tensor_leaves(items))


def _tensor_leaves(items: Any) -> list[Any]:
    import torch

    if isinstance(items, torch.Tensor):
        return [items]
    if isinstance(items, (list, tuple)):
        return [t for x in items for t in _tensor_leaves(x)]
    return []


def problem_key(problem: Problem, device: str, unseen: dict[str, Any] | None) -> str:
    import hashlib
    import json

    blob = json.dumps([problem.source, problem.overrides, device, unseen], sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def load_for_judge(problem: Problem, device: str, unseen: dict[str, Any] | None = None,
                   check_unseen: bool = True) -> LoadedProblem:
    """The LoadedProblem of `problem` on `device`. `unseen` replaces the unseen-shape overrides
    found from the file (None: find them). Raises ProblemError."""
    from htam_engine.problems.shapes import bumped_sizes

    label = _label(problem.path, problem.id)
    tree = parse_source(problem.source, label)
    overrides = dict(problem.overrides)
    with contextlib.redirect_stdout(sys.stderr):
        main = _instance(_execute_tree(tree, label, overrides, keep=True), label, device)
        layouts = _meta_layouts(main.module.get_inputs)
        variant, variant_overrides, note, unseen_layouts = None, None, "", None
        if not check_unseen:
            note = "the unseen-shape check is off"
        else:
            bumped = dict(unseen) if unseen is not None else bumped_sizes(tree, problem.constants, overrides)
            if not bumped:
                note = "no module-level size that only get_inputs reads"
            else:
                try:
                    variant, bumped, unseen_layouts = _unseen_variant(
                        tree, label, overrides, bumped, layouts, device,
                        {**problem.constants, **overrides} if unseen is None else None)
                except ProblemError as exc:
                    variant, note = None, f"the problem failed under {bumped}: {exc.fault}"
                else:
                    if unseen is None and layouts is not None and unseen_layouts is not None and \
                            [shape for shape, _, _ in layouts] == [shape for shape, _, _ in unseen_layouts]:
                        variant, note = None, "the bumped sizes do not change the input shapes"
                    else:
                        variant_overrides = types.MappingProxyType(bumped)
    return LoadedProblem(
        key=problem_key(problem, device, unseen), problem_id=problem.id, label=label, source=problem.source,
        overrides=types.MappingProxyType(overrides), device=device, main=main,
        unseen_overrides=variant_overrides, unseen=variant, unseen_note=note,
        input_layouts=layouts, unseen_input_layouts=unseen_layouts if variant is not None else None,
    )
