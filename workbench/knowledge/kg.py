"""The knowledge graph: triples as integer numpy columns, networkx only for subgraphs.

Entities and relations are interned to integer ids; the triples are three int32
arrays (head, relation, tail) with CSR adjacency built lazily, so a graph of
millions of triples loads as a few column reads (parquet) and never holds a
Python object per edge. :meth:`KnowledgeGraph.neighborhood` cuts out a small
``networkx.MultiDiGraph`` on demand (nodes carry ``name``; edges ``relation``),
and the path, shortest-path and PPR operations run on the whole graph or on such
a subgraph (``graph=``).

Traversal for paths is undirected (a question may walk a relation backwards) but
every triple is reported in its stored direction ``(head, relation, tail)``.
"""
from __future__ import annotations

import difflib
import heapq
import json
import time
from collections import deque
from itertools import count
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import networkx as nx
import numpy as np

from ..datasets.base import Entity, Triple
from ..datasets.io import read_jsonl
from .text import STOPWORDS, normalize_name

TripleT = tuple[str, str, str]
Path_ = list[TripleT]
FORMAT_VERSION = 1

HOW_ORDER = {"exact": 0, "alias": 1, "fuzzy": 2, "embedding": 3}


def _as_triple(t: Any) -> tuple[str, str, str, str | None]:
    if isinstance(t, Triple):
        return t.head, t.relation, t.tail, t.source
    if isinstance(t, Mapping):
        return str(t["head"]), str(t["relation"]), str(t["tail"]), t.get("source")
    h, r, tl = t[0], t[1], t[2]
    return str(h), str(r), str(tl), (t[3] if len(t) > 3 else None)


