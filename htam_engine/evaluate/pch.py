"""A shared precompiled torch/extension.h for the C++ host unit of candidates' extensions.

Parsing the torch headers is most of a small extension's host compile. torch's own
`load_inline(use_pch=True)` writes its .gch into site-packages and `use_pch=False`
deletes it, which breaks with several workers at once. Instead each flag set gets its
own folder under the cache dir, `pch/<key>/torch/extension.h` (a link to the real header)
plus `extension.h.gch` beside it, built once per machine under a file lock. The folder
goes first on the candidate's include path: `-I` folders are searched before torch's
`-isystem` ones, so `#include <torch/extension.h>` finds the link, and gcc takes the .gch
next to it when the flags match (it silently reads the plain header when they do not).

Who writes what: a candidate sandbox may not write this folder (cache.SANDBOX_WRITABLE,
landlock.py). Every later build with those flags reads the header and its .gch from here, so a
sandbox that could write it could poison them all: a link to a header of its own (every later
build at -O0, cheat_pch_poison) or a .gch of its own making. The sandbox only asks
(compile_cache, wire.PchWanted); the judge, which never runs candidate code, counts the flag set
and builds the .gch itself (`wanted`), with gcc and torch's own header, for a flag set of the
forms extension builds use (SAFE_FLAG: the judge runs gcc with those flags). The .gch is built
once a flag set has proved to recur (see build_after), in a stage the engine does not count
against that candidate's timeout; the build that asked waits for it (PchDone) and uses it.
The folder is handed out even before and when the .gch could not be built, so a candidate's build
command (and so ninja's view of it) is the same whether or not the header is precompiled.
`HTAM_PCH=0` turns all of this off. Anything that goes wrong means: no precompiled header.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import re
import resource
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Callable, Sequence

from htam_engine import settings
from htam_engine.evaluate.cache import PCH, cache_dir, file_lock, sha256_text
from htam_engine.storage import atomic_write_text

ENV_SWITCH = settings.BY_KEY["pch"].env
_HEADER = Path("torch") / "extension.h"
_GCH = Path("torch") / "extension.h.gch"
_FAILED = "failed.txt"
# A PCH build that takes longer than this is not worth waiting for (2 busy cores: ~160 s).
_BUILD_TIMEOUT_S = 900.0
# Each .gch of torch/extension.h is ~0.5 GB: at most this many flag sets have one, those asked
# for most (_slot_for).
MAX_FLAG_SETS = 8


AFTER_ENV = settings.BY_KEY["pch_after"].env
# Measured on 2 busy cores (gcc 12, torch 2.13 CPU, -O3): building the .gch costs ~55 s CPU;
# it cuts a host unit from ~35 s to ~16 s CPU, so it pays off after about three builds.
# It is built when the flag set's second distinct extension arrives (a flag set used once
# never pays for it); from its fourth extension on, the flag set is ahead: the setting's
# default (settings.py) is 2.


def enabled() -> bool:
    return settings.pch_enabled()


def build_after() -> int:
    """How many distinct extensions with one flag set come before its .gch is built (>= 1)."""
    return settings.pch_after()


@functools.lru_cache(maxsize=None)
def _compiler() -> tuple[str, str] | None:
    """The C++ compiler torch's builds use and its version line; None unless it is gcc.

    Only gcc looks for `header.gch` beside the header it includes.
    """
    from torch.utils import cpp_extension as ce

    name = ce.get_cxx_compiler()
    path = shutil.which(name)
    if path is None or not sys.platform.startswith("linux") or not ce.check_compiler_is_gcc(name):
        return None
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    return path, (out.stdout.splitlines() or [""])[0]


@functools.lru_cache(maxsize=None)
def cxx_std_flag() -> str:
    """The -std flag torch's extension builds pass the host compiler.

    It changed between torch releases (c++17, later c++20), and gcc silently ignores a .gch
    built with another standard, so it is read from the installed torch's build-file writer."""
    from torch.utils import cpp_extension as ce

    with contextlib.suppress(Exception):
        found = re.search(r"-std=(c\+\+\d\d)", inspect.getsource(ce._write_ninja_file_to_build_library))
        if found:
            return f"-std={found.group(1)}"
    return "-std=c++17"


