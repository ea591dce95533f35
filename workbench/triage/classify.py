"""Knowledge-centric failure triage of one run: where in the graph did it go wrong?

Everything is derived from the stored trace (its ``retrieved`` events, its graph and its
answer) and the question's gold (recorded in ``run_started``), so any stored run can be
triaged, old ones included, and the result is deterministic.

Inputs
------
- **hops**: the gold evidence as hops (see :mod:`workbench.triage.gold`: HotpotQA's
  supporting titles, MuSiQue's decomposition steps, the demo world's gold titles or gold
  path triples, WebQSP/CWQ's answer entities), chosen by what the run retrieved.
- **found**: the hops held by any retrieved item of the run, on any node (node level).
  **found_q**: the hops held by retrievals made with the question itself (query equal to
  the question, case and spacing ignored), what single-shot retrieval sees; "n/a" when the
  method never queries with the question.
- **correct**: the run's stored verdict (``runs.correct``: the eval's primary metric, or
  the Ask page's contains-gold check); when none is stored, contains-gold on the answer.
- **refused**: the answer event says refused, the run ended ``refused``, the method
  flagged its answer as "unknown" (``idk`` on the answer node), or the answer says
  "I don't know".
- **contained**: a gold answer occurs (normalised, whole tokens) in the answer or in the
  method's full output (``full_answer`` / ``raw_output``).

Failure class (first rule that applies)
---------------------------------------
Not triaged (class ``None``, with the reason): the run did not finish (failed,
interrupted, running), the question has no gold answer (unanswerable) or no gold evidence.

====================  =========================================================
``correct``           the verdict is correct (whatever was retrieved)
``answer_format``     not correct, not refused, but the gold answer is contained in
                      the output: the metric failed on the form of the answer
``wrong_refusal``     refused although every hop was retrieved
``reasoning_error``   a wrong answer although every hop was retrieved
``partial_retrieval`` some but not all hops retrieved (refused or wrong)
``retrieval_miss``    no hop retrieved anywhere, and the method refused (it knew
                      it lacked the knowledge; the failure is retrieval's)
``hallucination``     no hop retrieved anywhere, and a wrong answer was given
====================  =========================================================

So ``correct`` wins over ``answer_format`` (the stored verdict decides correctness, as
on every chart), ``answer_format`` wins over the evidence classes, and with no evidence
the answer's form decides between ``retrieval_miss`` (refused) and ``hallucination``.

Breaking node (wrong runs)
--------------------------
The **answer path** is the answer (or refusal) node and its ancestors; where the method
recorded selected paths, nodes that lie only on pruned or unused paths are left out; a
refusal's ``closest_path`` is added. Nodes keep the order in which they were created.

- ``retrieval_miss``, ``hallucination``, ``partial_retrieval``: walk the path's
  retrieving nodes (nodes with a ``retrieved`` event) in order, tracking the hops found
  so far; the first node that found no new hop breaks the chain (for example the
  sub-question whose retrieval missed the second hop). If every one found something new,
  the last one (the chain stopped before the missing hop); with no retrieval on the path,
  the answer node (it answered from the model alone).
- ``reasoning_error``, ``wrong_refusal``: the evidence was there, so the break is the
  first node of the run (anywhere in the graph) in a rejecting state (insufficient,
  failed_verification, pruned, refused, unknown, parse_failed, capped) at or below a node
  that holds gold evidence (it threw the knowledge away); else the answer node (the final
  reasoning step lost it).
- ``answer_format``: the answer node, or the answer-extraction node it hangs from where the
  method read a short answer out of a long one (the span lost or mangled the gold answer).

Node marks: every node records the hops its own retrievals hold (which gold passage or
triple, matched how, at which rank) and, when the question has a decomposition, the
sub-question it corresponds to (token F1 of the node's question/query against each gold
sub-question, ``#n`` placeholders dropped; the best step and its score are kept, a match
when the score is at least 0.5).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..eval import metrics as M
from . import gold as G

VERSION = 1
CLASSES = ("correct", "retrieval_miss", "partial_retrieval", "reasoning_error",
           "answer_format", "wrong_refusal", "hallucination")
CLASS_LABELS = {
    "correct": "correct", "retrieval_miss": "retrieval miss",
    "partial_retrieval": "partial retrieval", "reasoning_error": "reasoning error",
    "answer_format": "answer format", "wrong_refusal": "wrong refusal",
    "hallucination": "hallucination",
}
CLASS_HELP = {
    "correct": "The answer is right (stored verdict).",
    "answer_format": "Wrong by the metric, but the gold answer is in the output.",
    "wrong_refusal": "Refused although every gold hop was retrieved.",
    "reasoning_error": "Every gold hop was retrieved, yet the answer is wrong.",
    "partial_retrieval": "Some gold hops were retrieved, others never were.",
    "retrieval_miss": "No gold hop was retrieved and the method refused.",
    "hallucination": "No gold hop was retrieved, yet the method answered (wrongly).",
}
REJECTING_STATES = frozenset({"insufficient", "failed_verification", "pruned", "refused",
                              "unknown", "parse_failed", "capped"})
STEP_MATCH = 0.5
_PLACEHOLDER = re.compile(r"#\d+")
_QUERY_ATTRS = ("question_executed", "question", "sub_question", "query")

# Triage looks for a gold answer in texts: the lenient profile (typographic quotes and
# Unicode folded) so that a passage spelling "O’Brien" still holds the gold "O'Brien".
_DIAG = M.LEGACY_PROFILE


@dataclass
class Triage:
    failure_class: str | None
    reason: str
    version: int = VERSION
    break_node: str | None = None
    break_kind: str | None = None
    break_why: str = ""
    knowledge: str | None = None          # passages | triples | entities
    gold_source: str = ""
    hops: list[str] = field(default_factory=list)
    found: list[int] = field(default_factory=list)
    found_q: list[int] | None = None
    correct: bool | None = None
    refused: bool = False
    contained: bool = False
    marks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    path: list[str] = field(default_factory=list)

    @property
    def recall_node(self) -> float | None:
        return len(self.found) / len(self.hops) if self.hops else None

    @property
    def recall_q(self) -> float | None:
        if not self.hops or self.found_q is None:
            return None
        return len(self.found_q) / len(self.hops)

    def node_hops(self, node_id: str) -> list[int]:
        return sorted({m["hop"] for m in self.marks.get(node_id, [])})

    def gold_held(self, node_id: str) -> list[str]:
        """What the node's retrievals hold, one line per gold hop."""
        out = []
        for m in self.marks.get(node_id, []):
            if m["hop"] < len(self.hops):
                rank = f", rank {m['rank']}" if m.get("rank") is not None else ""
                how = "a triple from its passage" if m["how"] == "source" else m["how"]
                out.append(f"hop {m['hop'] + 1}: {self.hops[m['hop']]} (by {how}{rank})")
        return out

    def overlay(self) -> dict[str, Any]:
        """What the graph draws: gold markers per node and the breaking node."""
        return {"gold": {nid: self.gold_held(nid) for nid in self.marks},
                "n_hops": len(self.hops), "break": self.break_node, "why": self.break_why,
                "class": self.failure_class}

    def to_dict(self) -> dict[str, Any]:
        # shallow: callers serialise it at once (asdict's deep copy cost 1 ms a run)
        d = {f: getattr(self, f) for f in self.__dataclass_fields__}
        d["recall_node"], d["recall_q"] = self.recall_node, self.recall_q
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Triage":
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


