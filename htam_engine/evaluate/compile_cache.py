"""Inside a candidate sandbox: route every extension build into the per-source cache folder.

load_inline/load of the current candidate build into `build/<key>/<name>_<key>`, so two
candidates that both call their extension "fused" never collide (in torch's per-process
version table or on disk), and the same source maps to the same folder in every process:
ninja finds the library up to date and nothing recompiles. The shared precompiled torch
header (pch.py) goes first on the include path.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import inspect
import linecache
import os
import sys
import types
from pathlib import Path
from typing import Any, Callable, Sequence

from htam_engine.evaluate import pch
from htam_engine.evaluate.cache import CANDIDATES, build_dir, cache_dir
from htam_engine.storage import atomic_write_text

_CUDA_SUFFIXES = (".cu", ".cuh")
# (flags, with_cuda, extension name): a build's request for its flag set's shared header
PchRequest = Callable[[Sequence[str], bool, str], None]


class CompileCache:
    """Patches torch.utils.cpp_extension's loaders once per sandbox (before kernel_switch wraps
    the module importer, which the patched loaders still reach)."""

    def __init__(self) -> None:
        self.key: str | None = None
        # Told (flags, with_cuda, extension name) before each build that can use a shared precompiled
        # header: the sandbox asks the judge for it (wire.PchWanted).
        self.on_pch_wanted: PchRequest | None = None
        import torch.utils.cpp_extension as ce

        for fn_name in ("load_inline", "load"):
            original = getattr(ce, fn_name)
            setattr(ce, fn_name, self._wrap(original))

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(original)

        @functools.wraps(original)
        def routed(*args: Any, **kwargs: Any) -> Any:
            key = self.key
            if key is None:
                return original(*args, **kwargs)
            bound = sig.bind(*args, **kwargs)
            name = f"{bound.arguments['name']}_{key}"
            folder = build_dir(key) / name
            folder.mkdir(parents=True, exist_ok=True)
            bound.arguments["name"] = name
            bound.arguments["build_directory"] = str(folder)
            _use_shared_pch(bound.arguments, self.on_pch_wanted)
            return original(*bound.args, **bound.kwargs)

        return routed


def _use_shared_pch(arguments: dict[str, Any], on_wanted: PchRequest | None) -> None:
    """Put the shared precompiled torch/extension.h's folder first on a build's include path, and
    tell the judge (on_wanted), which builds its .gch where the flag set recurs (pch.wanted); this
    sandbox may not write the folder.

    load_inline always has a C++ host unit (its bindings); load has one when any source
    is not CUDA. The folder goes before the candidate's own include paths so gcc finds
    the precompiled header's folder first.
    """
    sources = arguments.get("sources")
    if sources is not None:  # load(name, sources, ...)
        files = [sources] if isinstance(sources, str) else list(sources)
        if all(str(f).endswith(_CUDA_SUFFIXES) for f in files):
            return
        with_cuda = bool(arguments.get("with_cuda")) or any(str(f).endswith(_CUDA_SUFFIXES) for f in files)
    else:
        with_cuda = bool(arguments.get("with_cuda")) or bool(arguments.get("cuda_sources"))
    flags = pch.flag_set(arguments.get("extra_cflags"))
    folder = pch.shared_folder(flags, with_cuda) if flags is not None else None
    if folder is None:
        return
    if on_wanted is not None:  # every build: the judge also puts back a link planted where writes are not confined
        on_wanted(flags, with_cuda, str(arguments["name"]))
    own = arguments.get("extra_include_paths") or []
    own = [own] if isinstance(own, str) else list(own)
    arguments["extra_include_paths"] = [str(folder), *own]


def clear_stale_batons(folder: os.PathLike) -> None:
    """torch's build lock files left by a killed compile would make the next one wait forever.

    Called while holding this key's fcntl lock, so no live htam process owns them.
    """
    for root, _dirs, files in os.walk(folder):
        if "lock" in files:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(root, "lock"))


def candidate_file(key: str):
    return cache_dir() / CANDIDATES / f"candidate_{key}.py"


def write_candidate_file(code: str, key: str) -> Path:
    """The candidate's file in the cache (candidate_file), written where it is missing or differs."""
    path = candidate_file(key)
    if not path.exists() or path.read_text() != code:
        atomic_write_text(path, code)
    return path


def import_candidate(code: str, key: str) -> types.ModuleType:
    """Execute the candidate's source as module htam_candidate_<key> (its file lives in the cache,
    so tracebacks and compiler messages name a real file).

    What runs is `code` itself, compiled here, never what the shared cache holds: every sandbox can
    write there, and the file loader would run a __pycache__/*.pyc an earlier candidate planted
    with this file's mtime and size. The source lines go to linecache with no mtime, so
    inspect.getsource (Triton's @jit reads its kernels' text that way) reads `code` too, not the
    file as it may be later."""
    path = write_candidate_file(code, key)
    mod_name = f"htam_candidate_{key}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    linecache.cache[str(path)] = (len(code), None, code.splitlines(keepends=True), str(path))
    sys.modules[mod_name] = module
    try:
        exec(compile(code, str(path), "exec", dont_inherit=True), module.__dict__)  # noqa: S102 - the sandbox's job
    except BaseException:
        sys.modules.pop(mod_name, None)
        raise
    return module
