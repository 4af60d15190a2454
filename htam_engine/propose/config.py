"""Settings from TOML files, the environment and command-line flags, in that order.

Layers, each overriding the one before:
1. the user file: `$HTAM_CONFIG`, else `$XDG_CONFIG_HOME/htam/config.toml`, else `~/.config/htam/config.toml`
2. the project file: `./htam.toml`
3. the environment: `OPENAI_API_KEY` (or the variable `api_key_env` names), `OPENAI_BASE_URL`,
   and the `[model]` settings' variables listed in htam_engine/settings.py (`HTAM_MODEL`, ...)
4. command-line flags: `add_model_arguments(parser)` adds them; pass the parsed namespace (or a
   dict of ModelSettings field names) to `load_config`; None = not given.

File layout::

    [model]
    name = "gpt-4o"                 # or `model = ...`
    base_url = "http://127.0.0.1:8000/v1"
    api_key_env = "OPENAI_API_KEY"  # the key itself never goes in a file
    temperature = 0.2
    [prices."my-local-model"]       # USD per 1M tokens
    input = 0.0
    output = 0.0
    [ui]
    refresh_hz = 10
    [keys]
    approve = "a"                   # binding id -> key

The API key is held in a `Secret`, which prints masked and is left out of `to_dict()`.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from htam_engine import settings
from htam_engine.errors import InputError
from htam_engine.propose.pricing import Price, PriceTable, parse_prices
from htam_engine.propose.redact import MASK, redact, register_secret


class Secret:
    """A value that never shows itself: str/repr are masked; `reveal()` gives it to the client."""

    __slots__ = ("_value",)

    def __init__(self, value: str = ""):
        self._value = value
        register_secret(value)

    def reveal(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return f"Secret({MASK if self._value else ''})"

    __str__ = __repr__

    def __deepcopy__(self, memo: dict) -> "Secret":
        return self

    def __reduce__(self) -> Any:  # pickling would write the key to disk or a pipe
        raise TypeError("an API key cannot be serialised")


@dataclass(slots=True)
class ModelSettings:
    model: str = "gpt-4o-mini"
    base_url: str = ""  # empty: the openai package's default (OpenAI itself)
    api_key_env: str = "OPENAI_API_KEY"  # which environment variable holds the key
    api_key: Secret = field(default_factory=Secret, repr=False, compare=False)
    timeout_s: float = 300.0  # until a stream starts, or for a whole reply when not streaming
    connect_timeout_s: float = 10.0
    stall_timeout_s: float = 60.0  # longest silence allowed in the middle of a stream
    retries: int = 4  # attempts after the first one
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    max_tokens: int = 8192
    temperature: float = 0.2
    stream: bool = True
    reflect: bool = True
    max_prompt_chars: int = 48_000  # prompt bound; the contract and the problem are never trimmed
    prices: dict[str, Price] = field(default_factory=dict)  # user's [prices] entries

    def price_table(self) -> PriceTable:
        return PriceTable(self.prices)

    def to_dict(self) -> dict[str, Any]:
        """Everything but the key (sessions and `--json` output may hold this)."""
        d: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "api_key":
                continue
            v = getattr(self, f.name)
            if f.name == "prices":
                v = {k: [p.input_per_m, p.output_per_m] for k, p in v.items()}
            elif f.name == "base_url":
                v = redact(v)  # a URL may carry credentials (user:password@host, ?api-key=)
            d[f.name] = v
        d["has_api_key"] = bool(self.api_key)
        return d


@dataclass(slots=True)
class Config:
    model: ModelSettings = field(default_factory=ModelSettings)
    ui: dict[str, Any] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)  # binding id -> key
    sources: list[str] = field(default_factory=list)  # files that were read, in order


# Settings a file or flag may set, with the type each must have.
_TYPES: dict[str, type] = {
    f.name: type(f.default) for f in fields(ModelSettings) if f.name not in ("api_key", "prices")
}
_FILE_ALIASES = {"name": "model"}

# Environment variable -> ModelSettings field, in the order they apply: the [model] settings of
# htam_engine/settings.py (the one list), after OPENAI_BASE_URL (HTAM_BASE_URL wins: htam-specific).
_ENV: list[tuple[str, str]] = [("OPENAI_BASE_URL", "base_url")] + [
    (s.env, s.key) for s in settings.SETTINGS if s.table == "model"
]


# Command-line flags: dest -> (flag, ModelSettings field, type, help). Dests are distinct from
# run options (`--timeout` there is the evaluation's), so a whole run namespace can be passed.
CLI_FLAGS: dict[str, tuple[str, str, type, str]] = {
    "model": ("--model", "model", str, "model name at the endpoint (env HTAM_MODEL)"),
    "base_url": ("--base-url", "base_url", str, "OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (env HTAM_BASE_URL)"),
    "api_key_env": ("--api-key-env", "api_key_env", str, "environment variable holding the API key (default OPENAI_API_KEY)"),
    "temperature": ("--temperature", "temperature", float, "sampling temperature (env HTAM_TEMPERATURE)"),
    "max_tokens": ("--max-tokens", "max_tokens", int, "most tokens per reply (env HTAM_MAX_TOKENS)"),
    "model_timeout": ("--model-timeout", "timeout_s", float, "seconds allowed per model request (env HTAM_TIMEOUT)"),
    "model_retries": ("--model-retries", "retries", int, "retries after a failed model request (env HTAM_RETRIES)"),
}


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The model settings as command-line flags (for `htam run`, `htam batch`, the app)."""
    group = parser.add_argument_group("model endpoint")
    for dest, (flag, _field, typ, text) in CLI_FLAGS.items():
        group.add_argument(flag, dest=dest, type=typ, default=None, help=text)