@functools.lru_cache(maxsize=None)
def _system_includes(with_cuda: bool) -> tuple[str, ...]:
    """torch's -isystem folders for the host unit, in torch's order (cpp_extension's ninja file)."""
    from torch.utils.cpp_extension import include_paths

    dirs = include_paths("cuda" if with_cuda else "cpu")
    python_inc = sysconfig.get_path("include", scheme="posix_prefix")
    if python_inc:
        dirs.append(python_inc)
    return tuple(dirs)


def build_command(header: Path, output: Path, extra_cflags: Sequence[str], with_cuda: bool) -> list[str]:
    """The gcc command for the .gch, with the flags load_inline gives the host unit (bar the
    per-extension -DTORCH_EXTENSION_NAME, which the header does not use)."""
    compiler = _compiler()
    assert compiler is not None
    cmd = [compiler[0], "-x", "c++-header", str(header), "-o", str(output),
           "-DTORCH_API_INCLUDE_EXTENSION_H", "-fPIC", cxx_std_flag(), *extra_cflags]
    for inc in _system_includes(with_cuda):
        cmd += ["-isystem", inc]
    return cmd


def pch_key(extra_cflags: Sequence[str], with_cuda: bool) -> str:
    import torch

    compiler = _compiler()
    assert compiler is not None
    return sha256_text(torch.__version__, torch.__file__, *compiler, str(with_cuda),
                       *_system_includes(with_cuda), "\x1f".join(extra_cflags))[:16]


# The flags the judge passes gcc when it builds a flag set's header (build_command), one
# list element each, in the forms extension builds use: optimisation, debug info, warnings, the
# C++ standard, target and floating-point options, macros. Anything else is refused, since some
# flags run or read a file of the caller's choosing in the judge's process (-fplugin=, -wrapper,
# -B, -specs=, @file, -include, -Wp,...); such a flag set gets no shared header.
SAFE_FLAG = re.compile(
    r"-(O[0-3sgz]?|Ofast|g[0-3]?|w|W(no-)?[a-z][a-z0-9-]*|std=(c|gnu)\+\+[0-9a-z]{2}"
    r"|m(arch|tune|cpu)=[A-Za-z0-9_.-]+|m(no-)?(avx[0-9a-z]*|fma|f16c|sse[0-9.a-z]*|bmi2?|popcnt|lzcnt)"
    r"|mprefer-vector-width=[0-9]+"
    r"|f(no-)?(fast-math|math-errno|trapping-math|unroll-loops|unroll-all-loops|openmp|openmp-simd|pic|PIC"
    r"|strict-aliasing|tree-vectorize|vectorize|omit-frame-pointer|finite-math-only|signed-zeros"
    r"|associative-math|reciprocal-math|unsafe-math-optimizations|rounding-math|exceptions|rtti"
    r"|inline-functions)"
    r"|ffp-contract=(fast|on|off)|fvisibility=(hidden|default)"
    r"|D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+-]*)?|U[A-Za-z_][A-Za-z0-9_]*)")
# An extension's name as the judge files it under seen/ (a Python module name: no path in it).
_BUILD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}")


def flag_set(extra_cflags: object) -> tuple[str, ...] | None:
    """A build's extra_cflags as the flag set a shared header is keyed by; None where they are
    not a list of SAFE_FLAG forms (that build gets no shared header)."""
    if not isinstance(extra_cflags, (list, tuple, type(None))):
        return None
    flags = tuple(f.strip() if isinstance(f, str) else "" for f in (extra_cflags or ()))
    return flags if all(SAFE_FLAG.fullmatch(f) for f in flags) else None


def shared_folder(flags: Sequence[str], with_cuda: bool) -> Path | None:
    """The folder to put first on a build's include path (in the candidate sandbox: it reads, and
    writes nothing); None when precompiled headers are off or cannot apply (not gcc). Never raises."""
    if not enabled():
        return None
    try:
        if _compiler() is None:
            return None
        return cache_dir() / PCH / pch_key(flags, with_cuda)
    except Exception:  # noqa: BLE001 - a missing PCH only costs time
        return None


def wanted(extra_cflags: object, with_cuda: bool, build_name: object,
           on_build: Callable[[], None] | None = None) -> bool:
    """In the judge, when a candidate's build asked for a flag set's header (wire.PchWanted): the
    header link put right, the extension counted, and the .gch built once the flag set recurs
    (build_after). `on_build` is called first when this call will build the header or wait for
    another process building it. True when it did either. Every argument is the sandbox's word:
    flags outside SAFE_FLAG and a name that is not a module name are refused. Never raises."""
    flags, cuda = flag_set(extra_cflags), bool(with_cuda)
    if flags is None or not isinstance(build_name, str) or not _BUILD_NAME.fullmatch(build_name):
        return False
    folder = shared_folder(flags, cuda)
    if folder is None:
        return False
    try:
        link_header(folder, cuda)
        if settled(folder) or not _recurring(folder, build_name):
            return False
        if on_build is not None:
            on_build()
        ensure(folder, flags, cuda)
        return True
    except Exception:  # noqa: BLE001 - a missing PCH only costs time
        return False


