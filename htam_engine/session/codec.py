"""Dataclass records <-> plain msgpack/JSON data: the one place records are serialized.

Two encodings of a dataclass, decoded by the same function:
  * positional (`encode(obj)`): a list of field values in field order; the field names are
    written once per class in the file's schema (`schema_of`). Compact and fast: a 2,000-step
    session is hundreds of thousands of records.
  * named (`encode(obj, named=True)`): a dict {field: value}; used for JSON output.
`decode(cls, data, schema)` accepts either. A positional record written with other field names
(a record that gained or lost fields since) is matched by name; fields missing from the data
take their defaults. Type hints drive decoding (enums, nested records, lists, optionals) and
primitive fields are type-checked, so data of the wrong shape raises CodecError.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from enum import Enum
from operator import attrgetter
from typing import Any, Callable

_Conv = Callable[[Any], Any]


class CodecError(ValueError):
    """Data that does not fit the record it is decoded into."""


_PRIMS: dict[Any, tuple[type, ...]] = {int: (int,), float: (float, int), str: (str,), bool: (bool,)}


@dataclasses.dataclass(slots=True)
class _Plan:
    cls: type
    names: tuple[str, ...]
    getter: Callable[[Any], Any]
    enc: list[tuple[int, _Conv]]  # fields needing conversion on encode
    dec: list[tuple[int, _Conv]]  # ... and on decode, with primitive type checks (named data)
    dec_fast: list[tuple[int, _Conv]]  # the same for positional data, where None passes through before
    required: frozenset[str]


_plans: dict[type, _Plan] = {}


def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
        return Any, True
    return tp, False


def _converters(tp: Any, none_test: bool = True) -> tuple[_Conv | None, _Conv | None]:
    """(encoder, decoder) for a field of type tp; None where the value passes through (Any).

    Every primitive is type-checked, in named and positional data alike: a session file whose
    model name was a boolean loaded, and `sessions show` crashed on it (the fuzz found it).
    none_test=False leaves out the None test of optionals, which the positional decoder does itself."""
    tp, optional = _unwrap_optional(tp)
    enc = dec = None
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        enc = _encode_dc
        dec = lambda v, _t=tp: _decode_dc(_t, v)  # noqa: E731
    elif isinstance(tp, type) and issubclass(tp, Enum):
        enc = lambda v: v.value  # noqa: E731
        dec = tp
    elif typing.get_origin(tp) is list:
        (item,) = typing.get_args(tp) or (Any,)
        ie, idc = _converters(item)
        if ie is not None or idc is not None:
            enc = (lambda v, _f=ie: [_f(x) for x in v]) if ie else None
            dec = (lambda v, _f=idc: [_f(x) for x in _check_list(v)]) if idc else _check_list
        else:
            dec = _check_list
    elif typing.get_origin(tp) is dict or tp is dict:
        dec = _check_dict
    elif tp in _PRIMS:
        ok = _PRIMS[tp]

        def dec(v: Any, _ok=ok, _tp=tp) -> Any:
            if not isinstance(v, _ok) or (_tp is int and isinstance(v, bool)):
                raise CodecError(f"expected {_tp.__name__}, got {type(v).__name__}")
            return v
    if optional and dec is not None and none_test:
        inner = dec
        dec = lambda v, _f=inner: None if v is None else _f(v)  # noqa: E731
    return enc, dec


def _check_list(v: Any) -> list:
    if not isinstance(v, list):
        raise CodecError(f"expected a list, got {type(v).__name__}")
    return v


def _check_dict(v: Any) -> dict:
    if not isinstance(v, dict):
        raise CodecError(f"expected a map, got {type(v).__name__}")
    return v


def plan(cls: type) -> _Plan:
    p = _plans.get(cls)
    if p is not None:
        return p
    hints = typing.get_type_hints(cls)
    fs = [f for f in dataclasses.fields(cls) if f.init]
    names = tuple(f.name for f in fs)
    enc, dec, fast = [], [], []
    for i, f in enumerate(fs):
        e, d = _converters(hints[f.name])
        if e is not None:
            enc.append((i, e))
        if d is not None:
            dec.append((i, d))
            fd = _converters(hints[f.name], none_test=False)[1]
            if fd is not None:
                fast.append((i, fd))
    required = frozenset(f.name for f in fs if f.default is dataclasses.MISSING
                         and f.default_factory is dataclasses.MISSING)
    getter = attrgetter(*names) if len(names) > 1 else (lambda o, _n=names[0]: (getattr(o, _n),))
    p = _Plan(cls, names, getter, enc, dec, fast, required)
    _plans[cls] = p
    return p


def _encode_dc(obj: Any) -> list:
    p = plan(type(obj))
    vals = list(p.getter(obj))
    for i, f in p.enc:
        v = vals[i]
        if v is not None:
            vals[i] = f(v)
    return vals


def encode(obj: Any, named: bool = False) -> Any:
    """Plain data for a record, a list/dict of records, or a plain value."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return to_plain(obj) if named else _encode_dc(obj)
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, (list, tuple)):
        return [encode(x, named) for x in obj]
    if isinstance(obj, dict):
        return {k: encode(v, named) for k, v in obj.items()}
    return obj


