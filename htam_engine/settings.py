"""Every user-facing setting in one list: its config key, environment variable, type, default
and meaning; and the one way they are read.

Layers, each overriding the one before (the model settings of propose/config.py use the same):
1. the user file: `$HTAM_CONFIG`, else `$XDG_CONFIG_HOME/htam/config.toml`, else `~/.config/htam/config.toml`
2. the project file: `./htam.toml`
3. the environment (`HTAM_...`)
4. a command-line flag, where the command has one (the caller passes it to `value`)

In a file a setting lives in its table: `[paths] sessions_dir = "runs"`, `[evaluate] pch = false`.
`htam_engine/settings.py` is also what the README's table of settings is generated from
(`python3 -m htam_engine.settings` prints it; a test checks the README holds it).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from htam_engine.errors import InputError


@dataclass(frozen=True, slots=True)
class Setting:
    key: str  # name in its config table, and in `value(key)`
    table: str  # config.toml table ("" = environment only)
    env: str  # environment variable
    type: type
    default: Any
    help: str


SETTINGS: tuple[Setting, ...] = (
    Setting("config", "", "HTAM_CONFIG", str, "~/.config/htam/config.toml",
            "the user config file (environment only: it names the file the others are read from)"),
    Setting("sessions_dir", "paths", "HTAM_SESSIONS_DIR", str, "sessions", "where session files live"),
    Setting("bank", "paths", "HTAM_BANK", str, "", "the memory bank file (empty: memory.htgbank in the sessions folder)"),
    Setting("cache_dir", "paths", "HTAM_CACHE_DIR", str, "~/.cache/htam",
            "compiled extensions, candidate files and locks, shared by htam processes"),
    Setting("kernelbench", "paths", "HTAM_KERNELBENCH", str, "", "a KernelBench checkout (for `kernelbench:level1/...`)"),
    Setting("pch", "evaluate", "HTAM_PCH", bool, True, "build and use a shared precompiled torch/extension.h"),
    Setting("pch_after", "evaluate", "HTAM_PCH_AFTER", int, 2,
            "build it once a flag set has compiled this many distinct extensions"),
    Setting("gpu_check_slots", "evaluate", "HTAM_GPU_CHECK_SLOTS", int, 0,
            "units a GPU's memory is cut into, each evaluation taking as many as its inputs' size needs "
            "(0: one per 4 GiB left by the judges the pool put on the device, 4 GiB each, at most 32; "
            "N: at most N evaluations at once, "
            "1 one at a time)"),
    Setting("worker_wrapper", "evaluate", "HTAM_WORKER_WRAPPER", str, "",
            "a command prefix for the sandboxes candidates run in, e.g. bwrap (it wraps their zygote)"),
    Setting("worker_cpu_s", "evaluate", "HTAM_WORKER_CPU_S", int, 6 * 3600,
            "CPU seconds any one sandbox process may use (a backstop, not the timeout)"),
    Setting("sandbox_file_mb", "evaluate", "HTAM_SANDBOX_FILE_MB", int, 4096,
            "largest file a sandbox process (a candidate, its compiler) may write, in MB (0: no limit)"),
    Setting("sandbox_confine_writes", "evaluate", "HTAM_SANDBOX_CONFINE_WRITES", bool, True,
            "a sandbox writes only beneath its own folders (Linux Landlock; off: wherever its user may)"),
    Setting("debug", "cli", "HTAM_DEBUG", bool, False, "print tracebacks instead of one-line errors"),
    Setting("model", "model", "HTAM_MODEL", str, "gpt-4o-mini", "model name at the endpoint"),
    Setting("base_url", "model", "HTAM_BASE_URL", str, "", "OpenAI-compatible endpoint (also OPENAI_BASE_URL)"),
    Setting("api_key_env", "model", "HTAM_API_KEY_ENV", str, "OPENAI_API_KEY",
            "the environment variable holding the API key (the key is never read from a file)"),
    Setting("temperature", "model", "HTAM_TEMPERATURE", float, 0.2, "sampling temperature"),
    Setting("max_tokens", "model", "HTAM_MAX_TOKENS", int, 8192, "most tokens per reply"),
    Setting("timeout_s", "model", "HTAM_TIMEOUT", float, 300.0, "seconds allowed per model request"),
    Setting("retries", "model", "HTAM_RETRIES", int, 4, "retries after a failed model request"),
)

BY_KEY: dict[str, Setting] = {s.key: s for s in SETTINGS}
# Variables htam sets for its own worker processes (not settings a person gives).
INTERNAL_ENV = ("HTAM_WORKER_FDS", "HTAM_WORKER_DEVICE", "HTAM_WORKER_LOCK", "HTAM_WORKER_CPU_THREADS",
                "HTAM_WORKER_AS_MB", "HTAM_WORKER_FILE_MB", "HTAM_ZYGOTE_FD", "HTAM_JUDGES_ON_DEVICE",
                "HTAM_PRIVATE_COMPILE_ROOT", "HTAM_SANDBOX_CONFINED")
# Diagnostics, read where they act and never part of a verdict (README, "Diagnosing the judge"):
# a file every sandbox appends the phases of each call to, and a folder a judge writes its CUDA
# allocator history to, one snapshot per evaluation.
SANDBOX_TRACE_ENV = "HTAM_SANDBOX_TRACE"
JUDGE_MEMORY_HISTORY_ENV = "HTAM_JUDGE_MEMORY_HISTORY"
DIAGNOSTIC_ENV = (SANDBOX_TRACE_ENV, JUDGE_MEMORY_HISTORY_ENV)
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


def user_config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("HTAM_CONFIG"):
        return Path(env["HTAM_CONFIG"]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "htam" / "config.toml"


def project_config_path(cwd: str | Path | None = None) -> Path:
    return Path(cwd or os.getcwd()) / "htam.toml"


_parsed: dict[Path, tuple[tuple[int, int], dict[str, Any]]] = {}


def read_toml(path: Path) -> dict[str, Any]:
    """A config file's tables ({} when there is no file); InputError naming the file (and line)."""
    try:
        st = path.stat()
    except OSError:
        return {}
    stamp = (st.st_mtime_ns, st.st_size)
    kept = _parsed.get(path)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:  # its message names line and column
        raise InputError(f"{path}: bad TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    _parsed[path] = (stamp, doc)
    return doc


def coerce(setting: Setting, raw: Any, where: str) -> Any:
    """`raw` (a file's value or an environment string) as the setting's type; InputError otherwise."""
    try:
        if setting.type is bool:
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in _TRUE or text in _FALSE:
                return text in _TRUE
            raise ValueError(raw)
        if setting.type in (int, float) and isinstance(raw, bool):
            raise ValueError(raw)
        return setting.type(raw)
    except (TypeError, ValueError):
        raise InputError(f"{where}: {setting.key} must be {setting.type.__name__}, got {raw!r}") from None


def value(key: str, flag: Any = None, *, env: Mapping[str, str] | None = None, cwd: str | Path | None = None) -> Any:
    """The effective value of setting `key`: the flag when given (not None), else the
    environment, else the project file, else the user file, else the default."""
    setting = BY_KEY[key]
    if flag is not None:
        return flag
    env = os.environ if env is None else env
    if setting.env in env:
        if env[setting.env] != "" or setting.type is bool:
            return coerce(setting, env[setting.env], f"environment variable {setting.env}")
    if setting.table:
        for path in (project_config_path(cwd), user_config_path(env)):
            table = read_toml(path).get(setting.table, {})
            if isinstance(table, dict) and key in table:
                return coerce(setting, table[key], f"{path}: [{setting.table}]")
    return setting.default


def check(*, env: Mapping[str, str] | None = None, cwd: str | Path | None = None) -> None:
    """Read both config files once and refuse (InputError, exit 2) an unknown key or a value of
    the wrong type in the tables listed here, so a typo is said before anything runs."""
    env = os.environ if env is None else env
    tables = {s.table for s in SETTINGS if s.table and s.table != "model"}  # [model]: propose/config.py
    for path in (user_config_path(env), project_config_path(cwd)):
        doc = read_toml(path)
        for table in tables & set(doc):
            section = doc[table]
            if not isinstance(section, dict):
                raise InputError(f"{path}: [{table}] must be a table")
            for key, raw in section.items():
                setting = BY_KEY.get(key)
                if setting is None or setting.table != table:
                    known = ", ".join(s.key for s in SETTINGS if s.table == table)
                    raise InputError(f"{path}: [{table}] has no setting {key!r} (known: {known})")
                coerce(setting, raw, f"{path}: [{table}]")


def path_value(key: str, flag: Any = None) -> Path:
    return Path(str(value(key, flag))).expanduser()


# ---- accessors of the settings the evaluation reads (evaluate/ switches to these) -----------
def cache_dir() -> Path:
    return path_value("cache_dir")


def pch_enabled() -> bool:
    return bool(value("pch"))


def pch_after() -> int:
    return max(1, int(value("pch_after")))


def gpu_check_slots() -> int | None:
    """The units of GPU memory a person chose (devicelock.py: N units of a GPU's usable memory, so
    at most N evaluations hold state on it at once), or None to size them from the GPU's memory."""
    slots = int(value("gpu_check_slots"))
    return max(1, slots) if slots > 0 else None


def worker_wrapper() -> str:
    return str(value("worker_wrapper"))


def worker_cpu_s() -> int:
    return int(value("worker_cpu_s"))


def sandbox_file_mb() -> int | None:
    """The largest file a sandbox may write (MB), or None for no limit."""
    mb = int(value("sandbox_file_mb"))
    return mb if mb > 0 else None


def sandbox_confine_writes() -> bool:
    return bool(value("sandbox_confine_writes"))


def debug() -> bool:
    return bool(value("debug"))


def environment() -> dict[str, str]:
    """The resolved settings as environment variables, for child processes (workers), which
    read the environment: a value set in a config file reaches them too."""
    out = {}
    for s in SETTINGS:
        if s.table and s.table != "model":
            v = value(s.key)
            out[s.env] = ("1" if v else "0") if s.type is bool else str(v)
    return out


def markdown_table() -> str:
    """The README's table of settings."""
    rows = ["| config.toml | environment | default | meaning |", "|---|---|---|---|"]
    for s in SETTINGS:
        key = f"`[{s.table}] {s.key}`" if s.table else "-"
        default = ("true" if s.default else "false") if s.type is bool else (str(s.default) or "(empty)")
        rows.append(f"| {key} | `{s.env}` | {default} | {s.help} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