def _recurring(folder: Path, build_name: str) -> bool:
    """Counts this extension for the flag set; True once enough distinct ones were seen."""
    seen = folder / "seen"
    seen.mkdir(parents=True, exist_ok=True)
    (seen / build_name).touch()
    return _seen(folder) >= build_after()


def link_header(folder: Path, with_cuda: bool) -> None:
    """folder/torch/extension.h -> the real header (gcc wants the .gch beside what it includes).
    A link that points anywhere else is replaced: it goes first on every later build's include
    path, and where sandbox writes are not confined (no Landlock) a sandbox can plant one (a
    planted header once built them all at -O0)."""
    link = folder / _HEADER
    target = Path(_system_includes(with_cuda)[0]) / _HEADER
    if link.is_symlink() and os.readlink(link) == str(target):
        return
    link.parent.mkdir(parents=True, exist_ok=True)
    tmp_link = link.with_name(f".{link.name}.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        tmp_link.unlink()
    tmp_link.symlink_to(target)
    os.replace(tmp_link, link)


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def settled(folder: Path) -> bool:
    """Built, or known not to build: nothing left to do for this flag set."""
    return (folder / _GCH).exists() or (folder / _FAILED).exists()


def _seen(folder: Path) -> int:
    """How many distinct extensions asked for this flag set's header (_recurring)."""
    try:
        return sum(1 for _ in (folder / "seen").iterdir())
    except OSError:
        return 0


def _slot_for(folder: Path) -> bool:
    """Whether `folder`'s flag set may have a .gch now: fewer than MAX_FLAG_SETS are built, or it
    recurs more than the least recurring flag set that has one, whose .gch then goes. A candidate
    can take every slot with flag sets nobody else uses (red-team pass 23: a junk -D, two
    evaluations a set), after which no honest flag set got a header again; now the slots follow
    how often each flag set is asked for, which a candidate raises by one an evaluation."""
    built = [gch.parent.parent for gch in folder.parent.glob(f"*/{_GCH}")]
    if len(built) < MAX_FLAG_SETS:
        return True
    asked, victim = min((_seen(f), f) for f in built)
    if asked >= _seen(folder):
        return False
    (victim / _GCH).unlink(missing_ok=True)  # a build reading it keeps its open file
    return True


def ensure(folder: Path, extra_cflags: Sequence[str], with_cuda: bool) -> None:
    """Make `folder` usable: the header link always, the .gch unless building it failed before.

    Concurrent workers wait on the lock for the one that builds; a worker killed mid-build
    leaves only a temporary file (the .gch appears by an atomic rename) and frees the lock.
    """
    gch = folder / _GCH
    if settled(folder):
        return
    with file_lock(f"pch-{folder.name}"):
        if settled(folder):
            return
        link_header(folder, with_cuda)
        header = Path(_system_includes(with_cuda)[0]) / _HEADER
        if not _slot_for(folder):
            return  # asked again, it is weighed again
        tmp = gch.with_name(f".{gch.name}.{os.getpid()}.tmp")
        t0, cpu0 = time.perf_counter(), _children_cpu_s()
        try:
            proc = subprocess.run(build_command(header, tmp, extra_cflags, with_cuda),
                                  capture_output=True, text=True, timeout=_BUILD_TIMEOUT_S)
            ok, why = proc.returncode == 0 and tmp.exists(), proc.stderr[-2000:]
        except (OSError, subprocess.SubprocessError) as exc:
            ok, why = False, str(exc)
        if ok:
            os.replace(tmp, gch)
            atomic_write_text(folder / "built.txt", f"wall {time.perf_counter() - t0:.1f} s, "
                                                    f"cpu {_children_cpu_s() - cpu0:.1f} s\n")
        else:
            with contextlib.suppress(OSError):
                tmp.unlink()
            # Remembered, so later candidates do not pay for a build that cannot succeed.
            atomic_write_text(folder / _FAILED, why or "compiler failed\n")
