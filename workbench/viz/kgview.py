"""Knowledge-graph ego networks for the Knowledge page: search, capped BFS, radial layout.

A view starts from one searched entity (the *seed*) and shows everything within
``hops`` of it, breadth first, at most ``per_node`` neighbours per node (highest degree
first) plus one "+N more" node for the rest, and at most ``cap`` nodes in all. Nodes are
placed by a radial tree layout: each BFS tree node gets an angular wedge proportional to
the leaves below it, and every ring's radius grows until neighbours on it are at least
:data:`GAP` px apart, so circles and labels never overlap (physics is off). Edge labels
appear only on the selected node's edges; every edge names its relations on hover.

Works on a :class:`~workbench.knowledge.kg.KnowledgeGraph` (names, aliases and types
read from it) or on any networkx graph (``name`` node attribute; see :func:`as_networkx`).
Searching matches names, aliases and readable ids, case and accent folded, so
"christopher nolan", "Nolan" and "Chris Nolan" all find ``m.christopher_nolan``.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

from ..knowledge.text import normalize_name
from .safe import esc, label_esc, shorten, wrap

GAP = 120.0          # px between neighbouring nodes on a ring (a dot and its wrapped label)
STEP = 170.0         # px between rings at least
PATH_COLOUR = "#ea580c"


# ------------------------------------------------------------------ graph access

def as_networkx(kg: Any) -> Any:
    """A networkx graph for a KG-like object that is not a KnowledgeGraph (None if none)."""
    import networkx as nx
    if kg is None:
        return None
    if isinstance(kg, nx.Graph):
        return kg
    for attr in ("graph", "g", "G", "nx", "nx_graph"):
        g = getattr(kg, attr, None)
        if callable(g) and not isinstance(g, nx.Graph):
            try:
                g = g()
            except TypeError:
                g = None
        if isinstance(g, nx.Graph):
            return g
    triples = getattr(kg, "triples", None)
    if callable(triples):
        triples = triples()
    if triples is not None:
        g = nx.MultiDiGraph()
        for t in triples:
            h, r, tl = ((t.head, t.relation, t.tail) if hasattr(t, "head") else tuple(t)[:3])
            g.add_edge(h, tl, relation=r)
        return g
    return None


class _KG:
    """A KnowledgeGraph read through its public API (no networkx copy of the whole graph)."""

    def __init__(self, kg: Any):
        self.kg = kg

    def __contains__(self, n: Any) -> bool:
        return n in self.kg

    def nodes(self) -> Iterable[Any]:
        return self.kg.entity_ids()

    def name(self, n: Any) -> str:
        return self.kg.name(n) or str(n)

    def aliases(self, n: Any) -> list[str]:
        e = self.kg.entity(n)
        return list(e.aliases) if e is not None else []

    def kind(self, n: Any) -> str:
        e = self.kg.entity(n)
        return (e.type or "") if e is not None else ""

    def degree(self, n: Any) -> int:
        return int(self.kg.degree(n))

    def adjacent(self, n: Any) -> list[tuple[Any, tuple[str, str, str]]]:
        """(other entity, triple in its stored direction) for every edge at ``n``."""
        return [(o, (n, r, o) if d == "out" else (o, r, n)) for r, o, d in self.kg.neighbors(n)]


class _NX:
    def __init__(self, g: Any):
        self.g = g

    def __contains__(self, n: Any) -> bool:
        return n in self.g

    def nodes(self) -> Iterable[Any]:
        return self.g.nodes

    def name(self, n: Any) -> str:
        d = self.g.nodes[n] if n in self.g.nodes else {}
        return str(d.get("name") or d.get("label") or d.get("title") or n)

    def aliases(self, n: Any) -> list[str]:
        d = self.g.nodes[n] if n in self.g.nodes else {}
        return list(d.get("aliases") or [])

    def kind(self, n: Any) -> str:
        d = self.g.nodes[n] if n in self.g.nodes else {}
        return str(d.get("type") or "")

    def degree(self, n: Any) -> int:
        return int(self.g.degree(n))

    def adjacent(self, n: Any) -> list[tuple[Any, tuple[str, str, str]]]:
        g, out = self.g, []
        pairs = [(n, v) for v in (g.successors(n) if g.is_directed() else g.neighbors(n))]
        if g.is_directed():
            pairs += [(u, n) for u in g.predecessors(n)]
        for u, v in pairs:
            data = g.get_edge_data(u, v)
            for d in (data.values() if g.is_multigraph() else [data]):
                rel = str(d.get("relation") or d.get("label") or d.get("rel") or "")
                out.append((v if u == n else u, (u, rel, v)))
        return out


def source(kg: Any) -> Any:
    """The view's access to ``kg`` (a KnowledgeGraph or anything :func:`as_networkx` reads),
    or None when there is no graph."""
    if kg is None:
        return None
    if all(hasattr(kg, a) for a in ("entity", "neighbors", "degree", "entity_ids", "name")):
        return _KG(kg)
    g = as_networkx(kg)
    return _NX(g) if g is not None else None


def _src(g: Any) -> Any:
    return g if isinstance(g, (_KG, _NX)) else source(g)


def name_of(g: Any, n: Any) -> str:
    return _src(g).name(n)


def relation_text(rel: str) -> str:
    """'people.person.place_of_birth' -> 'place of birth' (Freebase-style names read)."""
    return rel.rsplit(".", 1)[-1].replace("_", " ") if rel else ""


# ------------------------------------------------------------------ search

_INDEX: dict[int, tuple[Any, list]] = {}     # id(graph) -> (graph, rows); a few graphs


def _readable_id(n: Any) -> str:
    """'m.christopher_nolan' -> 'christopher nolan'; opaque ids ('Q42', 'e17') -> ''."""
    s = str(n).split(".", 1)[-1] if "." in str(n)[:4] else str(n)
    key = normalize_name(s.replace("_", " "))
    return key if " " in key or len(key) > 3 else ""


def _name_index(s: Any) -> list[tuple[Any, str, list[str]]]:
    """(node, normalised name, normalised aliases and readable id) per node, built once."""
    owner = s.kg if isinstance(s, _KG) else s.g
    got = _INDEX.get(id(owner))
    if got is not None and got[0] is owner:
        return got[1]
    rows = []
    for n in s.nodes():
        keys = [normalize_name(a) for a in s.aliases(n)] + [_readable_id(n)]
        rows.append((n, normalize_name(s.name(n)), [k for k in keys if k]))
    if len(_INDEX) >= 4:
        _INDEX.pop(next(iter(_INDEX)))
    _INDEX[id(owner)] = (owner, rows)
    return rows


def search_entities(g: Any, query: str, limit: int = 50) -> list[tuple[Any, str, int, str]]:
    """``(node, name, degree, matched alias or "")`` for entities whose name, an alias or
    a readable id matches the query, case and accent folded; exact name matches first,
    then exact aliases, then prefixes, then substrings; ties by degree."""
    s = _src(g)
    q = normalize_name(query or "")
    if not q or s is None:
        return []
    found = []
    for n, name, keys in _name_index(s):
        rank, via = None, ""
        if name == q:
            rank = 0
        elif q in keys:
            rank, via = 1, q
        elif name.startswith(q) or (" " + q) in name:
            rank = 2
        else:
            hit = next((k for k in keys if k.startswith(q) or (" " + q) in k), None)
            if hit is not None:
                rank, via = 3, hit
            elif q in name:
                rank = 4
            elif set(q.split()) <= set(name.split()).union(*(k.split() for k in keys)):
                rank = 5             # all words, any order: "nolan christopher"
        if rank is not None:
            found.append((rank, n, via))
    out = [(rank, -s.degree(n), s.name(n), n, via) for rank, n, via in found]
    out.sort(key=lambda x: (x[0], x[1], x[2]))
    alias_of = {n: a for n, a in ((n, s.aliases(n)) for _, _, _, n, _ in out[:limit])}
    return [(n, nm, -deg, next((a for a in alias_of[n] if normalize_name(a) == via), via)
             if via else "") for _, deg, nm, n, via in out[:limit]]


# ------------------------------------------------------------------ run paths

def run_paths(trace: Any) -> list[list[tuple[str, str, str]]]:
    """The KG paths a run used, each a list of (head, relation, tail) triples: FRAG's
    selected paths (hits carrying ``meta.triples``), CogGRAG's kept triples (hits with
    ``meta.triple`` and ``meta.kept``, one path each). Per-node copies of the same hits
    (``attributed`` retrievals) are skipped."""
    paths: list[list[tuple[str, str, str]]] = []
    seen: set[tuple] = set()
    for node in getattr(trace, "nodes", {}).values():
        for rec in node.evidence:
            if rec.get("retriever") != "kg" or rec.get("attributed"):
                continue
            for h in rec.get("hits", []):
                meta = h.get("meta") or {}
                if meta.get("triples"):
                    p = [tuple(map(str, t[:3])) for t in meta["triples"]]
                elif meta.get("triple") and meta.get("kept"):
                    p = [tuple(map(str, meta["triple"][:3]))]
                else:
                    continue
                key = tuple(p)
                if key not in seen:
                    seen.add(key)
                    paths.append(p)      # type: ignore[arg-type]
    return paths


# ------------------------------------------------------------------ layout

def radial_layout(parent: dict[Any, Any], root: Any, order: Sequence[Any]
                  ) -> dict[Any, tuple[float, float]]:
    """Positions for a tree (``parent[child]``; ``order`` lists nodes breadth first):
    wedges proportional to leaf counts, rings spaced so neighbours are ``GAP`` apart."""
    kids: dict[Any, list[Any]] = {n: [] for n in order}
    for n in order:
        p = parent.get(n)
        if p is not None and n != root:
            kids.setdefault(p, []).append(n)
    leaves: dict[Any, int] = {}
    for n in reversed(order):
        leaves[n] = max(1, sum(leaves[c] for c in kids.get(n, [])))
    angle: dict[Any, float] = {root: 0.0}
    depth: dict[Any, int] = {root: 0}
    span: dict[Any, tuple[float, float]] = {root: (0.0, 2 * math.pi)}
    for n in order:
        lo, hi = span.get(n, (0.0, 0.0))
        total = sum(leaves[c] for c in kids.get(n, [])) or 1
        a = lo
        for c in kids.get(n, []):
            w = (hi - lo) * leaves[c] / total
            span[c] = (a, a + w)
            angle[c] = a + w / 2
            depth[c] = depth[n] + 1
            a += w
    rings: dict[int, list[float]] = {}
    for n, d in depth.items():
        if d:
            rings.setdefault(d, []).append(angle[n])
    radius = {0: 0.0}
    for d in sorted(rings):
        a = sorted(rings[d])
        gaps = [b - x for x, b in zip(a, a[1:])] + ([a[0] + 2 * math.pi - a[-1]]
                                                    if len(a) > 1 else [])
        # the chord, not the arc, is the distance between two neighbours on the ring
        least = min(gaps) if gaps else 0.0
        need = GAP / (2 * math.sin(min(least, math.pi) / 2)) if least > 0 else 0.0
        radius[d] = max(radius[d - 1] + STEP, need)
    return {n: (radius[depth[n]] * math.cos(angle[n]), radius[depth[n]] * math.sin(angle[n]))
            for n in depth}


# ------------------------------------------------------------------ the view

def neighbourhood(g: Any, seeds: Iterable[Any], *, hops: int = 1, per_node: int = 15,
                  cap: int = 150, expanded: Iterable[Any] = (), collapsed: Iterable[Any] = (),
                  selected: Any = None, paths: Sequence[Sequence[Sequence[str]]] = ()
                  ) -> dict[str, Any]:
    """vis-network data for the capped ego network of the first seed (ids are strings).

    ``expanded`` nodes show their neighbours whatever their hop (a "+N more" node clicked
    expands its owner); ``collapsed`` ones show none. ``selected`` (an entity) gets its
    edges labelled. ``paths`` (lists of triples, e.g. :func:`run_paths`) are drawn in
    orange; their entities are added to the view when the BFS did not reach them.
    """
    s = _src(g)
    seeds = [x for x in seeds if x in s][:1]
    collapsed = set(collapsed)
    exp_set = set(expanded) - collapsed
    shown: dict[Any, int] = {x: 0 for x in seeds}
    parent: dict[Any, Any] = {}
    more: dict[Any, int] = {}
    adj_cache: dict[Any, list] = {}

    def adj(n: Any) -> list[tuple[Any, tuple[str, str, str]]]:
        if n not in adj_cache:
            adj_cache[n] = s.adjacent(n)
        return adj_cache[n]

    def nbrs(n: Any) -> list[Any]:
        nb = list(dict.fromkeys(o for o, _ in adj(n) if o != n))
        nb.sort(key=lambda x: (-s.degree(x), s.name(x)))
        return nb

    frontier = [x for x in seeds if x not in collapsed]
    done: set[Any] = set()
    level = 0
    while frontier and len(shown) < cap:
        nxt = []
        for n in frontier:
            if n in done or n in collapsed:
                continue
            done.add(n)
            new = [x for x in nbrs(n) if x not in shown]
            room = max(0, min(per_node * (4 if n in exp_set else 1), cap - len(shown)))
            for x in new[:room]:
                shown[x] = shown[n] + 1
                parent[x] = n
                if level + 1 < hops or x in exp_set:
                    nxt.append(x)
            if len(new) > room:
                more[n] = len(new) - room
        nxt += [x for x in exp_set if x in shown and x not in done and x not in nxt]
        frontier = nxt
        level += 1

    # a run's paths: reach their entities through the path's own triples
    path_pairs: set[frozenset] = set()
    path_nodes: set[Any] = set()
    for p in paths:
        for h, _r, t in (tuple(x)[:3] for x in p):
            path_pairs.add(frozenset((h, t)))
            path_nodes.update((h, t))
    if path_nodes and seeds:
        pending = [tuple(x)[:3] for p in paths for x in p]
        grew = True
        while grew:
            grew = False
            for h, _r, t in pending:
                for a, b in ((h, t), (t, h)):
                    if a in shown and b not in shown and b in s:
                        shown[b], parent[b] = shown[a] + 1, a
                        grew = True
        for n in path_nodes:           # a path out of reach: hung off the seed
            if n not in shown and n in s:
                shown[n], parent[n] = 1, seeds[0]
                pending_again = [(h, t) for h, _r, t in pending if n in (h, t)]
                for h, t in pending_again:
                    for a, b in ((h, t), (t, h)):
                        if a in shown and b not in shown and b in s:
                            shown[b], parent[b] = shown[a] + 1, a

    ids = {n: f"e{i}" for i, n in enumerate(shown)}
    more_ids = {n: f"more:{ids[n]}" for n in more}
    order = sorted(shown, key=lambda n: shown[n])
    tree = dict(parent)
    for n in more:
        tree[more_ids[n]] = n
    pos = radial_layout(tree, seeds[0], order + list(more_ids.values())) if seeds else {}
    sel = selected if selected in shown else None

    nodes, edges = [], []
    for n, dist in shown.items():
        nm = s.name(n)
        deg = s.degree(n)
        kind = s.kind(n)
        colour = "#fde68a" if n in seeds else "#dbeafe" if dist == 1 else "#f3f4f6"
        on_path = n in path_nodes
        x, y = pos.get(n, (0.0, 0.0))
        rows = [["id", str(n)], ["links", str(deg)], ["hops from the centre", str(dist)]]
        if kind:
            rows.insert(1, ["type", kind])
        als = s.aliases(n)
        if als:
            rows.append(["also", ", ".join(als[:6])])
        if on_path:
            rows.append(["run", "on the chosen run's paths"])
        nodes.append({"id": ids[n], "label": label_esc(wrap(shorten(nm, 48), 16)),
                      "tip": {"head": nm, "text": "Click to select; its links get labels.",
                              "rows": rows},
                      "shape": "star" if n in seeds else "dot",
                      "size": 14 if n in seeds else 8 + min(deg, 40) / 5,
                      "x": round(x, 1), "y": round(y, 1),
                      "color": {"background": colour,
                                "border": PATH_COLOUR if on_path else "#6b7280"},
                      "borderWidth": 3 if on_path else 1,
                      "font": {"color": "#111827", "size": 16 if n == sel else 14},
                      "plain": nm, "state": "path" if on_path else f"hop{dist}",
                      "kg_node": str(n)})
    seen: set[frozenset] = set()
    for a in shown:
        rels_to: dict[Any, list[tuple[str, str, str]]] = {}
        for o, tri in adj(a):
            if o in shown and o != a:
                rels_to.setdefault(o, []).append(tri)
        for b, tris in rels_to.items():
            pair = frozenset((a, b))
            if pair in seen:
                continue
            seen.add(pair)
            tris = list(dict.fromkeys(tris))
            touches_sel = sel is not None and sel in pair
            forward = any(t[0] == a for t in tris)
            src, dst = (ids[a], ids[b]) if forward else (ids[b], ids[a])
            # read from the selected entity outwards: a KG with inverse triples would
            # otherwise say "films directed, directed by" on every link
            own = [t for t in tris if t[0] == sel] if touches_sel else []
            words = list(dict.fromkeys(relation_text(r) for _, r, _ in (own or tris)))
            full = "; ".join(f"{s.name(h)} — {r} → {s.name(t)}" for h, r, t in tris)
            on_path = pair in path_pairs
            edges.append({"id": f"{src}-{dst}", "from": src, "to": dst,
                          "label": label_esc(shorten(", ".join(words), 40)) if touches_sel
                          else "",
                          "tip": {"head": f"{s.name(a)} — {s.name(b)}", "text": full,
                                  "rows": []},
                          "color": {"color": PATH_COLOUR if on_path else
                                    "#4b5563" if touches_sel else "#c7ccd4"},
                          "width": 3 if on_path else 2 if touches_sel else 1,
                          "relations": [list(t) for t in tris]})
    for n, k in more.items():
        mid = more_ids[n]
        x, y = pos.get(mid, (0.0, 0.0))
        nodes.append({"id": mid, "label": f"+{k} more",
                      "tip": {"head": f"+{k} more", "text": "Click to show more of "
                              f"{s.name(n)}'s neighbours.", "rows": []},
                      "shape": "box", "x": round(x, 1), "y": round(y, 1),
                      "color": {"background": "#ffffff", "border": "#d1d5db"},
                      "font": {"color": "#6b7280", "size": 13}, "plain": f"+{k} more",
                      "state": "more", "kg_node": str(n)})
        edges.append({"id": f"{ids[n]}-{mid}", "from": ids[n], "to": mid,
                      "tip": {"head": "", "text": "", "rows": []}, "dashes": True,
                      "color": {"color": "#d1d5db"}, "width": 1, "label": "",
                      "relations": []})
    return {"nodes": nodes, "edges": edges, "view": "kg", "hidden_total": sum(more.values()),
            "ids": {v: k for k, v in ids.items()},
            "selected": ids.get(sel) if sel is not None else None, "fit": True,
            "path_nodes": sum(1 for n in shown if n in path_nodes)}


def triples_rows(g: Any, data: dict[str, Any], only: Any = None) -> list[dict[str, str]]:
    """The shown triples as table rows (names, relation as stored), optionally only those
    at entity ``only``."""
    s = _src(g)
    rows = []
    for e in data["edges"]:
        for h, r, t in e.get("relations", []):
            if only is None or only in (h, t):
                rows.append({"from": s.name(h), "relation": r, "to": s.name(t)})
    return rows


def kg_options() -> dict[str, Any]:
    # Positions come from radial_layout; physics would pull them back into a tangle.
    return {"physics": {"enabled": False},
            "layout": {"improvedLayout": False},
            "interaction": {"hover": True, "tooltipDelay": 120, "hideEdgesOnDrag": True},
            "nodes": {"font": {"multi": False, "size": 14, "face": "Inter, Arial, sans-serif"}},
            "edges": {"arrows": {"to": {"enabled": True, "scaleFactor": 0.5}},
                      "font": {"size": 13, "color": "#111827", "strokeWidth": 4,
                               "strokeColor": "#ffffff", "align": "middle"},
                      "smooth": {"enabled": False}}}
