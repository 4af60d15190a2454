"""The Hierarchical Transition Graph (HTG): one networkx DiGraph, two levels of nodes.

Schema
------
Nodes (id -> attributes):
  * direction ``"memory_access"``: kind="direction", title, description, prior (the state prior:
    {"base": x, "status": {...}, "family": {...}, "bottleneck": {...}}), source.
  * strategy ``"<direction>/<slug>"``: kind="strategy", direction, title, description, pitfalls,
    template (offline template id or None), families / backends / states (applicability; empty =
    any), source ("seed" | "learned"), tries, successes, gain_sum (sum of rewards), ctx
    ({"family|backend": [tries, successes, gain_sum]}), last_used (unix time), uses (the last
    USES_KEPT [session, step, reward] records).
  * ``START`` ("_start"): kind="start", the virtual predecessor of a session's first step.
Edges:
  * direction -> strategy: kind="member".
  * direction -> direction (or START -> direction): kind="transition", with
    stats {state bucket key: [count, successes, reward_sum, reward_sq_sum]}, prior (expert
    value of the move), notes [{"when","why","risk","source","session","step"}], and agg, a cache
    of stats summed at coarser state levels (see levels()) so an edge's value in a state is O(1).

Storage (to_data/from_data) is columnar plain data for msgpack: one list per attribute, and the
transition statistics as one row per (edge, bucket) with interned bucket strings. Loading a
bank of 10,000 strategies and 100,000 transition records takes a fraction of a second.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any, Iterable

import networkx as nx

from htam_engine.memory.check import DataCheckError, check_data
from htam_engine.memory.types import StrategyView, TransitionNote, TransitionRow

START = "_start"
USES_KEPT = 20
DATA_SCHEMA = 2


class MemoryDataError(ValueError):
    """Bad memory data or an unknown direction/strategy id."""


def levels(bucket: str) -> tuple[str, str, str, str]:
    """State levels of a bucket key, finest first: full key, "status|family", "family", "*"."""
    parts = bucket.split("|")
    if len(parts) < 2:
        return bucket, bucket, bucket, "*"
    return bucket, f"{parts[0]}|{parts[1]}", parts[1], "*"


def slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    return s[:60] or "strategy"


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2)


_STRATEGY_COLUMNS = (
    "id", "direction", "title", "description", "pitfalls", "template", "families", "backends",
    "states", "source", "tries", "successes", "gain_sum", "ctx", "last_used", "uses",
)
_MUTABLE_COLUMNS = ("families", "backends", "states", "ctx", "uses")
_STRATEGY_DEFAULTS: dict[str, Any] = {
    "pitfalls": "", "template": None, "families": [], "backends": [], "states": [], "source": "learned",
    "tries": 0, "successes": 0, "gain_sum": 0.0, "ctx": {}, "last_used": 0.0, "uses": [],
}


def _fresh(v: Any) -> Any:
    """A copy of a mutable attribute value, so snapshots never alias the live graph."""
    if isinstance(v, list):
        return [list(x) if isinstance(x, list) else x for x in v]
    if isinstance(v, dict):
        return {k: (list(x) if isinstance(x, list) else dict(x) if isinstance(x, dict) else x) for k, x in v.items()}
    return v


def _accumulate(e: dict, bucket: str, lv: tuple[str, ...], n: int, succ: int, rs: float, rq: float) -> None:
    """Add one experience record to a transition edge's bucket stats and level aggregates."""
    st = e["stats"].get(bucket)
    if st is None:
        e["stats"][bucket] = [n, succ, rs, rq]
    else:
        st[0] += n
        st[1] += succ
        st[2] += rs
        st[3] += rq
    agg = e["agg"]
    for level in lv:
        x = agg.get(level)
        if x is None:
            agg[level] = [n, succ, rs]
        else:
            x[0] += n
            x[1] += succ
            x[2] += rs