def to_plain(obj: Any) -> Any:
    """Named plain data (dicts with field names, enum values): JSON- and msgpack-able."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        p = plan(type(obj))
        return {n: to_plain(v) for n, v in zip(p.names, p.getter(obj))}
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, (list, tuple)):
        return [to_plain(x) for x in obj]
    if isinstance(obj, dict):
        return {k: to_plain(v) for k, v in obj.items()}
    return obj


# Decoding context: the stored schema of the data being decoded and, per record class, the
# decoder for that schema (built once per decode() call; nested records find it here).
_ctx: list[tuple[dict[str, list[str]] | None, dict[type, Callable[[list], Any]]]] = [(None, {})]


def _positional_decoder(cls: type, stored: tuple[str, ...]) -> Callable[[list], Any]:
    p = plan(cls)
    if stored == p.names:
        dec = p.dec_fast
        n = len(p.names)

        def fn(vals: list) -> Any:
            if type(vals) is not list or len(vals) != n:
                raise CodecError(f"{cls.__name__}: expected {n} fields")
            for i, f in dec:
                v = vals[i]
                if v is not None:
                    vals[i] = f(v)
            return cls(*vals)
    else:
        def fn(vals: list) -> Any:
            if type(vals) is not list or len(vals) != len(stored):
                raise CodecError(f"{cls.__name__}: expected {len(stored)} fields")
            return _decode_named(cls, dict(zip(stored, vals)))
    return fn


def _decode_named(cls: type, d: dict) -> Any:
    p = plan(cls)
    missing = p.required - d.keys()
    if missing:
        raise CodecError(f"{cls.__name__}: missing {', '.join(sorted(missing))}")
    kwargs = {}
    decs = dict(p.dec)
    for i, name in enumerate(p.names):
        if name in d:
            v = d[name]
            f = decs.get(i)
            kwargs[name] = f(v) if f is not None else v
    return cls(**kwargs)


def _decode_dc(cls: type, data: Any) -> Any:
    if type(data) is list:
        schema, fns = _ctx[-1]
        fn = fns.get(cls)
        if fn is None:
            stored = tuple(schema[cls.__name__]) if schema and cls.__name__ in schema else plan(cls).names
            fn = fns[cls] = _positional_decoder(cls, stored)
        return fn(data)
    if isinstance(data, dict):
        return _decode_named(cls, data)
    raise CodecError(f"{cls.__name__}: expected a record, got {type(data).__name__}")


def decode(cls: type, data: Any, schema: dict[str, list[str]] | None = None) -> Any:
    """A record of type cls from positional or named plain data (schema: stored field names)."""
    _ctx.append((schema, {}))
    try:
        return _decode_dc(cls, data)
    except CodecError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError) as exc:
        raise CodecError(f"{cls.__name__}: {type(exc).__name__}: {exc}") from None
    finally:
        _ctx.pop()


def schema_of(*classes: type) -> dict[str, list[str]]:
    """Field names of the classes and every record class reachable from them."""
    out: dict[str, list[str]] = {}
    todo = list(classes)
    while todo:
        cls = todo.pop()
        if cls.__name__ in out:
            continue
        p = plan(cls)
        out[cls.__name__] = list(p.names)
        for tp in typing.get_type_hints(cls).values():
            for t in _record_types(tp):
                todo.append(t)
    return out


def _record_types(tp: Any) -> list[type]:
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return [tp]
    return [t for a in typing.get_args(tp) for t in _record_types(a)]
