"""Structural diff of two runs of one question: which nodes correspond, what each run did
alone, and the first node where the runs stop agreeing.

Alignment
---------
- **By node id**, when the runs share a parent: one is a counterfactual of the other
  (``parent_run_id`` in its ``run_started`` meta names the other), or both are
  counterfactuals of one run. Node identity carries over such re-runs, so an id is the
  correspondence.
- **By meaning** otherwise (two methods, or one method under two knob settings): each
  node's text (sub-question, plan step, path, ...) is embedded; two nodes are alike by the
  cosine of their texts or, when both retrieved, by the Jaccard overlap of what they
  retrieved, whichever is higher (a step reworded around the same passages is the same
  step). An optimal one-to-one matching (Hungarian algorithm) maximises the total
  likeness over the pairs at or above ``threshold``; pairs below it are not matches. The
  two question nodes and the two answer nodes always correspond: both runs start from the
  question and end at an answer, whatever it says (a step that paraphrases the question
  must not take the question's place).

Agreement of a pair: the same evidence (passage ids; for KG items the triples they
carry, so path ids local to a run do not count), the same intermediate answer (compared
after SQuAD normalisation, only where both nodes carry one), and, for id-aligned pairs,
the same text; for two runs of one method, the same verdict too (where both nodes were
judged: sufficient, pruned, verified, ...; a node one run had not judged yet is progress,
not disagreement).

First divergence: nodes are walked in the order each run made them (by position in its
run, the two runs interleaved); the first node with no counterpart, or the first pair
that disagrees, is where the runs part ways.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..eval.metrics import normalize_answer
from ..trace import Node, Trace
from ..triage import gold as G
from ..viz.safe import shorten

DEFAULT_THRESHOLD = 0.7
# a tie-break only: among equally alike candidates, prefer the one made at the same point
# of its run (CRP-RAG's near-duplicate proposals would otherwise pair at random)
_ORDER_WEIGHT = 0.01
# intermediate answers, in the order a node's attributes are read (long outputs left out)
INTERMEDIATE_KEYS = ("answer_final", "answer", "result", "step_result", "final_answer",
                     "eval_answer")

# states that record a judgement; the others record progress (an interrupted run stops
# between "retrieved" and "aggregated" without disagreeing with anything)
JUDGED = frozenset({"sufficient", "insufficient", "verified", "failed_verification",
                    "pruned", "selected", "unknown", "refused", "capped", "parse_failed"})

Embed = Callable[[Sequence[str]], np.ndarray]


@dataclass
class Pair:
    a: str
    b: str
    similarity: float                  # cosine of the two texts
    evidence_overlap: float | None     # Jaccard of the retrieved items; None: neither retrieved
    by: str                            # "node id" | "meaning" | "evidence" | "answer"
    shared: list[str] = field(default_factory=list)
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    answer_a: str | None = None
    answer_b: str | None = None
    differs: list[str] = field(default_factory=list)   # text | evidence | answer | verdict


@dataclass
class Divergence:
    kind: str                          # only_a | only_b | text | evidence | answer | verdict
    node_a: str | None
    node_b: str | None
    reason: str


@dataclass
class RunDiff:
    run_a: str
    run_b: str
    method_a: str
    method_b: str
    question: str
    aligned_by: str                    # "node id" | "meaning"
    threshold: float
    pairs: list[Pair]
    only_a: list[str]
    only_b: list[str]
    first_divergence: Divergence | None
    order: list[tuple[str, str | None, str | None]]    # (side, a, b) in walk order

    def pair_of(self, side: str, nid: str) -> Pair | None:
        return next((p for p in self.pairs if (p.a if side == "a" else p.b) == nid), None)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("order")
        return d

    def lines(self, a: Trace, b: Trace) -> list[str]:
        """The diff as text (the CLI prints it; run text is shortened, never interpreted)."""
        la, lb = self.label("a"), self.label("b")
        status = {"a": a.status, "b": b.status}
        la, lb = (x + (f" [{status[k]}]" if status[k] != "finished" else "")
                  for k, x in (("a", la), ("b", lb)))
        out = [f"A: {la}  B: {lb}  question: {shorten(self.question, 100)!r}",
               f"aligned by {self.aligned_by}" + (f" (threshold {self.threshold:g})"
                                                  if self.aligned_by == "meaning" else "")
               + f": {len(self.pairs)} matched, {len(self.only_a)} only in A, "
                 f"{len(self.only_b)} only in B"]
        for side, na, nb in self.order:
            if side == "both":
                p = self.pair_of("a", na)
                ev = ("" if p.evidence_overlap is None else
                      f" evidence {len(p.shared)} shared/{len(p.only_a)} A/{len(p.only_b)} B")
                flag = f"  differs: {', '.join(p.differs)}" if p.differs else ""
                out.append(f"  = {na:>10s} ~ {nb:<10s} sim {p.similarity:.2f}{ev}{flag}  "
                           f"{shorten(a.nodes[na].text, 60)!r}")
            elif side == "a":
                out.append(f"  A {na:>10s}   {'':10s} {shorten(a.nodes[na].text, 60)!r}")
            else:
                out.append(f"  B {'':10s}   {nb:<10s} {shorten(b.nodes[nb].text, 60)!r}")
        fd = self.first_divergence
        out.append("first divergence: " + (f"{fd.reason}" if fd else
                                           "none; the runs agree on every node"))
        return out

    def label(self, side: str) -> str:
        return f"{self.method_a} {self.run_a}" if side == "a" else f"{self.method_b} {self.run_b}"


# ---------------------------------------------------------------- pieces

def same_question(a: Trace, b: Trace) -> None:
    """ValueError unless both runs asked one question (a diff of two questions is noise)."""
    qa, qb = G.norm(a.question), G.norm(b.question)
    ida, idb = (a.meta or {}).get("question_id"), (b.meta or {}).get("question_id")
    if qa != qb or (ida and idb and ida != idb and (a.meta or {}).get("dataset")
                    == (b.meta or {}).get("dataset")):
        raise ValueError(
            f"runs {a.run_id or 'A'} and {b.run_id or 'B'} answer different questions "
            f"({shorten(a.question, 60)!r} vs {shorten(b.question, 60)!r}); a diff compares "
            f"two runs of one question: pick two runs of the same question "
            f"(`python -m workbench runs list`)")


def shares_parent(a: Trace, b: Trace) -> bool:
    """One run is a counterfactual of the other, or both of one run."""
    pa, pb = (a.meta or {}).get("parent_run_id"), (b.meta or {}).get("parent_run_id")
    return bool((pa and pa == b.run_id) or (pb and pb == a.run_id) or (pa and pa == pb))


def evidence_keys(node: Node) -> set[str]:
    """What the node retrieved and kept: passage ids, or the triples a KG item carries."""
    keys: set[str] = set()
    for ev in node.evidence:
        for hit in ev.get("hits") or []:
            if not G.kept(hit):
                continue
            trips = G.hit_triples(hit)
            if trips:
                keys |= {"|".join(G.norm(x) for x in t) for t in trips}
            elif hit.get("id") not in (None, ""):
                keys.add(str(hit["id"]))
    return keys


def intermediate_answer(tr: Trace, node: Node) -> str | None:
    if (tr.answer or {}).get("node_id") == node.id:
        return str(tr.answer.get("text") or "")
    for k in INTERMEDIATE_KEYS:
        v = node.attrs.get(k)
        if isinstance(v, str) and v.strip():
            return v
    return None


def question_root(tr: Trace) -> str | None:
    """The node that holds the question itself (every method starts from one)."""
    return next((n.id for n in tr.nodes.values() if n.kind == "question" and not n.parents),
                None)


def node_text(node: Node) -> str:
    return (node.text or "").strip() or node.kind


def match(weights: np.ndarray) -> list[tuple[int, int]]:
    """Maximum-weight one-to-one matching of a (rows, cols) matrix; zero-weight pairs are
    not matches."""
    if weights.size == 0:
        return []
    from scipy.optimize import linear_sum_assignment
    rows, cols = linear_sum_assignment(weights, maximize=True)
    return [(int(r), int(c)) for r, c in zip(rows, cols) if weights[r, c] > 0]


def _jaccard(x: set[str], y: set[str]) -> float | None:
    if not x and not y:
        return None
    return len(x & y) / len(x | y)


def _default_embed(texts: Sequence[str]) -> np.ndarray:
    from ..knowledge.dense import get_embedder
    return get_embedder().encode(list(texts))


# ---------------------------------------------------------------- the diff

def diff_runs(a: Trace, b: Trace, *, threshold: float = DEFAULT_THRESHOLD,
              embed: Embed | None = None, by_id: bool | None = None) -> RunDiff:
    """Diff two folded traces of one question (see the module docstring). ``embed`` maps
    texts to L2-normalised vectors (default: the workbench's sentence embedder);
    ``by_id`` forces (True) or forbids (False) alignment by node id (default: when the
    runs share a parent)."""
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold {threshold} is out of range; give a number in [0, 1]")
    same_question(a, b)
    by_id = shares_parent(a, b) if by_id is None else by_id
    ids_a, ids_b = list(a.nodes), list(b.nodes)
    pos_a = {n: i for i, n in enumerate(ids_a)}
    pos_b = {n: i for i, n in enumerate(ids_b)}
    keys_a = {n: evidence_keys(a.nodes[n]) for n in ids_a}
    keys_b = {n: evidence_keys(b.nodes[n]) for n in ids_b}
    texts = [node_text(a.nodes[n]) for n in ids_a] + [node_text(b.nodes[n]) for n in ids_b]
    vecs = (embed or _default_embed)(texts) if texts else np.zeros((0, 1))
    va, vb = np.asarray(vecs[:len(ids_a)]), np.asarray(vecs[len(ids_a):])
    cos = (va @ vb.T) if len(ids_a) and len(ids_b) else np.zeros((len(ids_a), len(ids_b)))
    cos = np.clip(cos, -1.0, 1.0)

    matched: list[tuple[str, str, str]] = []           # (a, b, by)
    if by_id:
        matched = [(n, n, "node id") for n in ids_a if n in b.nodes]
    else:
        for fa, fb, by in ((question_root(a), question_root(b), "question"),
                           ((a.answer or {}).get("node_id"), (b.answer or {}).get("node_id"),
                            "answer")):
            if fa in a.nodes and fb in b.nodes and fa not in {m[0] for m in matched} \
                    and fb not in {m[1] for m in matched}:
                matched.append((fa, fb, by))
        ra = [n for n in ids_a if n not in {m[0] for m in matched}]
        rb = [n for n in ids_b if n not in {m[1] for m in matched}]
        w = np.zeros((len(ra), len(rb)))
        how = {}
        for i, na in enumerate(ra):
            for j, nb in enumerate(rb):
                t = float(cos[pos_a[na], pos_b[nb]])
                ov = _jaccard(keys_a[na], keys_b[nb]) if keys_a[na] and keys_b[nb] else None
                s, by = (ov, "evidence") if ov is not None and ov > t else (t, "meaning")
                if s >= threshold:
                    drift = abs(pos_a[na] / max(len(ids_a), 1) - pos_b[nb] / max(len(ids_b), 1))
                    w[i, j] = 1.0 + s - _ORDER_WEIGHT * drift
                    how[(i, j)] = by
        matched += [(ra[i], rb[j], how[(i, j)]) for i, j in match(w)]

    same_method = a.method == b.method
    pairs = []
    for na, nb, by in matched:
        ka, kb = keys_a[na], keys_b[nb]
        p = Pair(na, nb, round(float(cos[pos_a[na], pos_b[nb]]), 4),
                 None if _jaccard(ka, kb) is None else round(_jaccard(ka, kb), 4), by,
                 sorted(ka & kb), sorted(ka - kb), sorted(kb - ka),
                 intermediate_answer(a, a.nodes[na]), intermediate_answer(b, b.nodes[nb]))
        if by == "node id" and p.similarity < threshold:
            p.differs.append("text")
        if ka != kb:
            p.differs.append("evidence")
        if p.answer_a is not None and p.answer_b is not None and \
                normalize_answer(p.answer_a) != normalize_answer(p.answer_b):
            p.differs.append("answer")
        sa, sb = a.nodes[na].state, b.nodes[nb].state
        if same_method and sa != sb and sa in JUDGED and sb in JUDGED:
            p.differs.append("verdict")
        pairs.append(p)
    in_a = {p.a for p in pairs}
    in_b = {p.b for p in pairs}
    only_a = [n for n in ids_a if n not in in_a]
    only_b = [n for n in ids_b if n not in in_b]

    inf = float("inf")
    walk = [((min(pos_a[p.a], pos_b[p.b]), 0, max(pos_a[p.a], pos_b[p.b])), ("both", p.a, p.b))
            for p in pairs]
    walk += [((pos_a[n], 1, inf), ("a", n, None)) for n in only_a]
    walk += [((pos_b[n], 2, inf), ("b", None, n)) for n in only_b]
    order = [x for _, x in sorted(walk, key=lambda t: t[0])]
    d = RunDiff(a.run_id, b.run_id, a.method, b.method, a.question,
                "node id" if by_id else "meaning", threshold, pairs, only_a, only_b, None, order)
    d.first_divergence = _first_divergence(d, a, b, cos, pos_a, pos_b)
    return d


def _first_divergence(d: RunDiff, a: Trace, b: Trace, cos: np.ndarray,
                      pos_a: dict[str, int], pos_b: dict[str, int]) -> Divergence | None:
    for side, na, nb in d.order:
        if side == "a":
            return Divergence("only_a", na, None, _unmatched(d, "a", a.nodes[na], cos, pos_a,
                                                             pos_b, b))
        if side == "b":
            return Divergence("only_b", None, nb, _unmatched(d, "b", b.nodes[nb], cos, pos_b,
                                                             pos_a, a))
        p = d.pair_of("a", na)
        if not p.differs:
            continue
        what = _what(a.nodes[na], na, nb)
        k = p.differs[0]
        final = (a.answer or {}).get("node_id") == na
        if k == "text":
            why = (f"the runs asked different things at {what}: "
                   f"{shorten(a.nodes[na].text, 60)!r} vs {shorten(b.nodes[nb].text, 60)!r} "
                   f"(similarity {p.similarity:.2f}).")
        elif k == "evidence":
            why = (f"the runs retrieved different evidence at {what}: {len(p.shared)} item(s) "
                   f"shared, {len(p.only_a)} only in A, {len(p.only_b)} only in B.")
        elif k == "answer":
            why = (f"the runs gave different {'final' if final else 'intermediate'} answers at "
                   f"{what}: {shorten(p.answer_a, 60)!r} vs {shorten(p.answer_b, 60)!r}.")
        else:
            why = (f"the runs judged {what} differently: {a.nodes[na].state} in A, "
                   f"{b.nodes[nb].state} in B.")
        return Divergence(k, na, nb, why[0].upper() + why[1:])
    return None


def _what(node: Node, na: str, nb: str) -> str:
    ids = na if na == nb else f"{na} / {nb}"
    return f"{node.kind} {ids} ({shorten(node.text, 50)!r})"


def _unmatched(d: RunDiff, side: str, node: Node, cos: np.ndarray, pos_self: dict[str, int],
               pos_other: dict[str, int], other: Trace) -> str:
    me, them = ("A", "B") if side == "a" else ("B", "A")
    head = (f"{me} made {node.kind} {node.id} ({shorten(node.text, 60)!r}) with no "
            f"counterpart in {them}")
    if d.aligned_by == "node id":
        return head + f": {them} has no node {node.id}."
    if not other.nodes:
        return head + f": {them} made no nodes."
    row = cos[pos_self[node.id], :] if side == "a" else cos[:, pos_self[node.id]]
    j = int(np.argmax(row))
    best = list(other.nodes)[j]
    what = f"the closest, {best} ({shorten(other.nodes[best].text, 40)!r}), is"
    if row[j] < d.threshold:
        return head + f"; {what} {float(row[j]):.2f} alike, below the threshold {d.threshold:g}."
    p = d.pair_of("b" if side == "a" else "a", best)
    mate = (p.a if side == "a" else p.b) if p else "?"
    return head + (f"; {what} {float(row[j]):.2f} alike but matched to {me}'s {mate}, "
                   f"which is more alike to it or in a better place.")


# ---------------------------------------------------------------- merged graph

def merged_trace(d: RunDiff, a: Trace, b: Trace) -> tuple[Trace, dict[str, str]]:
    """One graph of both runs for drawing: a matched pair is one node, each run's own
    nodes stay apart, edges of both runs are kept. Returns the trace and each merged
    node's side ("both" | "a" | "b")."""
    ma: dict[str, str] = {}
    mb: dict[str, str] = {}
    side: dict[str, str] = {}
    m = Trace(run_id=f"{d.run_a}~{d.run_b}", question=d.question, method="diff")
    for s, na, nb in d.order:
        if s == "both":
            mid = na if na == nb else f"{na}={nb}"
            src = a.nodes[na]
            other = b.nodes[nb]
            attrs = {"text_b": other.text} if other.text != src.text else {}
        elif s == "a":
            mid, src, attrs = f"A·{na}", a.nodes[na], {}
        else:
            mid, src, attrs = f"B·{nb}", b.nodes[nb], {}
        if na:
            ma[na] = mid
        if nb:
            mb[nb] = mid
        side[mid] = s
        m.nodes[mid] = Node(id=mid, kind=src.kind, text=src.text, state=src.state,
                            layer=src.layer, attrs=attrs)
    for tr, mp in ((a, ma), (b, mb)):
        for e in tr.edges:
            if e["src"] in mp and e["dst"] in mp and mp[e["src"]] != mp[e["dst"]]:
                m._link(mp[e["src"]], mp[e["dst"]], e.get("kind", "next"), {})
    return m, side


def merged_id(d: RunDiff, side: str, nid: str | None) -> str | None:
    """The merged graph's id of one run's node."""
    if nid is None:
        return None
    p = d.pair_of(side, nid)
    if p is not None:
        return p.a if p.a == p.b else f"{p.a}={p.b}"
    return f"{'A' if side == 'a' else 'B'}·{nid}"