class HTG:
    """Two-level memory of optimization experience (see the module docstring for the schema)."""

    def __init__(self) -> None:
        self.g: nx.DiGraph = nx.DiGraph()
        self.g.add_node(START, kind="start", title="session start")
        self._directions: list[str] = []
        self._members: dict[str, list[str]] = {}  # direction -> strategy ids, insertion order
        # session id -> sorted steps whose deltas this graph holds (merge bookkeeping)
        self.merged: dict[str, list[int]] = {}
        # (direction, family) -> attribute maps of its strategies meant for that family; a strategy's
        # families are fixed when it is added, so only adding a strategy changes the index
        self._family_index: dict[tuple[str, str], list[dict]] = {}

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def seed(cls) -> "HTG":
        """The shipped seed schema: directions, strategies and prior transition notes."""
        text = resources.files("htam_engine.memory").joinpath("seed.json").read_text()
        doc = json.loads(text)
        h = cls()
        for d in doc["directions"]:
            h.add_direction(d["id"], d["title"], d["description"], d.get("prior") or {}, source="seed")
        for s in doc["strategies"]:
            h.add_strategy(s["direction"], s["title"], s["description"], s.get("pitfalls", ""),
                           s.get("template"), source="seed", families=s.get("families", ()),
                           backends=s.get("backends", ()), states=s.get("states", ()))
        for n in doc["notes"]:
            sources = [START, *h._directions] if n["from"] == "*" else [n["from"]]
            for f in sources:
                e = h.ensure_edge(f, n["to"])
                e["prior"] = float(n.get("value", 0.0))
                e["notes"].append({"when": n.get("when", ""), "why": n.get("why", ""), "risk": n.get("risk", ""),
                                   "source": "prior", "session": "", "step": 0})
        return h

    def add_direction(self, id: str, title: str, description: str, prior: dict | None = None,
                      source: str = "learned") -> str:
        if "/" in id or id == START or not id:
            raise MemoryDataError(f"bad direction id {id!r}")
        if id not in self._members:
            self.g.add_node(id, kind="direction", title=title, description=description,
                            prior=dict(prior or {}), source=source)
            self._directions.append(id)
            self._members[id] = []
        return id

    def add_strategy(self, direction: str, title: str, description: str, pitfalls: str = "",
                     template: str | None = None, source: str = "learned", *,
                     families: Iterable[str] = (), backends: Iterable[str] = (), states: Iterable[str] = (),
                     id: str | None = None) -> str:
        """Add a local strategy under a direction; a near-duplicate returns the existing id."""
        if direction not in self._members:
            raise MemoryDataError(f"unknown direction {direction!r}")
        sid = id or f"{direction}/{slug(title)}"
        if sid in self.g:
            return sid
        if id is None:
            dup = self._near_duplicate(direction, title, description)
            if dup is not None:
                return dup
        self.g.add_node(sid, kind="strategy", direction=direction, title=title, description=description,
                        pitfalls=pitfalls, template=template, families=list(families), backends=list(backends),
                        states=list(states), source=source, tries=0, successes=0, gain_sum=0.0, ctx={},
                        last_used=0.0, uses=[])
        self.g.add_edge(direction, sid, kind="member")
        self._members[direction].append(sid)
        self._family_index.clear()
        return sid

    def set_strategy_families(self, id: str, families: Iterable[str]) -> None:
        """Change the families a strategy is meant for (a seed upgrade narrows a move to where it applies)."""
        self.strategy_attrs(id)["families"] = list(families)
        self._family_index.clear()

    def _near_duplicate(self, direction: str, title: str, description: str) -> str | None:
        """Same normalized title, or descriptions sharing >= 80 % of their words (Jaccard)."""
        t, words = slug(title), _words(description)
        for sid in self._members[direction]:
            a = self.g.nodes[sid]
            if slug(a["title"]) == t:
                return sid
            other = _words(a["description"])
            if words and other and len(words & other) / len(words | other) >= 0.8:
                return sid
        return None

    def ensure_edge(self, a: str, b: str) -> dict:
        """The transition edge a -> b (its attribute map), created empty on first use."""
        if b not in self._members or (a != START and a not in self._members):
            raise MemoryDataError(f"unknown transition {a!r} -> {b!r}")
        if not self.g.has_edge(a, b):
            self.g.add_edge(a, b, kind="transition", stats={}, agg={}, prior=0.0, notes=[])
        return self.g.edges[a, b]

    def add_transition(self, a: str, b: str, bucket: str, n: int, succ: int, rsum: float, rsq: float) -> None:
        """Add experience to edge a -> b in a state bucket (counts add up)."""
        _accumulate(self.ensure_edge(a, b), bucket, levels(bucket), n, succ, rsum, rsq)

    def _load_transitions(self, tr: dict[str, list], buckets: list[str]) -> None:
        """Bulk add_transition for from_data: one edge lookup per edge, levels once per bucket."""
        lv = [levels(b) for b in buckets]
        edge_of: dict[tuple[str, str], dict] = {}
        for a, b, bi, n, succ, rs, rq in zip(tr["from"], tr["to"], tr["bucket"], tr["n"], tr["succ"], tr["sum"],
                                             tr["sq"], strict=True):
            e = edge_of.get((a, b))
            if e is None:
                e = edge_of[(a, b)] = self.ensure_edge(a, b)
            _accumulate(e, buckets[bi], lv[bi], n, succ, rs, rq)

    def add_note(self, a: str, b: str, note: dict) -> None:
        self.ensure_edge(a, b)["notes"].append(dict(note))

    # ---- queries ------------------------------------------------------------------------
    def directions(self) -> list[str]:
        return list(self._directions)

    def direction_info(self, id: str) -> dict:
        if id not in self._members:
            raise MemoryDataError(f"unknown direction {id!r}")
        return self.g.nodes[id]

    def has_strategy(self, id: str) -> bool:
        return id in self.g and self.g.nodes[id].get("kind") == "strategy"

    def strategy_ids(self, direction: str | None = None) -> list[str]:
        if direction is None:
            return [s for d in self._directions for s in self._members[d]]
        if direction not in self._members:
            raise MemoryDataError(f"unknown direction {direction!r}")
        return list(self._members[direction])

    def members_for_family(self, direction: str, family: str) -> list[dict]:
        """The attribute maps of a direction's strategies that list this family or none, in order
        (indexed: selection scores them on every step, and a bank holds thousands)."""
        key = (direction, family)
        found = self._family_index.get(key)
        if found is None:
            if direction not in self._members:
                raise MemoryDataError(f"unknown direction {direction!r}")
            nodes = self.g._node  # networkx's node-attribute dict (NodeView lookups cost more)
            found = [a for a in (nodes[s] for s in self._members[direction])
                     if not a["families"] or family in a["families"]]
            self._family_index[key] = found
        return found

    def strategy_attrs(self, id: str) -> dict:
        if not self.has_strategy(id):
            raise MemoryDataError(f"unknown strategy {id!r}")
        return self.g.nodes[id]

    def strategy(self, id: str) -> StrategyView:
        return self.view(id)

    def view(self, id: str, fit: float = 0.0, score: float = 0.0) -> StrategyView:
        a = self.strategy_attrs(id)
        tries = a["tries"]
        return StrategyView(id=id, direction=a["direction"], title=a["title"], description=a["description"],
                            pitfalls=a["pitfalls"], template=a["template"], tries=tries, successes=a["successes"],
                            mean_gain=a["gain_sum"] / tries if tries else 0.0, fit=fit, score=score)

    def strategies(self, direction: str | None = None) -> list[StrategyView]:
        return [self.view(s) for s in self.strategy_ids(direction)]

    def uses(self, id: str) -> list[tuple[str, int, float]]:
        """Where a strategy was used last (session id, step, reward), oldest first."""
        return [(u[0], int(u[1]), float(u[2])) for u in self.strategy_attrs(id)["uses"]]

    def edge(self, a: str, b: str) -> dict | None:
        """The transition edge's attributes, or None when there is no experience or prior."""
        d = self.g.get_edge_data(a, b)
        return d if d is not None and d.get("kind") == "transition" else None

    def notes(self, a: str, b: str) -> list[TransitionNote]:
        e = self.edge(a, b)
        if e is None:
            return []
        return [TransitionNote(from_direction=a, to_direction=b, when=n.get("when", ""), why=n.get("why", ""),
                               risk=n.get("risk", ""), source=n.get("source", "prior")) for n in e["notes"]]

    def transitions(self, direction: str) -> list[TransitionRow]:
        """Incoming and outgoing transition edges of a direction (the memory browser's table)."""
        if direction not in self._members:
            raise MemoryDataError(f"unknown direction {direction!r}")
        rows = []
        pairs = [(a, direction) for a in self.g.predecessors(direction)] + [
            (direction, b) for b in self.g.successors(direction) if b != direction]
        for a, b in pairs:
            e = self.edge(a, b)
            if e is None:
                continue
            tot = e["agg"].get("*", [0, 0, 0.0])
            rows.append(TransitionRow(from_direction=a, to_direction=b, count=int(tot[0]), successes=int(tot[1]),
                                      mean_reward=tot[2] / tot[0] if tot[0] else 0.0, prior_value=e["prior"],
                                      buckets=len(e["stats"]), notes=self.notes(a, b)))
        return rows

    def transition_edges(self) -> Iterable[tuple[str, str, dict]]:
        for a, b, e in self.g.edges(data=True):
            if e.get("kind") == "transition":
                yield a, b, e

    def counts(self) -> dict[str, int]:
        edges = list(self.transition_edges())
        return {
            "directions": len(self._directions),
            "strategies": sum(len(v) for v in self._members.values()),
            "transition_edges": len(edges),
            "transition_records": sum(len(e["stats"]) for _, _, e in edges),
            "experience": int(sum(e["agg"].get("*", [0])[0] for _, _, e in edges)),
            "notes": sum(len(e["notes"]) for _, _, e in edges),
            "sessions_merged": len(self.merged),
        }

    # ---- plain data ---------------------------------------------------------------------
    def to_data(self, *, copy: bool = True) -> dict[str, Any]:
        """Columnar plain data; copy=False shares mutable values with the graph (pack it at once)."""
        fresh = _fresh if copy else (lambda v: v)
        dirs = {"id": [], "title": [], "description": [], "prior": [], "source": []}
        for d in self._directions:
            a = self.g.nodes[d]
            dirs["id"].append(d)
            for c in ("title", "description", "prior", "source"):
                dirs[c].append(fresh(a[c]))
        cols: dict[str, list] = {c: [] for c in _STRATEGY_COLUMNS}
        nodes = self.g.nodes
        for sid in self.strategy_ids():
            a = nodes[sid]
            cols["id"].append(sid)
            for c in _STRATEGY_COLUMNS[1:]:
                cols[c].append(fresh(a[c]))
        bucket_ix: dict[str, int] = {}
        tr = {"from": [], "to": [], "bucket": [], "n": [], "succ": [], "sum": [], "sq": []}
        edges = {"from": [], "to": [], "prior": [], "notes": []}
        for a, b, e in self.transition_edges():
            edges["from"].append(a)
            edges["to"].append(b)
            edges["prior"].append(e["prior"])
            edges["notes"].append([dict(x) for x in e["notes"]] if copy else e["notes"])
            for bucket, (n, s, rs, rq) in e["stats"].items():
                ix = bucket_ix.setdefault(bucket, len(bucket_ix))
                tr["from"].append(a)
                tr["to"].append(b)
                tr["bucket"].append(ix)
                tr["n"].append(n)
                tr["succ"].append(s)
                tr["sum"].append(rs)
                tr["sq"].append(rq)
        return {"schema": DATA_SCHEMA, "directions": dirs, "strategies": cols, "edges": edges,
                "buckets": list(bucket_ix), "transitions": tr, "merged": {k: list(v) for k, v in self.merged.items()}}

    @classmethod
    def from_data(cls, d: dict[str, Any], *, copy: bool = True) -> "HTG":
        """Inverse of to_data; raises MemoryDataError (one line) on malformed data.

        copy=False lets the graph take over d's lists and maps (d fresh from a file, used once)."""
        try:
            return cls._from_data(d, copy)
        except MemoryDataError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise MemoryDataError(f"malformed memory data ({type(exc).__name__}: {exc})") from None

    @classmethod
    def _from_data(cls, d: dict[str, Any], copy: bool) -> "HTG":
        try:
            check_data(d, DATA_SCHEMA)
        except DataCheckError as exc:
            raise MemoryDataError(str(exc)) from None
        h = cls()
        dirs = d["directions"]
        for i, did in enumerate(dirs["id"]):
            h.add_direction(did, dirs["title"][i], dirs["description"][i], dirs["prior"][i], dirs["source"][i])
        cols = d["strategies"]
        n = len(cols["id"])
        if any(len(cols.get(c, ())) != n for c in _STRATEGY_COLUMNS if c in cols):
            raise MemoryDataError("strategy columns differ in length")
        nodes, members = [], []
        names = _STRATEGY_COLUMNS[1:]
        # mutable attributes are copied unless the caller hands d over; defaults always are
        fresh = [c for c in _MUTABLE_COLUMNS if copy or cols.get(c) is None]
        rows = zip(cols["id"], *(cols.get(c) or [_STRATEGY_DEFAULTS[c]] * n for c in names))
        for sid, *values in rows:
            attrs = dict(zip(names, values))
            for c in fresh:
                attrs[c] = _fresh(attrs[c])
            attrs["kind"] = "strategy"
            direction = attrs["direction"]
            if direction not in h._members or not isinstance(sid, str):
                raise MemoryDataError(f"strategy {sid!r} under unknown direction {direction!r}")
            nodes.append((sid, attrs))
            members.append((direction, sid))
            h._members[direction].append(sid)
        h.g.add_nodes_from(nodes)
        h.g.add_edges_from(members, kind="member")
        edges = d["edges"]
        for i, a in enumerate(edges["from"]):
            e = h.ensure_edge(a, edges["to"][i])
            e["prior"] = float(edges["prior"][i])
            e["notes"] = [dict(x) for x in edges["notes"][i]]
        h._load_transitions(d["transitions"], d["buckets"])
        h.merged = {str(k): list(v) for k, v in (d.get("merged") or {}).items()}
        return h

    def copy(self) -> "HTG":
        return HTG.from_data(self.to_data())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HTG) and self.to_data() == other.to_data()

    __hash__ = None  # type: ignore[assignment]
