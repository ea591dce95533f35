"""Knowledge-graph neighbourhoods for the Knowledge page: capped, collapsible.

Works on a networkx graph (any KG object is adapted by :func:`as_networkx`). A view
starts from seed entities; every *expanded* node shows up to ``per_node`` neighbours
(highest degree first) and one "+N more" node for the rest; ``hops=2`` also expands
the seeds' neighbours. The user expands or collapses nodes by clicking them.
"""
from __future__ import annotations

from typing import Any, Iterable

from .safe import esc, label_esc, shorten, wrap


def as_networkx(kg: Any) -> Any:
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


def name_of(g: Any, n: Any) -> str:
    d = g.nodes[n] if n in g.nodes else {}
    return str(d.get("name") or d.get("label") or d.get("title") or n)


def search_entities(g: Any, query: str, limit: int = 50) -> list[tuple[Any, str, int]]:
    """(node, name, degree) whose name or id contains the query, exact matches first."""
    q = query.strip().lower()
    if not q:
        return []
    out = []
    for n in g.nodes:
        nm = name_of(g, n)
        low = nm.lower()
        if q in low or q in str(n).lower():
            out.append(((0 if low == q else 1 if low.startswith(q) else 2), -g.degree(n), nm, n))
    out.sort(key=lambda x: (x[0], x[1], x[2]))
    return [(n, nm, -deg) for _, deg, nm, n in out[:limit]]


def _neighbours(g: Any, n: Any) -> list[Any]:
    if g.is_directed():
        nb = list(dict.fromkeys(list(g.successors(n)) + list(g.predecessors(n))))
    else:
        nb = list(g.neighbors(n))
    nb.sort(key=lambda x: (-g.degree(x), name_of(g, x)))
    return nb


def _relations(g: Any, a: Any, b: Any) -> list[str]:
    rels = []
    for u, v in ((a, b), (b, a)):
        if not g.has_edge(u, v):
            continue
        data = g.get_edge_data(u, v)
        items = data.values() if g.is_multigraph() else [data]
        rels += [str(d.get("relation") or d.get("label") or d.get("rel") or "") for d in items]
    return [r for r in rels if r]


def neighbourhood(g: Any, seeds: Iterable[Any], *, hops: int = 1, per_node: int = 15,
                  cap: int = 150, expanded: Iterable[Any] = (), collapsed: Iterable[Any] = ()
                  ) -> dict[str, Any]:
    """vis-network data for the capped neighbourhood (ids are strings)."""
    seeds = [s for s in seeds if s in g]
    collapsed = set(collapsed)
    to_expand = [s for s in seeds if s not in collapsed]
    shown: dict[Any, int] = {s: 0 for s in seeds}
    more: dict[Any, int] = {}
    exp_set = set(expanded) - collapsed
    frontier = list(to_expand)
    done: set[Any] = set()
    level = 0
    while frontier and len(shown) < cap:
        nxt = []
        for n in frontier:
            if n in done:
                continue
            done.add(n)
            nb = _neighbours(g, n)
            new = [x for x in nb if x not in shown]
            room = max(0, min(per_node, cap - len(shown)))
            for x in new[:room]:
                shown[x] = shown[n] + 1
                if level + 1 < hops or x in exp_set:
                    nxt.append(x)
            if len(new) > room:
                more[n] = len(new) - room
        for x in list(exp_set):
            if x in shown and x not in done and x not in nxt:
                nxt.append(x)
        frontier = nxt
        level += 1
    ids = {n: f"e{i}" for i, n in enumerate(shown)}
    nodes, edges = [], []
    for n, dist in shown.items():
        nm = name_of(g, n)
        deg = g.degree(n)
        colour = "#fde68a" if n in seeds else "#dbeafe" if dist == 1 else "#f3f4f6"
        nodes.append({"id": ids[n], "label": label_esc(wrap(shorten(nm, 60), 18)),
                      "title": esc(f"{nm} ({n}) degree {deg}"),
                      "tip": {"head": nm, "text": str(n), "rows": [["degree", str(deg)],
                                                                    ["hop", str(dist)]]},
                      "shape": "dot" if n not in seeds else "star", "size": 12 + min(deg, 30) / 2,
                      "color": {"background": colour, "border": "#6b7280"},
                      "font": {"color": "#111827"}, "plain": nm, "state": f"hop{dist}",
                      "kg_node": str(n)})
    seen = set()
    for a in shown:
        for b in _neighbours(g, a):
            if b not in shown or (b, a) in seen:
                continue
            seen.add((a, b))
            rels = _relations(g, a, b)
            forward = g.has_edge(a, b) if g.is_directed() else True
            src, dst = (ids[a], ids[b]) if forward else (ids[b], ids[a])
            lab = ", ".join(dict.fromkeys(rels))
            edges.append({"id": f"{src}-{dst}", "from": src, "to": dst,
                          "label": label_esc(shorten(lab, 30)), "title": esc(lab),
                          "tip": {"head": f"{name_of(g, a)} — {name_of(g, b)}", "text": lab,
                                  "rows": []},
                          "color": {"color": "#9ca3af"}, "width": 1})
    for n, k in more.items():
        mid = f"more:{ids[n]}"
        nodes.append({"id": mid, "label": f"+{k} more", "title": esc(f"{k} more neighbours"),
                      "tip": {"head": f"+{k} more", "text": "click to expand", "rows": []},
                      "shape": "box", "color": {"background": "#ffffff", "border": "#d1d5db"},
                      "font": {"color": "#6b7280"}, "plain": f"+{k} more", "state": "more",
                      "kg_node": str(n)})
        edges.append({"id": f"{ids[n]}-{mid}", "from": ids[n], "to": mid,
                      "tip": {"head": "", "text": "", "rows": []}, "dashes": True,
                      "color": {"color": "#d1d5db"}, "width": 1, "label": "", "title": ""})
    return {"nodes": nodes, "edges": edges, "view": "kg", "hidden_total": sum(more.values()),
            "ids": {v: k for k, v in ids.items()}, "selected": None}


def kg_options() -> dict[str, Any]:
    return {"physics": {"enabled": True, "solver": "forceAtlas2Based",
                        "stabilization": {"iterations": 120},
                        "forceAtlas2Based": {"gravitationalConstant": -40, "springLength": 90}},
            "interaction": {"hover": True, "tooltipDelay": 150},
            "nodes": {"font": {"multi": False, "size": 12}},
            "edges": {"arrows": {"to": {"enabled": True, "scaleFactor": 0.5}},
                      "font": {"size": 9, "color": "#6b7280", "strokeWidth": 2},
                      "smooth": {"enabled": False}}}