# ---------------------------------------------------------------- pieces

def retrieved_kind(tr: Any) -> str | None:
    """triples if the run retrieved any KG item, passages if it retrieved anything else."""
    any_hit = False
    for n in tr.nodes.values():
        for ev in n.evidence:
            for h in ev.get("hits") or []:
                if G.is_kg_hit(h, ev.get("retriever", "")):
                    return G.TRIPLES
                any_hit = True
    return G.PASSAGES if any_hit else None


def node_marks(tr: Any, hops: Sequence[G.Hop]) -> dict[str, list[dict[str, Any]]]:
    out = {}
    for nid, n in tr.nodes.items():
        got = G.match_evidence(n.evidence, hops)
        if got:
            out[nid] = [h.to_dict() for h in got]
    return out


def _node_query(n: Any) -> str:
    for k in _QUERY_ATTRS:
        v = n.attrs.get(k)
        if isinstance(v, str) and v.strip():
            return v
    return n.text or ""


def step_matches(tr: Any, decomposition: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Node -> best gold sub-question (index, text, token-F1 score, matched)."""
    gold = [str(d.get("question") or "") if isinstance(d, dict) else str(d)
            for d in decomposition or []]
    gtok = [M.tokens(_PLACEHOLDER.sub(" ", g), _DIAG) for g in gold]
    if not any(gtok):
        return {}
    out = {}
    for nid, n in tr.nodes.items():
        if n.kind in ("question", "answer", "refusal") or \
                (n.kind not in M.SUBQ_NODE_KINDS and not n.evidence):
            continue
        ptok = M.tokens(_PLACEHOLDER.sub(" ", _node_query(n)), _DIAG)
        if not ptok:
            continue
        scores = [M._f1(ptok, g) if g else 0.0 for g in gtok]
        best = max(range(len(scores)), key=lambda i: (scores[i], -i))
        out[nid] = {"step": best, "question": gold[best], "score": round(scores[best], 4),
                    "matched": scores[best] >= STEP_MATCH}
    return out


def _descendants(tr: Any, roots: set[str]) -> set[str]:
    seen, stack = set(roots), list(roots)
    while stack:
        for c in tr.nodes[stack.pop()].children:
            if c in tr.nodes and c not in seen:
                seen.add(c)
                stack.append(c)
    return seen


def _golds(q: dict[str, Any]) -> list[str]:
    return [g for g in list(q.get("answers") or []) + list(q.get("aliases") or []) if g]


def _outputs(tr: Any) -> list[str]:
    ans = tr.answer or {}
    out = [ans.get("text") or ""]
    info = ans.get("info") or {}
    node = tr.nodes.get(ans.get("node_id"))
    for src in (ans, info, node.attrs if node else {}):
        for k in ("full_answer", "raw_output"):
            if isinstance(src.get(k), str):
                out.append(src[k])
    return out


def _refused(tr: Any) -> bool:
    ans = tr.answer or {}
    node = tr.nodes.get(ans.get("node_id"))
    return bool(ans.get("refused")) or tr.status == "refused" or \
        M.says_idk(ans.get("text")) or bool(node is not None and node.attrs.get("idk") is True)


def _q_found(tr: Any, hops: Sequence[G.Hop]) -> list[int] | None:
    """Hops held by retrievals made with the question itself; None when there were none."""
    q = G.norm(tr.question)
    evs = [ev for n in tr.nodes.values() for ev in n.evidence if G.norm(ev.get("query")) == q]
    return sorted({h.hop for h in G.match_evidence(evs, hops)}) if evs else None


# ---------------------------------------------------------------- the triage

def triage(tr: Any, question: Any = None, correct: bool | None = None) -> Triage:
    """Triage a folded trace. ``question``: the gold question (dict or Question; default
    the gold recorded in the trace); ``correct``: the stored verdict, if any."""
    q = question if question is not None else (tr.meta or {}).get("gold")
    q = G.as_dict(q)
    verdict = None if correct is None else bool(correct)
    if tr.status not in ("finished", "refused"):
        return Triage(None, f"the run did not finish ({tr.status})", correct=verdict)
    if not q:
        return Triage(None, "no gold for this question (typed by hand, or not recorded)",
                      correct=verdict)
    golds = _golds(q)
    if not golds or q.get("answerable") is False:
        return Triage(None, "the question has no gold answer (unanswerable)", correct=verdict)
    kind = retrieved_kind(tr)
    ge = G.gold_evidence(q, kind)
    if ge is None:
        return Triage(None, "the question has no gold evidence (no supporting passages, "
                            "decomposition, gold path or answer entities)", correct=verdict)
    refused = _refused(tr)
    if correct is None:
        correct = bool(M.contains_match((tr.answer or {}).get("text"), golds, _DIAG)) \
            and not refused
    contained = not refused and any(M.contains_match(o, golds, _DIAG) for o in _outputs(tr))
    marks = node_marks(tr, ge.hops)
    found = sorted({m["hop"] for ms in marks.values() for m in ms})
    found_q = _q_found(tr, ge.hops)
    n = len(ge.hops)
    if correct:
        cls = "correct"
    elif contained:
        cls = "answer_format"
    elif len(found) == n:
        cls = "wrong_refusal" if refused else "reasoning_error"
    elif found:
        cls = "partial_retrieval"
    else:
        cls = "retrieval_miss" if refused else "hallucination"
    path = tr.answer_path()
    t = Triage(cls, CLASS_HELP[cls], knowledge=ge.kind, gold_source=ge.source,
               hops=ge.labels(), found=found, found_q=found_q, correct=bool(correct),
               refused=refused, contained=contained, marks=marks,
               steps=step_matches(tr, q.get("decomposition") or []), path=path)
    if cls != "correct":
        t.break_node, t.break_why = breaking_node(tr, t, ge.hops)
        if t.break_node in tr.nodes:
            t.break_kind = tr.nodes[t.break_node].kind
    return t


def breaking_node(tr: Any, t: Triage, hops: Sequence[G.Hop]) -> tuple[str | None, str]:
    aid = (tr.answer or {}).get("node_id")
    if t.failure_class == "answer_format":
        x = [p for p in (tr.nodes[aid].parents if aid in tr.nodes else [])
             if p in tr.nodes and tr.nodes[p].kind == "answer_extraction"]
        if x:
            return x[0], ("the method's output holds the gold answer, but the short answer "
                          "extracted here is not in the form the metric accepts")
        return aid, "the answer holds the gold answer, but not in the form the metric accepts"
    missing = [hops[i].label for i in range(len(hops)) if i not in t.found]
    if t.failure_class in ("retrieval_miss", "hallucination", "partial_retrieval"):
        retrieving = [nid for nid in t.path if tr.nodes[nid].evidence]
        have: set[int] = set()
        for nid in retrieving:
            mine = set(t.node_hops(nid))
            if not mine - have:
                query = tr.nodes[nid].evidence[0].get("query") or _node_query(tr.nodes[nid])
                return nid, (f"its retrieval ({_short(query)!r}) found no new gold evidence; "
                             f"never retrieved: {', '.join(missing)}")
            have |= mine
        if retrieving:
            return retrieving[-1], ("the chain stopped after this retrieval; never retrieved: "
                                    + ", ".join(missing))
        return aid, "no retrieval on the answer's path: the model answered from its own memory"
    holders = {nid for nid in t.marks}
    below = _descendants(tr, holders) if holders else set()
    for nid, n in tr.nodes.items():
        if nid in below and n.state in REJECTING_STATES:
            return nid, (f"all gold evidence was retrieved, but this node was marked "
                         f"{n.state}")
    return aid, ("all gold evidence was retrieved, but the final answer "
                 + ("refused" if t.refused else "is wrong"))


def _short(s: str, n: int = 80) -> str:
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[: n - 1] + "…"
