"""Type checks of the HTG's plain data (graph.to_data's layout) before anything is built from it.

A bank or session file can hold well-formed msgpack with the wrong types inside; checking
here turns that into one clear error at load time instead of a fault during a later selection.
"""

from __future__ import annotations

from typing import Any

NUM = (int, float)


class DataCheckError(ValueError):
    pass


def _is_num(v: Any) -> bool:
    return isinstance(v, NUM) and not isinstance(v, bool)


def _col(table: Any, name: str, where: str) -> list:
    if not isinstance(table, dict) or not isinstance(table.get(name), list):
        raise DataCheckError(f"{where}.{name} is not a list")
    return table[name]


def _all(values: list, pred, what: str) -> None:
    for i, v in enumerate(values):
        if not pred(v):
            raise DataCheckError(f"{what}[{i}] has the wrong type ({type(v).__name__})")


def _all_of(values: list, types: frozenset[type], what: str) -> None:
    """Every value's exact type is in types (one C-level pass: long columns stay cheap)."""
    if not set(map(type, values)) <= types:
        _all(values, lambda v: type(v) in types, what)


STR = frozenset({str})
NUMS = frozenset({int, float})


def _str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _prior(p: Any) -> bool:
    if not isinstance(p, dict):
        return False
    for k, v in p.items():
        if not isinstance(k, str):
            return False
        if isinstance(v, dict):
            if not all(isinstance(a, str) and _is_num(b) for a, b in v.items()):
                return False
        elif not _is_num(v):
            return False
    return True


def _ctx(c: Any) -> bool:
    return isinstance(c, dict) and all(
        isinstance(k, str) and isinstance(v, list) and len(v) == 3 and all(_is_num(x) for x in v) for k, v in c.items())


def _uses(u: Any) -> bool:
    return isinstance(u, list) and all(isinstance(x, list) and len(x) == 3 and _is_num(x[1]) and _is_num(x[2])
                                       for x in u)


def _notes(ns: Any) -> bool:
    return isinstance(ns, list) and all(isinstance(n, dict) and all(isinstance(k, str) for k in n) for n in ns)


def check_data(d: Any, schema: int) -> None:
    """Raise DataCheckError naming the first field of the wrong type."""
    if not isinstance(d, dict) or d.get("schema") != schema:
        got = d.get("schema") if isinstance(d, dict) else type(d).__name__
        raise DataCheckError(f"memory data schema {got!r} is not {schema}")
    dirs = d.get("directions")
    ids = _col(dirs, "id", "directions")
    for name in ("title", "description", "source"):
        _all_of(_col(dirs, name, "directions"), STR, f"directions.{name}")
    _all_of(ids, STR, "directions.id")
    _all(_col(dirs, "prior", "directions"), _prior, "directions.prior")
    st = d.get("strategies")
    checks = {
        "id": STR, "direction": STR, "title": STR, "description": STR, "pitfalls": STR,
        "template": frozenset({str, type(None)}), "families": _str_list, "backends": _str_list,
        "states": _str_list, "source": STR, "tries": NUMS, "successes": NUMS, "gain_sum": NUMS, "ctx": _ctx,
        "last_used": NUMS, "uses": _uses,
    }
    n = None
    for name, pred in checks.items():
        if name not in ("id", "direction", "title", "description") and (not isinstance(st, dict) or name not in st):
            continue  # optional columns take defaults
        col = _col(st, name, "strategies")
        if n is not None and len(col) != n:
            raise DataCheckError(f"strategies.{name} has {len(col)} rows, not {n}")
        n = len(col)
        if isinstance(pred, frozenset):
            _all_of(col, pred, f"strategies.{name}")
        else:
            _all(col, pred, f"strategies.{name}")
    edges = d.get("edges")
    efrom = _col(edges, "from", "edges")
    for name, pred in (("from", lambda v: isinstance(v, str)), ("to", lambda v: isinstance(v, str)),
                       ("prior", _is_num), ("notes", _notes)):
        col = _col(edges, name, "edges")
        if len(col) != len(efrom):
            raise DataCheckError(f"edges.{name} has {len(col)} rows, not {len(efrom)}")
        _all(col, pred, f"edges.{name}")
    buckets = d.get("buckets")
    if not isinstance(buckets, list) or not all(isinstance(b, str) for b in buckets):
        raise DataCheckError("buckets is not a list of strings")
    tr = d.get("transitions")
    tfrom = _col(tr, "from", "transitions")
    nb = len(buckets)
    for name, types in (("from", STR), ("to", STR), ("bucket", frozenset({int})), ("n", NUMS), ("succ", NUMS),
                        ("sum", NUMS), ("sq", NUMS)):
        col = _col(tr, name, "transitions")
        if len(col) != len(tfrom):
            raise DataCheckError(f"transitions.{name} has {len(col)} rows, not {len(tfrom)}")
        _all_of(col, types, f"transitions.{name}")
    bix = tr["bucket"]
    if bix and not (0 <= min(bix) and max(bix) < nb):
        raise DataCheckError("transitions.bucket refers to a bucket that is not there")
    merged = d.get("merged", {})
    if not isinstance(merged, dict) or not all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(x, int) for x in v) for k, v in merged.items()):
        raise DataCheckError("merged is not a map of session id to steps")