def load_config(
    overrides: Mapping[str, Any] | argparse.Namespace | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    user_file: str | Path | None = None,
    project_file: str | Path | None = None,
) -> Config:
    """The effective configuration. Bad files raise InputError naming the file (and line)."""
    env = os.environ if env is None else env
    cfg = Config()
    values: dict[str, Any] = {}
    for path in (Path(user_file) if user_file else settings.user_config_path(env),
                 Path(project_file) if project_file else settings.project_config_path(cwd)):
        if path.is_file():
            _apply_file(cfg, values, path)
            cfg.sources.append(str(path))
    for var, name in _ENV:
        if env.get(var, "") != "":
            values[name] = _coerce(name, env[var], f"environment variable {var}")
    for name, value in _overrides_dict(overrides).items():
        values[name] = _coerce(name, value, f"option {_flag_of(name)}")
    for name, value in values.items():
        setattr(cfg.model, name, value)
    cfg.model.api_key = Secret(env.get(cfg.model.api_key_env, ""))
    return cfg


def has_endpoint(config: Config) -> bool:
    """A model endpoint is configured: a base URL (local servers need no key) or an API key."""
    return bool(config.model.base_url) or bool(config.model.api_key)


def _overrides_dict(overrides: Mapping[str, Any] | argparse.Namespace | None) -> dict[str, Any]:
    """Field -> value from a dict of field names or a namespace holding CLI_FLAGS dests."""
    if overrides is None:
        return {}
    if isinstance(overrides, argparse.Namespace):
        ns = vars(overrides)
        raw = {field: ns.get(dest) for dest, (_flag, field, _t, _h) in CLI_FLAGS.items()}
    else:
        raw = dict(overrides)
    return {k: v for k, v in raw.items() if v is not None}


def _flag_of(name: str) -> str:
    return next((flag for flag, field, _t, _h in CLI_FLAGS.values() if field == name), name)


def _apply_file(cfg: Config, values: dict[str, Any], path: Path) -> None:
    doc = settings.read_toml(path)
    model = doc.get("model", {})
    if not isinstance(model, dict):
        raise InputError(f"{path}: [model] must be a table")
    for key, value in model.items():
        name = _FILE_ALIASES.get(key, key)
        if name == "api_key":
            raise InputError(f"{path}: the API key does not belong in a file; set api_key_env to the variable holding it")
        values[name] = _coerce(name, value, f"{path}: model.{key}")
    try:
        cfg.model.prices.update(parse_prices(doc.get("prices", {}), str(path)))
    except ValueError as exc:
        raise InputError(str(exc)) from None
    for table, target in (("ui", cfg.ui), ("keys", cfg.keys)):
        section = doc.get(table, {})
        if not isinstance(section, dict):
            raise InputError(f"{path}: [{table}] must be a table")
        if table == "keys" and any(not isinstance(v, str) for v in section.values()):
            raise InputError(f"{path}: every entry of [keys] must be a string (a key name)")
        target.update(section)


def _coerce(name: str, value: Any, where: str) -> Any:
    """`value` as the type setting `name` holds; InputError naming `where` otherwise."""
    typ = _TYPES.get(name)
    if typ is None:
        raise InputError(f"{where}: unknown setting {name!r} (known: {', '.join(sorted(_TYPES))})")
    try:
        if typ is bool:
            if isinstance(value, str):
                if value.lower() not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                    raise ValueError(value)
                return value.lower() in ("1", "true", "yes", "on")
            if not isinstance(value, bool):
                raise ValueError(value)
            return value
        if typ in (int, float) and isinstance(value, bool):
            raise ValueError(value)
        out = typ(value)
    except (TypeError, ValueError):
        raise InputError(f"{where}: expected {typ.__name__}, got {value!r}") from None
    if typ in (int, float) and out < 0:
        raise InputError(f"{where}: must not be negative")
    return out