class KnowledgeGraph:
    """See the module docstring. Build with :meth:`from_triples` or :meth:`load`."""

    def __init__(self, ids: Sequence[str], rels: Sequence[str], h: np.ndarray, r: np.ndarray,
                 t: np.ndarray, *, names: Sequence[str] | None = None,
                 aliases: Mapping[int, list[str]] | None = None,
                 types: Mapping[int, str] | None = None,
                 sources: Mapping[int, str] | None = None):
        self._ids_src = ids                 # list or pyarrow array; materialised lazily
        self._ids_list: list[str] | None = ids if isinstance(ids, list) else None
        self._names_src = names
        self._names_list: list[str] | None = names if isinstance(names, list) else None
        self._aliases: dict[int, list[str]] = dict(aliases or {})
        self._types: dict[int, str] = dict(types or {})
        self._sources: dict[int, str] = dict(sources or {})
        self.relations: list[str] = list(rels)
        self.h = np.ascontiguousarray(h, dtype=np.int32)
        self.r = np.ascontiguousarray(r, dtype=np.int32)
        self.t = np.ascontiguousarray(t, dtype=np.int32)
        if not (len(self.h) == len(self.r) == len(self.t)):
            raise ValueError("head, relation and tail columns differ in length")
        self._n_ent = len(ids)
        self._idx: dict[str, int] | None = None
        self._rel_idx: dict[str, int] | None = None
        self._csr: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._name_index: dict[str, list[int]] | None = None
        self._alias_index: dict[str, list[int]] | None = None
        self._tri: tuple | None = None
        self._max_name_tokens = 1
        self._name_emb: tuple[str, np.ndarray] | None = None
        self._trans: dict[bool, Any] = {}
        # meta.json of a graph the LLM extracted (`kg build`): model, passages done of total
        self.build: dict[str, Any] | None = None
        self.load_s = 0.0
        # knowledge.descriptions.EntityDescriptions of the dataset's passages, or None
        self.descriptions: Any = None

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_triples(cls, triples: Iterable[Triple | Mapping | Sequence],
                     entities: Iterable[Entity] | None = None, *,
                     dedupe: bool = True) -> "KnowledgeGraph":
        """Build from triples (``Triple``, dicts with head/relation/tail, or tuples).

        A head/tail that is not an entity id but equals an entity's name is mapped to
        that entity; anything else becomes a new entity whose id and name are the string.
        """
        ids: list[str] = []
        names: list[str] = []
        aliases: dict[int, list[str]] = {}
        types: dict[int, str] = {}
        idx: dict[str, int] = {}
        for e in entities or []:
            if e.id in idx:
                continue
            i = idx[e.id] = len(ids)
            ids.append(e.id)
            names.append(e.name or e.id)
            if e.aliases:
                aliases[i] = list(e.aliases)
            if e.type:
                types[i] = e.type
        by_name: dict[str, int] = {}
        for i, n in enumerate(names):
            by_name.setdefault(n, i)
        rel_idx: dict[str, int] = {}
        rels: list[str] = []
        hs: list[int] = []
        rs: list[int] = []
        ts: list[int] = []
        sources: dict[int, str] = {}

        def ent(s: str) -> int:
            i = idx.get(s)
            if i is None:
                i = by_name.get(s)
            if i is None:
                i = idx[s] = len(ids)
                ids.append(s)
                names.append(s)
            return i

        for n, tr in enumerate(triples):
            h, r, t, src = _as_triple(tr)
            hs.append(ent(h))
            ri = rel_idx.get(r)
            if ri is None:
                ri = rel_idx[r] = len(rels)
                rels.append(r)
            rs.append(ri)
            ts.append(ent(t))
            if src:
                sources[len(hs) - 1] = str(src)
        H = np.asarray(hs, dtype=np.int32)
        R = np.asarray(rs, dtype=np.int32)
        T = np.asarray(ts, dtype=np.int32)
        if dedupe and len(H):
            keep = _first_unique(H, R, T)
            if len(keep) < len(H):
                remap = {int(o): n for n, o in enumerate(keep)}
                sources = {remap[k]: v for k, v in sources.items() if k in remap}
                H, R, T = H[keep], R[keep], T[keep]
        return cls(ids, rels, H, R, T, names=names, aliases=aliases, types=types,
                   sources=sources)

    @classmethod
    def from_arrays(cls, ids: Sequence[str], rels: Sequence[str], h: np.ndarray, r: np.ndarray,
                    t: np.ndarray, **kw: Any) -> "KnowledgeGraph":
        """Fast path for importers that already interned their triples."""
        return cls(ids, rels, h, r, t, **kw)

    # ------------------------------------------------------------------ persistence
    def save(self, directory: str | Path) -> Path:
        """Write entities.parquet, relations.json, triples.parquet (+ kg.json) into a folder."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        n = self.n_entities
        ent_cols = {"id": pa.array(self._ids(), pa.string())}
        if self._names_src is not None:
            ent_cols["name"] = pa.array(self._names(), pa.string())
        if self._aliases:
            ent_cols["aliases"] = pa.array([self._aliases.get(i) for i in range(n)],
                                           pa.list_(pa.string()))
        if self._types:
            ent_cols["type"] = pa.array([self._types.get(i) for i in range(n)], pa.string())
        pq.write_table(pa.table(ent_cols), d / "entities.parquet")
        tri = {"h": pa.array(self.h), "r": pa.array(self.r), "t": pa.array(self.t)}
        if self._sources:
            tri["source"] = pa.array([self._sources.get(i) for i in range(self.n_triples)],
                                     pa.string())
        pq.write_table(pa.table(tri), d / "triples.parquet")
        (d / "relations.json").write_text(json.dumps(self.relations))
        (d / "kg.json").write_text(json.dumps({"format": FORMAT_VERSION,
                                               "n_entities": n, "n_triples": self.n_triples,
                                               "n_relations": len(self.relations)}))
        return d

    @classmethod
    def load(cls, directory: str | Path) -> "KnowledgeGraph":
        """Load a folder written by :meth:`save`, or one with triples.jsonl (+ entities.jsonl)."""
        t0 = time.perf_counter()
        d = Path(directory)
        if (d / "triples.parquet").is_file():
            import pyarrow.parquet as pq
            meta = json.loads((d / "kg.json").read_text()) if (d / "kg.json").is_file() else {}
            if meta.get("format", FORMAT_VERSION) != FORMAT_VERSION:
                raise ValueError(f"{d}: knowledge-graph format {meta.get('format')} is not "
                                 f"supported by this workbench (expects {FORMAT_VERSION})")
            et = pq.read_table(d / "entities.parquet")
            tt = pq.read_table(d / "triples.parquet")
            rels = json.loads((d / "relations.json").read_text())
            ids = et.column("id").combine_chunks()
            names = et.column("name").combine_chunks() if "name" in et.column_names else None
            aliases: dict[int, list[str]] = {}
            types: dict[int, str] = {}
            if "aliases" in et.column_names:
                col = et.column("aliases").combine_chunks()
                nz = np.flatnonzero(col.is_valid().to_numpy(zero_copy_only=False))
                aliases = {int(i): col[int(i)].as_py() for i in nz}
            if "type" in et.column_names:
                col = et.column("type").combine_chunks()
                nz = np.flatnonzero(col.is_valid().to_numpy(zero_copy_only=False))
                types = {int(i): col[int(i)].as_py() for i in nz}
            sources: dict[int, str] = {}
            if "source" in tt.column_names:
                col = tt.column("source").combine_chunks()
                nz = np.flatnonzero(col.is_valid().to_numpy(zero_copy_only=False))
                sources = {int(i): col[int(i)].as_py() for i in nz}
            kg = cls(ids, rels, tt.column("h").to_numpy(), tt.column("r").to_numpy(),
                     tt.column("t").to_numpy(), names=names, aliases=aliases, types=types,
                     sources=sources)
            del et, tt
            import pyarrow as pa
            pa.default_memory_pool().release_unused()   # parquet decode buffers
        elif (d / "triples.jsonl").is_file():
            ents = []
            if (d / "entities.jsonl").is_file():
                for rec in read_jsonl(d / "entities.jsonl"):
                    ents.append(Entity(id=str(rec["id"]), name=str(rec.get("name") or rec["id"]),
                                       aliases=list(rec.get("aliases") or []),
                                       type=str(rec.get("type") or "")))
            kg = cls.from_triples(read_jsonl(d / "triples.jsonl"), ents)
        else:
            raise FileNotFoundError(f"{d} holds no knowledge graph (triples.parquet or "
                                    f"triples.jsonl)")
        kg.load_s = time.perf_counter() - t0
        return kg

    # ------------------------------------------------------------------ basics
    def _ids(self) -> list[str]:
        if self._ids_list is None:
            self._ids_list = self._ids_src.to_pylist()
            self._ids_src = self._ids_list
        return self._ids_list

    def _names(self) -> list[str]:
        if self._names_src is None:
            return self._ids()
        if self._names_list is None:
            self._names_list = self._names_src.to_pylist()
            self._names_src = self._names_list
        return self._names_list

    def _index(self) -> dict[str, int]:
        if self._idx is None:
            self._idx = {e: i for i, e in enumerate(self._ids())}
        return self._idx

    def _ri(self) -> dict[str, int]:
        if self._rel_idx is None:
            self._rel_idx = {r: i for i, r in enumerate(self.relations)}
        return self._rel_idx

    def idx(self, eid: str) -> int | None:
        return self._index().get(eid)

    @property
    def n_entities(self) -> int:
        return self._n_ent

    @property
    def n_triples(self) -> int:
        return int(len(self.h))

    def __len__(self) -> int:
        return self.n_triples

    def __contains__(self, eid: object) -> bool:
        return isinstance(eid, str) and eid in self._index()

    def entity_ids(self) -> list[str]:
        return list(self._ids())

    def name(self, eid: str) -> str:
        i = self._index().get(eid)
        return self._names()[i] if i is not None else str(eid)

    def entity(self, eid: str) -> Entity | None:
        i = self._index().get(eid)
        if i is None:
            return None
        return Entity(id=self._ids()[i], name=self._names()[i],
                      aliases=list(self._aliases.get(i, [])), type=self._types.get(i, ""))

    def resolve(self, text: str) -> str | None:
        """An entity id for an id, a name or an alias (normalised exact match), else None."""
        if text in self._index():
            return text
        key = normalize_name(text)
        self._build_name_indexes()
        for table in (self._name_index, self._alias_index):
            hit = table.get(key) if table else None
            if hit:
                return self._ids()[hit[0]]
        return None

    def triple_at(self, i: int) -> TripleT:
        ids = self._ids()
        return ids[self.h[i]], self.relations[self.r[i]], ids[self.t[i]]

    def triples(self) -> Iterator[TripleT]:
        ids, rels = self._ids(), self.relations
        for a, b, c in zip(self.h.tolist(), self.r.tolist(), self.t.tolist()):
            yield ids[a], rels[b], ids[c]

    def source(self, h: str, r: str, t: str) -> str | None:
        if not self._sources:          # an imported KG: skip the edge search
            return None
        i = self._find(h, r, t)
        return self._sources.get(i) if i is not None else None

    def _adjacency(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(out_order, out_ptr, in_order, in_ptr): edge indexes grouped by head / by tail."""
        if self._csr is None:
            n = self.n_entities
            oo = np.argsort(self.h, kind="stable").astype(np.int64)
            op = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.h, minlength=n), out=op[1:])
            io = np.argsort(self.t, kind="stable").astype(np.int64)
            ip = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.t, minlength=n), out=ip[1:])
            self._csr = (oo, op, io, ip)
        return self._csr

    def _out(self, i: int) -> np.ndarray:
        oo, op, _, _ = self._adjacency()
        return oo[op[i]:op[i + 1]]

    def _in(self, i: int) -> np.ndarray:
        _, _, io, ip = self._adjacency()
        return io[ip[i]:ip[i + 1]]

    def degree(self, eid: str) -> int:
        i = self.idx(eid)
        return 0 if i is None else int(len(self._out(i)) + len(self._in(i)))

    def _find(self, h: str, r: str, t: str) -> int | None:
        hi, ti, ri = self.idx(h), self.idx(t), self._ri().get(r)
        if hi is None or ti is None or ri is None:
            return None
        e = self._out(hi)
        m = np.flatnonzero((self.r[e] == ri) & (self.t[e] == ti))
        return int(e[m[0]]) if len(m) else None

    def has_triple(self, h: str, r: str, t: str) -> bool:
        return self._find(h, r, t) is not None

    def neighbors(self, eid: str) -> list[tuple[str, str, str]]:
        """``[(relation, other entity id, "out"|"in")]``: outgoing edges first."""
        i = self.idx(eid)
        if i is None:
            return []
        ids, rels = self._ids(), self.relations
        out = [(rels[r], ids[t], "out") for r, t in zip(self.r[self._out(i)].tolist(),
                                                         self.t[self._out(i)].tolist())]
        e = self._in(i)
        out += [(rels[r], ids[h], "in") for r, h in zip(self.r[e].tolist(), self.h[e].tolist())]
        return out

    def relations_of(self, eid: str) -> list[tuple[str, str]]:
        """Distinct ``(relation, direction)`` pairs at an entity (for relation pruning)."""
        seen: dict[tuple[str, str], None] = {}
        for rel, _, d in self.neighbors(eid):
            seen.setdefault((rel, d), None)
        return list(seen)

    # ------------------------------------------------------------------ subgraphs
    def neighborhood(self, seeds: Sequence[str], hops: int, max_nodes: int | None = None
                     ) -> nx.MultiDiGraph:
        """The induced subgraph on entities within ``hops`` (undirected) of the seeds.

        Nodes are added breadth-first (seeds first) until ``max_nodes``; node attrs:
        ``name``, ``type``, ``hop`` (distance), ``seed``; edge key and attr ``relation``.
        """
        idx = self._index()
        start = [idx[s] for s in dict.fromkeys(seeds) if s in idx]
        if max_nodes is not None:
            start = start[:max(max_nodes, 0)]
        hop_of: dict[int, int] = {s: 0 for s in start}
        frontier = list(start)
        full = max_nodes is not None and len(hop_of) >= max_nodes
        for d in range(1, max(hops, 0) + 1):
            if not frontier or full:
                break
            nxt: list[int] = []
            for u in frontier:
                e_out, e_in = self._out(u), self._in(u)
                for v in np.concatenate([self.t[e_out], self.h[e_in]]).tolist():
                    if v not in hop_of:
                        hop_of[v] = d
                        nxt.append(v)
                        if max_nodes is not None and len(hop_of) >= max_nodes:
                            full = True
                            break
                if full:
                    break
            frontier = nxt
        return self._induced(hop_of, seeds=set(start))

    def subgraph(self, eids: Iterable[str]) -> nx.MultiDiGraph:
        """The induced subgraph on the given entities."""
        idx = self._index()
        return self._induced({idx[e]: 0 for e in eids if e in idx}, seeds=set())

    def _induced(self, hop_of: dict[int, int], seeds: set[int]) -> nx.MultiDiGraph:
        g = nx.MultiDiGraph()
        ids, names = self._ids(), self._names()
        for i, d in hop_of.items():
            g.add_node(ids[i], name=names[i], type=self._types.get(i, ""), hop=d,
                       seed=i in seeds)
        if not hop_of:
            return g
        member = np.zeros(self.n_entities, dtype=bool)
        nodes = np.fromiter(hop_of.keys(), dtype=np.int64, count=len(hop_of))
        member[nodes] = True
        oo, op, _, _ = self._adjacency()
        parts = [oo[op[i]:op[i + 1]] for i in nodes.tolist()]
        edges = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        edges = np.sort(edges[member[self.t[edges]]])
        rels = self.relations
        for e, a, b, c in zip(edges.tolist(), self.h[edges].tolist(), self.r[edges].tolist(),
                              self.t[edges].tolist()):
            attrs = {"relation": rels[b]}
            src = self._sources.get(e)
            if src:
                attrs["source"] = src
            g.add_edge(ids[a], ids[c], key=rels[b], **attrs)
        return g

    def to_networkx(self, max_triples: int = 200_000) -> nx.MultiDiGraph:
        if self.n_triples > max_triples:
            raise ValueError(f"the graph has {self.n_triples} triples; use neighborhood() or "
                             f"subgraph() instead of converting it whole")
        return self._induced({i: 0 for i in range(self.n_entities)}, seeds=set())

    # ------------------------------------------------------------------ traversal helpers
    def _adj_fn(self, graph: nx.MultiDiGraph | None) -> Callable[[str], list[tuple[str, TripleT]]]:
        """node -> [(other node, (h, r, t) in stored direction)], undirected."""
        cache: dict[str, list[tuple[str, TripleT]]] = {}
        if graph is not None:
            def adj(u: str) -> list[tuple[str, TripleT]]:
                got = cache.get(u)
                if got is None:
                    got = []
                    if u in graph:
                        for a, b, k, rel in graph.out_edges(u, keys=True, data="relation"):
                            got.append((b, (a, rel if rel is not None else str(k), b)))
                        for a, b, k, rel in graph.in_edges(u, keys=True, data="relation"):
                            if a != b:      # a self-loop was listed once already
                                got.append((a, (a, rel if rel is not None else str(k), b)))
                    cache[u] = got
                return got
            return adj

        ids, rels = self._ids(), self.relations

        def adj_kg(u: str) -> list[tuple[str, TripleT]]:
            got = cache.get(u)
            if got is None:
                got = []
                i = self.idx(u)
                if i is not None:
                    e = self._out(i)
                    for b, c in zip(self.r[e].tolist(), self.t[e].tolist()):
                        got.append((ids[c], (u, rels[b], ids[c])))
                    e = self._in(i)
                    for a, b in zip(self.h[e].tolist(), self.r[e].tolist()):
                        if a != i:
                            got.append((ids[a], (ids[a], rels[b], u)))
                cache[u] = got
            return got
        return adj_kg

    def _has_node(self, u: str, graph: nx.MultiDiGraph | None) -> bool:
        return (u in graph) if graph is not None else (u in self._index())

    def simple_paths(self, source: str, targets: Sequence[str] | None, max_len: int,
                     graph: nx.MultiDiGraph | None = None, limit: int = 1000, *,
                     max_frontier: int = 200_000) -> list[Path_]:
        """Simple paths (no repeated entity) from ``source`` of 1..``max_len`` triples.

        With ``targets`` only paths ending at one of them are returned, otherwise every
        path. Shorter paths come first (breadth-first); at most ``limit`` paths.
        Parallel edges give distinct paths. Traversal ignores edge direction.
        """
        if not self._has_node(source, graph) or max_len < 1 or limit <= 0:
            return []
        tset = set(targets) - {source} if targets is not None else None
        if tset is not None and not tset:
            return []
        adj = self._adj_fn(graph)
        out: list[Path_] = []
        frontier: list[tuple[str, tuple[str, ...], tuple[TripleT, ...]]] = [
            (source, (source,), ())]
        for _depth in range(max_len):
            nxt = []
            for node, visited, path in frontier:
                for other, tri in adj(node):
                    if other in visited:
                        continue
                    p = path + (tri,)
                    if tset is None or other in tset:
                        out.append(list(p))
                        if len(out) >= limit:
                            return out
                    if len(nxt) < max_frontier:
                        nxt.append((other, visited + (other,), p))
            frontier = nxt
            if not frontier:
                break
        return out

    def shortest_paths(self, source: str, targets: Sequence[str] | None,
                       weight_fn: Callable[[str, str, str], float] | None = None,
                       graph: nx.MultiDiGraph | None = None, *,
                       max_cost: float | None = None) -> dict[str, Path_]:
        """Dijkstra from ``source`` (undirected); ``weight_fn(h, r, t) >= 0`` (default 1).

        Returns ``{target: [(h, r, t), ...]}`` for the reachable targets (all reached
        entities when ``targets`` is None); ``{source: []}`` if the source is a target.
        """
        if not self._has_node(source, graph):
            return {}
        want = set(targets) if targets is not None else None
        adj = self._adj_fn(graph)
        dist: dict[str, float] = {source: 0.0}
        back: dict[str, tuple[str, TripleT] | None] = {source: None}
        done: set[str] = set()
        tie = count()
        heap = [(0.0, next(tie), source)]
        remaining = set(want) if want is not None else None
        while heap:
            d, _, u = heapq.heappop(heap)
            if u in done:
                continue
            done.add(u)
            if remaining is not None:
                remaining.discard(u)
                if not remaining:
                    break
            for v, tri in adj(u):
                w = 1.0 if weight_fn is None else float(weight_fn(*tri))
                if w < 0:
                    raise ValueError(f"negative weight {w} for {tri}")
                nd = d + w
                if max_cost is not None and nd > max_cost:
                    continue
                if v not in dist or nd < dist[v]:
                    dist[v] = nd
                    back[v] = (u, tri)
                    heapq.heappush(heap, (nd, next(tie), v))
        res: dict[str, Path_] = {}
        for tgt in (want if want is not None else done):
            if tgt not in done:
                continue
            p: Path_ = []
            cur = tgt
            while back[cur] is not None:
                prev, tri = back[cur]
                p.append(tri)
                cur = prev
            res[tgt] = p[::-1]
        if want is not None:     # keep the caller's order
            res = {k: res[k] for k in targets if k in res}
        return res

    def ppr(self, seeds: Sequence[str] | Mapping[str, float], graph: nx.MultiDiGraph | None = None,
            alpha: float = 0.85, *, max_iter: int = 100, tol: float = 1e-10,
            directed: bool = False, top_k: int | None = None) -> dict[str, float]:
        """Personalized PageRank from the seeds (uniform, or weighted when a mapping).

        ``alpha`` is the damping factor (probability of following an edge, as in
        networkx); the walk restarts at the seeds otherwise. Edges count with their
        multiplicity and are followed both ways unless ``directed``. Returns
        ``{entity: score}`` for entities with a positive score, best first, summing to 1.
        """
        if graph is not None:
            nodes = list(graph.nodes)
            pos = {n: i for i, n in enumerate(nodes)}
            pairs = [(pos[a], pos[b]) for a, b in graph.edges()]
            n = len(nodes)
            rows = np.array([p[0] for p in pairs], dtype=np.int64)
            cols = np.array([p[1] for p in pairs], dtype=np.int64)
            P = _transition(rows, cols, n, directed)
            lookup = pos.get

            def name_of(i: int) -> str:
                return nodes[i]
        else:
            n = self.n_entities
            if directed not in self._trans:
                self._trans[directed] = _transition(self.h.astype(np.int64),
                                                    self.t.astype(np.int64), n, directed)
            P = self._trans[directed]
            lookup = self._index().get
            ids = self._ids()

            def name_of(i: int) -> str:
                return ids[i]
        w = dict(seeds) if isinstance(seeds, Mapping) else {s: 1.0 for s in seeds}
        p = np.zeros(n, dtype=np.float64)
        for s, wt in w.items():
            i = lookup(s)
            if i is not None and wt > 0:
                p[i] += wt
        if n == 0 or p.sum() <= 0:
            return {}
        p /= p.sum()
        M, dangling = P
        x = p.copy()
        for _ in range(max_iter):
            x_new = alpha * (M @ x + x[dangling].sum() * p) + (1 - alpha) * p
            err = np.abs(x_new - x).sum()
            x = x_new
            if err < n * tol:
                break
        x /= x.sum()
        nz = np.flatnonzero(x > 0)
        nz = nz[np.lexsort((nz, -x[nz]))]
        if top_k is not None:
            nz = nz[:top_k]
        return {name_of(int(i)): float(x[i]) for i in nz}

    # ------------------------------------------------------------------ text
    def triples_text(self, path: Iterable[TripleT | Triple | Sequence[str]]) -> str:
        """``"Inception -> film.film.directed_by -> Christopher Nolan; ..."`` (names)."""
        parts = []
        for tr in path:
            h, r, t, _ = _as_triple(tr)
            parts.append(f"{self.name(h)} -> {r} -> {self.name(t)}")
        return "; ".join(parts)

    # ------------------------------------------------------------------ entity linking
    def _build_name_indexes(self) -> None:
        if self._name_index is not None:
            return
        names = self._names()
        ni: dict[str, list[int]] = {}
        mx = 1
        for i, nm in enumerate(names):
            key = normalize_name(nm)
            if key:
                ni.setdefault(key, []).append(i)
                mx = max(mx, key.count(" ") + 1)
        ai: dict[str, list[int]] = {}
        for i, als in self._aliases.items():
            for a in als:
                key = normalize_name(a)
                if key:
                    ai.setdefault(key, []).append(i)
                    mx = max(mx, key.count(" ") + 1)
        if self._names_src is not None:       # ids that read like names work as aliases too
            ids = self._ids()
            for i, eid in enumerate(ids):
                key = normalize_name(eid.replace("_", " "))
                if key and key != normalize_name(names[i]) and any(c.isalpha() for c in key) \
                        and "." not in eid:
                    ai.setdefault(key, []).append(i)
        self._name_index, self._alias_index = ni, ai
        self._max_name_tokens = min(mx, 12)

    def _trigram_index(self) -> tuple[list[str], list[list[int]], dict[str, np.ndarray],
                                      np.ndarray]:
        """Names and aliases (normalised) with a trigram -> key-positions inverted index."""
        if self._tri is None:
            merged: dict[str, list[int]] = {}
            for table in (self._name_index, self._alias_index):
                for key, lst in table.items():
                    merged.setdefault(key, []).extend(lst)
            keys = list(merged)
            post_l: dict[str, list[int]] = {}
            ntri = np.zeros(len(keys), dtype=np.float64)
            for ki, key in enumerate(keys):
                tg = _trigrams(key)
                ntri[ki] = len(tg)
                for t in tg:
                    post_l.setdefault(t, []).append(ki)
            post = {t: np.asarray(v, dtype=np.int32) for t, v in post_l.items()}
            self._tri = (keys, [merged[k] for k in keys], post, ntri)
        return self._tri

    def link_entities(self, text: str, k: int = 5, embedder: Any = None, *,
                      fuzzy_threshold: float = 0.85, embedding_threshold: float = 0.55,
                      max_embed_entities: int = 100_000, fuzzy: bool = True,
                      max_fuzzy_candidates: int = 50) -> list[tuple[str, float, str]]:
        """Entities mentioned in ``text``: ``[(entity id, score, how)]`` best first.

        ``how`` is ``exact`` (a name occurs as a phrase: score 1.0 when written with the
        name's case, else 0.95, so "the director" ranks below "Glass Harbor"), ``alias`` (an
        alias occurs, 0.9 / 0.85), ``fuzzy`` (a phrase is close to a name or alias by character
        similarity >= ``fuzzy_threshold``; score 0.8 x similarity) or ``embedding`` (with an
        embedder: cosine similarity of a phrase and a name >= ``embedding_threshold``, times
        0.75; done when the graph has at most ``max_embed_entities`` entities).
        Fuzzy candidates come from a character-trigram index (built on first use; at most
        ``max_fuzzy_candidates`` per phrase); ``fuzzy=False`` skips that stage.
        Matching is case- and accent-insensitive on word boundaries.
        """
        self._build_name_indexes()
        toks = normalize_name(text).split()
        if not toks:
            return []
        best: dict[int, tuple[float, str, int]] = {}   # idx -> (score, how, span length)

        def offer(i: int, score: float, how: str, span: int) -> None:
            cur = best.get(i)
            cand = (score, how, span)
            if cur is None or (score, -HOW_ORDER[how], span) > (cur[0], -HOW_ORDER[cur[1]], cur[2]):
                best[i] = cand

        grams: list[tuple[str, int]] = []
        for n in range(1, min(self._max_name_tokens, len(toks)) + 1):
            for s in range(0, len(toks) - n + 1):
                g = toks[s:s + n]
                if all(t in STOPWORDS for t in g):
                    continue
                grams.append((" ".join(g), n))
        names_list = self._names()
        for g, n in grams:
            for i in self._name_index.get(g, ()):
                # written as the name is (same case) -> 1.0; only case-insensitively -> 0.95
                offer(i, 1.0 if names_list[i] in text else 0.95, "exact", n)
            for i in self._alias_index.get(g, ()):
                cased = any(a in text for a in self._aliases.get(i, ()))
                offer(i, 0.9 if cased else 0.85, "alias", n)

        # fuzzy: character-trigram candidates (numpy), then difflib similarity
        keys, key_ents, post, ntri = self._trigram_index() if fuzzy else ([], [], {}, None)
        sm = difflib.SequenceMatcher(autojunk=False)
        thr = fuzzy_threshold
        best_key: dict[int, float] = {}
        for g, n in grams:
            if len(g) < 4:
                continue
            tg = _trigrams(g)
            # trigrams shared by a large part of the names ("ent", " th") tell nothing
            common = max(1000, len(keys) // 20)
            lists = [post[t] for t in tg if t in post and len(post[t]) <= common]
            if not lists:
                continue
            hits = np.bincount(np.concatenate(lists), minlength=len(keys))
            # share of the phrase's informative trigrams found in each name
            cand = np.flatnonzero(hits * 2 >= len(lists))
            if len(cand) > max_fuzzy_candidates:
                closeness = np.abs(ntri[cand] - len(tg))
                order = np.lexsort((closeness, -hits[cand]))
                cand = cand[order[:max_fuzzy_candidates]]
            for ki in cand.tolist():
                key = keys[ki]
                if key == g or len(key) < 4:
                    continue
                lk, lg = len(key), len(g)
                if 2.0 * min(lk, lg) / (lk + lg) < thr:
                    continue
                sm.set_seqs(g, key)
                if sm.quick_ratio() < thr:
                    continue
                r = sm.ratio()
                if r >= thr and r > best_key.get(ki, 0.0):
                    best_key[ki] = r
        for ki, r in best_key.items():
            nk = keys[ki].count(" ") + 1
            for i in key_ents[ki]:
                offer(i, 0.8 * r, "fuzzy", nk)

        if embedder is not None and 0 < self.n_entities <= max_embed_entities:
            E = self._name_embeddings(embedder)
            phrases = list(dict.fromkeys(g for g, n in grams if n <= 4))
            if phrases:
                Q = embedder.encode(phrases)
                sims = (E @ Q.T).max(axis=1)
                for i in np.flatnonzero(sims >= embedding_threshold).tolist():
                    offer(i, 0.75 * float(sims[i]), "embedding", 0)

        ids = self._ids()
        ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], HOW_ORDER[kv[1][1]],
                                                       -kv[1][2], kv[0]))
        return [(ids[i], round(sc, 6), how) for i, (sc, how, _) in ranked[:k]]

    def _name_embeddings(self, embedder: Any) -> np.ndarray:
        key = getattr(embedder, "key", repr(embedder))
        if self._name_emb is None or self._name_emb[0] != key:
            self._name_emb = (key, embedder.encode(self._names(), memo=False,
                                                   show_progress=self.n_entities > 2000))
        return self._name_emb[1]

    # ------------------------------------------------------------------ reporting
    def memory_bytes(self) -> int:
        """Bytes held by the triple columns and adjacency (not the entity strings)."""
        n = self.h.nbytes + self.r.nbytes + self.t.nbytes
        if self._csr is not None:
            n += sum(a.nbytes for a in self._csr)
        return int(n)

    def stats(self) -> dict[str, Any]:
        return {"entities": self.n_entities, "triples": self.n_triples,
                "relations": len(self.relations), "load_s": round(self.load_s, 4),
                "columns_mb": round(self.memory_bytes() / 1e6, 2)}


