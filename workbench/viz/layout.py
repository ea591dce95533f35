"""Deterministic node positions, computed in Python so a growing graph does not jump.

* :func:`tree_layout` — the mind map: a tidy top-down tree (root at top, leaves on
  consecutive slots, each parent centred over its children). Nodes with several
  parents are placed under their first parent; the other edges are still drawn.
* :func:`layered_layout` — reasoning graphs (DAGs): layers by longest path from a
  root, order within a layer by the barycentre of the parents (arrival order breaks
  ties), each layer centred.

Both are pure functions of (node ids in arrival order, parent lists) and return
``{node_id: (x, y)}`` in vis-network pixels.
"""
from __future__ import annotations

from typing import Mapping, Sequence


def depths(order: Sequence[str], parents: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """Longest-path depth from a root; parents that are unknown or cyclic are ignored."""
    known = set(order)
    out: dict[str, int] = {}
    visiting: set[str] = set()

    def d(n: str) -> int:
        if n in out:
            return out[n]
        if n in visiting:          # a cycle: break it here
            return 0
        visiting.add(n)
        ps = [p for p in parents.get(n, ()) if p in known and p != n]
        v = 0 if not ps else 1 + max(d(p) for p in ps)
        visiting.discard(n)
        out[n] = v
        return v

    for n in order:
        d(n)
    return out


def layered_layout(order: Sequence[str], parents: Mapping[str, Sequence[str]], *,
                   x_sep: float = 190.0, y_sep: float = 120.0, max_per_row: int = 12,
                   horizontal: bool = False) -> dict[str, tuple[float, float]]:
    """Layers by depth; a layer wider than ``max_per_row`` wraps onto staggered sub-rows,
    so a KG method's 100-entity layer stays readable in a panel rather than a ribbon."""
    dep = depths(order, parents)
    rank = {n: i for i, n in enumerate(order)}
    layers: dict[int, list[str]] = {}
    for n in order:
        layers.setdefault(dep[n], []).append(n)
    pos: dict[str, tuple[float, float]] = {}
    slot: dict[str, float] = {}
    y_cursor = 0.0
    for lv in sorted(layers):
        nodes = layers[lv]

        def key(n: str) -> tuple[float, int]:
            ps = [slot[p] for p in parents.get(n, ()) if p in slot]
            return (sum(ps) / len(ps) if ps else float("inf"), rank[n])

        nodes.sort(key=key)
        rows = [nodes[i:i + max_per_row] for i in range(0, len(nodes), max(1, max_per_row))]
        for j, row in enumerate(rows):
            width = (len(row) - 1) * x_sep
            shift = (x_sep / 2.0) if j % 2 else 0.0
            y = y_cursor + j * y_sep * 0.55
            for i, n in enumerate(row):
                x = -width / 2 + i * x_sep + shift
                slot[n] = x
                pos[n] = (y * 1.6, x) if horizontal else (x, y)
        y_cursor += (len(rows) - 1) * y_sep * 0.55 + y_sep
    return pos


def tree_layout(order: Sequence[str], parents: Mapping[str, Sequence[str]], *,
                x_sep: float = 170.0, y_sep: float = 130.0) -> dict[str, tuple[float, float]]:
    known = set(order)
    primary: dict[str, str | None] = {}
    children: dict[str | None, list[str]] = {}
    dep = depths(order, parents)
    for n in order:
        ps = [p for p in parents.get(n, ()) if p in known and p != n and dep.get(p, 0) < dep[n]]
        primary[n] = ps[0] if ps else None
        children.setdefault(primary[n], []).append(n)
    xs: dict[str, float] = {}
    next_leaf = [0.0]

    def place(n: str, seen: set[str]) -> float:
        seen.add(n)
        kids = [c for c in children.get(n, []) if c not in seen]
        if not kids:
            xs[n] = next_leaf[0]
            next_leaf[0] += 1.0
            return xs[n]
        vals = [place(c, seen) for c in kids]
        xs[n] = (vals[0] + vals[-1]) / 2.0
        return xs[n]

    seen: set[str] = set()
    for root in children.get(None, []):
        place(root, seen)
        next_leaf[0] += 0.5          # a little air between separate trees
    for n in order:                  # anything unreachable (cycles) goes at the end
        if n not in xs:
            xs[n] = next_leaf[0]
            next_leaf[0] += 1.0
    mid = (min(xs.values()) + max(xs.values())) / 2.0 if xs else 0.0
    return {n: ((xs[n] - mid) * x_sep, dep[n] * y_sep) for n in order}