def _trigrams(text: str) -> set[str]:
    t = f" {text} "
    return {t[i:i + 3] for i in range(len(t) - 2)}


def _first_unique(H: np.ndarray, R: np.ndarray, T: np.ndarray) -> np.ndarray:
    """Indexes of the first occurrence of each (h, r, t), in original order."""
    key = np.stack([H, R, T], axis=1)
    _, first = np.unique(key, axis=0, return_index=True)
    return np.sort(first)


def _transition(rows: np.ndarray, cols: np.ndarray, n: int, directed: bool):
    """Column-stochastic transition matrix (n x n, CSR) and the dangling-node mask."""
    import scipy.sparse as sp
    if not directed:
        rows, cols = np.concatenate([rows, cols]), np.concatenate([cols, rows])
    A = sp.csr_matrix((np.ones(len(rows), dtype=np.float64), (rows, cols)), shape=(n, n))
    out_deg = np.asarray(A.sum(axis=1)).ravel()
    inv = np.divide(1.0, out_deg, out=np.zeros(n), where=out_deg > 0)
    M = (sp.diags(inv) @ A).T.tocsr()        # M[j, i] = P(i -> j)
    return M, out_deg == 0


def load_kg(directory: str | Path) -> KnowledgeGraph:
    return KnowledgeGraph.load(directory)


__all__ = ["KnowledgeGraph", "load_kg", "TripleT"]
