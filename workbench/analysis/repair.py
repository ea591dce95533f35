"""Gold repair over an eval: would the gold evidence have fixed each wrong run?

For every wrong run of an eval that triage gave a breaking node (workbench/triage), on a
question whose gold evidence is dataset passages (HotpotQA's supporting facts, MuSiQue's
decomposition paragraphs, the demo world's gold passages), the gold passages the node's
own retrieval lacked are added to it, ahead of its own hits (as if it had ranked them
first, so that a top-k cut or a merge after the retrieval keeps them), and the run is
replayed behind its own stored calls (a what-if, analysis/whatif.py): only the calls
downstream of the change run on the model. A replay in which no call changed (the gold
reached no prompt) tested nothing and is skipped as ``not_reached``.
The replayed answer is scored with the eval's own primary metric. A failure the gold
evidence repairs is a *retrieval failure by intervention*; one it does not repair is a
*reasoning failure by intervention*. Set beside the triage class (retrieval side:
retrieval_miss, partial_retrieval, hallucination; reasoning side: reasoning_error,
wrong_refusal, answer_format) the two verdicts give a 2x2 table and an agreement share.

Two scopes:

- ``breaking``: the breaking node gets the gold passages its own retrievals lacked (one
  what-if on one node). A breaking node that retrieves nothing (an answer, a verification)
  hands them to the nearest node above it that retrieves (``via`` says so); one with no
  retrieving node above it (vanilla's answer) is skipped.
- ``all``: every node that retrieves gets the gold passages its retrieval lacks, in one
  replay. A what-if intervention names one node, so the first node (in retrieval order)
  that lacks gold is the recorded intervention, with the passages it lacked as
  ``add_ids``; every later retrieval is checked as it happens and given the gold passages
  it lacks (a node is compared by passage id or title, as triage does). Every addition is
  listed in the re-run's ``intervention_applied`` event (``applied``). Re-running the
  child run with a second what-if would not compose: retrieval is recomputed on a
  re-run, so the first addition would be lost.

A node that already held every gold passage needs no replay: the unchanged run replays
to the same answer, so it counts as not repaired (``held``).

Results are stored with the run they repair, without a schema change: ``runs.metrics``
of the wrong run gets ``gold_repair.<scope>`` (status, reason, the child run, its answer
and verdict, call counts); the child run is a stored what-if (``runs.parent_run_id``,
the intervention in ``run_started``) whose ``runs.metrics.gold_repair`` names the eval
and scope. :func:`summary` reads them back per method.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable

from .. import trace as T
from ..methods.intervene import Apply, Interventions, Intervention, added_hits
from ..triage import gold as G
from .whatif import WhatIfError, check, whatif

VERSION = 1
SCOPES = ("breaking", "all")
RETRIEVAL_SIDE = ("retrieval_miss", "partial_retrieval", "hallucination")
REASONING_SIDE = ("reasoning_error", "wrong_refusal", "answer_format")
# skip reasons (short keys) and their words
SKIPS = {
    "not_triaged": "not triaged",
    "no_break": "no breaking node",
    "kg_gold": "gold is KG triples, no passage ids",
    "no_gold": "no gold passages in the corpus",
    "no_evidence": "nothing at or above the breaking node retrieves",
    "no_retrieval": "the run retrieved nothing",
    "not_replayable": "cannot be replayed",
    "not_applicable": "method takes no evidence there",
    "not_reached": "the added gold reached no LLM call",
}
JUDGED = ("acc_lm",)        # primaries that need an LLM judge: scored by contains instead


class RepairError(ValueError):
    """Bad input for a gold repair; nothing was written."""


@dataclass
class Target:
    """One wrong run and what the repair does with it."""
    run_id: str
    question_id: str
    method: str
    variant: str
    series: str
    triage_class: str | None
    break_node: str | None
    action: str = "replay"            # replay | held | skipped | done (stored earlier)
    skip: str = ""                    # a SKIPS key
    reason: str = ""
    node: str | None = None           # the intervention's node
    via: str = ""                     # why that is not the breaking node (scope breaking)
    add_ids: list[str] = field(default_factory=list)
    missing: dict[str, list[str]] = field(default_factory=dict)   # node -> gold labels lacked
    unresolved: list[str] = field(default_factory=list)  # gold titles not in the corpus
    primary: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Plan:
    eval_id: str
    scope: str
    dataset: str
    model_name: str | None
    model_sha256: str | None
    spec: dict[str, Any]
    targets: list[Target]

    @property
    def todo(self) -> list[Target]:
        return [t for t in self.targets if t.action == "replay"]


# ---------------------------------------------------------------- gold passages

class GoldIndex:
    """A dataset's passages by id and by title (chunks of one article share its title)."""

    def __init__(self, ds: Any):
        self.ds = ds
        self._titles: dict[str, list[Any]] | None = None

    def by_title(self, title: str) -> list[Any]:
        if self._titles is None:
            self._titles = {}
            for p in self.ds.passages:
                self._titles.setdefault(G.norm(p.title), []).append(p)
        return self._titles.get(G.norm(title), [])

    def hop_passages(self, hop: G.Hop) -> list[Any]:
        got = [p for p in (self.ds.passage(pid) for pid in hop.passage_ids) if p is not None]
        return got or self.by_title(hop.title)


def held(hop: G.Hop, hits: Iterable[dict[str, Any]]) -> bool:
    return any(G.kept(h) and G.hop_matches(hop, h) for h in hits)


# ---------------------------------------------------------------- scope "all"

class GoldEverywhere(Interventions):
    """The what-if's hook (``main``, an Apply on the first node that lacks gold) plus, at
    every other retrieval, the gold passages that retrieval lacks."""
    active = True

    def __init__(self, main: Apply, gold: list[tuple[G.Hop, list[Any]]]):
        self.main, self.gold = main, gold

    def _extra(self, node_id: str, items: list[Any], apply: Callable[[Apply], list[Any]],
               lacks: Callable[[G.Hop], bool]) -> list[Any]:
        add = [p for hop, ps in self.gold if lacks(hop) for p in ps]
        if not add:
            return items
        sub = Apply(Intervention(node_id, add_ids=[p.id for p in add]), added_hits((), add),
                    first=True)
        out = apply(sub)
        self.main.applied.extend(sub.applied)
        return out

    def hits(self, node_id: str | None, hits: list[Any]) -> list[Any]:
        if node_id is None or node_id == self.main.iv.node:
            return self.main.hits(node_id, hits)
        self.main.seen["evidence"].setdefault(node_id, "passages")
        have = [h.to_dict() for h in hits]
        return self._extra(node_id, hits, lambda a: a.hits(node_id, list(hits)),
                           lambda hop: not held(hop, have))

    def evidence(self, node_id: str, items: list[Any], id_of: Callable[[Any], str],
                 make: Callable[[Any], Any], owned: Callable[[Any], bool] | None = None
                 ) -> list[Any]:
        if node_id == self.main.iv.node:
            return self.main.evidence(node_id, items, id_of, make, owned)
        self.main.seen["evidence"].setdefault(node_id, "KG items")
        ids = {str(id_of(it)) for it in items}
        # KG items carry no passage title: a gold passage is held only by its own id
        return self._extra(node_id, items,
                           lambda a: a.evidence(node_id, list(items), id_of, make, owned),
                           lambda hop: not (ids & set(hop.passage_ids)))

    def step(self, node_id: str, text: str) -> str:
        return self.main.step(node_id, text)

    def verdict(self, node_id: str, kind: str, value: bool) -> bool:
        return self.main.verdict(node_id, kind, value)


# ---------------------------------------------------------------- the plan

def _eval_row(store: Any, eval_id: str) -> dict[str, Any]:
    from ..eval.runner import get_eval
    try:
        return get_eval(store, eval_id)
    except LookupError as e:
        raise RepairError(str(e)) from None


def _wrong_runs(store: Any, eval_id: str) -> list[dict[str, Any]]:
    from ..eval.queries import series
    from ..triage import store as TS
    TS.ensure(store, eval_ids=[eval_id])
    return series(store.query("""
        SELECT i.run_id, i.question_id, i.method, i.variant, t.failure_class, t.break_node,
               t.reason, t.detail, r.metrics
        FROM eval_items i JOIN runs r ON r.run_id = i.run_id
        LEFT JOIN triage t ON t.run_id = i.run_id
        WHERE i.eval_id = ? AND i.correct = false AND i.status IN ('finished', 'refused')
        ORDER BY i.created_at, i.item_key""", [eval_id]))


def _has_passage_gold(ds: Any, qids: Iterable[str]) -> bool:
    for qid in qids:
        try:
            q = ds.question(qid)
        except KeyError:
            continue
        if G.passage_hops(q.to_dict())[0]:
            return True
    return False


def plan(store: Any, eval_id: str, scope: str = "breaking", *,
         dataset: Any = None) -> Plan:
    """What a repair of ``eval_id`` would do, run by run (no model needed). RepairError for
    an unknown eval or scope, or an eval whose questions have no gold passages."""
    if scope not in SCOPES:
        raise RepairError(f"unknown scope {scope!r}; give one of {', '.join(SCOPES)}")
    ev = _eval_row(store, eval_id)
    if dataset is None:
        from ..datasets import load_dataset
        try:
            dataset = load_dataset(ev["dataset"])
        except Exception as e:      # noqa: BLE001 - a removed dataset: say which
            raise RepairError(f"eval {eval_id}'s dataset {ev['dataset']!r} cannot be loaded "
                              f"({e}); gold repair needs its passages") from None
    qids = [r["question_id"] for r in store.query(
        "SELECT DISTINCT question_id FROM eval_items WHERE eval_id = ?", [eval_id])]
    if not _has_passage_gold(dataset, qids):
        raise RepairError(
            f"eval {eval_id} (dataset {ev['dataset']!r}) has no gold evidence passages on its "
            f"questions: gold repair needs gold passages (HotpotQA supporting facts, MuSiQue "
            f"decomposition paragraphs, the demo world's gold passages)")
    index = GoldIndex(dataset)
    targets = []
    for r in _wrong_runs(store, eval_id):
        t = Target(r["run_id"], r["question_id"], r["method"], r["variant"] or "",
                   r["series"], r["failure_class"], r["break_node"],
                   primary=(r.get("metrics") or {}).get("primary"))
        done = ((r.get("metrics") or {}).get("gold_repair") or {}).get(scope)
        if done and done.get("status") in ("repaired", "not_repaired"):
            t.action = "done"
        else:
            _plan_one(store, t, r, dataset, index, scope)
        targets.append(t)
    return Plan(eval_id, scope, ev["dataset"], ev.get("model_name"), ev.get("model_sha256"),
                ev.get("spec") or {}, targets)


def nearest_retrieving(tr: Any, node_id: str) -> str | None:
    """``node_id`` if it retrieved evidence, else the nearest node above it (by parent
    links) that did; among equally near ones the one made last, the retrieval closest to
    what the node read (PAR-RAG's answer sits under every step's trajectory). None: no
    node on the way up retrieved anything."""
    order = {nid: i for i, nid in enumerate(tr.nodes)}
    layer, seen = [node_id], {node_id}
    while layer:
        hit = [n for n in layer if tr.nodes[n].evidence]
        if hit:
            return max(hit, key=order.__getitem__)
        nxt = [p for n in layer for p in tr.nodes[n].parents if p in tr.nodes and p not in seen]
        seen.update(nxt)
        layer = list(dict.fromkeys(nxt))
    return None


def _skip(t: Target, key: str, reason: str) -> None:
    t.action, t.skip, t.reason = "skipped", key, reason


def _plan_one(store: Any, t: Target, r: dict[str, Any], ds: Any, index: GoldIndex,
              scope: str) -> None:
    if t.triage_class is None:
        return _skip(t, "not_triaged", r.get("reason") or "not triaged")
    d = r.get("detail")
    d = json.loads(d) if isinstance(d, str) else (d or {})
    if d.get("knowledge") != G.PASSAGES:
        return _skip(t, "kg_gold", f"the gold evidence of this run is {d.get('knowledge')} "
                                   f"({d.get('gold_source') or 'no source'}), not dataset "
                                   f"passages: there are no passage ids to add")
    if not t.break_node:
        return _skip(t, "no_break", "triage found no breaking node")
    try:
        q = ds.question(t.question_id).to_dict()
    except KeyError:
        return _skip(t, "no_gold", f"question {t.question_id} is no longer in the dataset")
    hops = G.passage_hops(q)[0]
    if [h.label for h in hops] != list(d.get("hops") or []):
        return _skip(t, "not_triaged", "the question's gold changed since the run was "
                                       "triaged")
    gold = [(h, index.hop_passages(h)) for h in hops]
    t.unresolved = [h.label for h, ps in gold if not ps]
    gold = [(h, ps) for h, ps in gold if ps]
    if not gold:
        return _skip(t, "no_gold", "none of the question's gold passages is in the corpus "
                                   f"({', '.join(t.unresolved)})")
    try:
        _, events, tr = check(store, t.run_id, Intervention(t.break_node))
    except WhatIfError as e:
        return _skip(t, "not_replayable", str(e))
    marks = d.get("marks") or {}

    def lacks(nid: str) -> list[tuple[G.Hop, list[Any]]]:
        have = {m["hop"] for m in marks.get(nid, [])}
        return [(h, ps) for h, ps in gold if h.index not in have]

    if scope == "breaking":
        node = tr.nodes[t.break_node]
        at = nearest_retrieving(tr, t.break_node)
        if at is None:
            return _skip(t, "no_evidence", f"the breaking node {t.break_node} ({node.kind}) "
                                           f"retrieves no evidence, nor does any node above "
                                           f"it, so there is nothing to add the gold "
                                           f"passages to")
        if at != t.break_node:
            t.via = (f"the breaking node {t.break_node} ({node.kind}) retrieves nothing; the "
                     f"gold goes to {at} ({tr.nodes[at].kind}), the nearest node above it "
                     f"that retrieves")
        order = [at]
    else:
        order = list(dict.fromkeys(e.node_id for e in events
                                   if e.type == T.RETRIEVED and e.node_id))
        if not order:
            return _skip(t, "no_retrieval", "the run retrieved nothing, so no node takes "
                                            "evidence")
    t.missing = {nid: [h.label for h, _ in lacks(nid)] for nid in order if lacks(nid)}
    if not t.missing:
        t.action = "held"
        t.reason = ("every retrieving node already held every gold passage" if scope == "all"
                    else f"{order[0]}, the nearest node above the breaking node that "
                         f"retrieves, already held every gold passage" if t.via
                    else "the breaking node already held every gold passage")
        return
    t.node = next(iter(t.missing))
    t.add_ids = list(dict.fromkeys(p.id for _, ps in lacks(t.node) for p in ps))


# ---------------------------------------------------------------- the repair

@dataclass
class Outcome:
    run_id: str
    series: str
    question_id: str
    status: str                      # repaired | not_repaired | skipped
    reason: str = ""
    child_run_id: str | None = None
    answer: str | None = None
    correct: bool | None = None
    fresh_calls: int = 0
    replayed_calls: int = 0
    reused_calls: int = 0


def check_model(ev: Plan, info: Any) -> None:
    sha = getattr(info, "sha256", "") or ""
    if sha and ev.model_sha256 and sha != ev.model_sha256:
        raise RepairError(
            f"eval {ev.eval_id} was made with model {ev.model_name or '?'} (sha256 "
            f"{ev.model_sha256[:12]}…) but {getattr(info, 'name', '?')} (sha256 {sha[:12]}…) "
            f"is loaded; its runs replay only on the same model: load it with --model")


def _score(store: Any, t: Target, spec: dict[str, Any], child_id: str, dataset: str
           ) -> tuple[bool, str]:
    """The child's correctness by the eval's primary metric (contains for a judged one)."""
    from ..eval import metrics as M
    tr = store.trace(child_id)
    q = (tr.meta or {}).get("gold") or {}
    if not q:
        try:
            q = _dataset(dataset).question(t.question_id).to_dict()
        except (KeyError, LookupError):
            q = {}
    ans = tr.answer or {}
    refused = bool(ans.get("refused")) or tr.status == "refused"
    primary = t.primary or spec.get("primary")
    scored_by = primary or "default"
    if primary in JUDGED:
        primary, scored_by = "contains", f"contains (the eval's {t.primary} needs the judge)"
    s = M.score_answer(q.get("question") or tr.question or "", ans.get("text") or "",
                       q.get("answers") or [], q.get("aliases") or [], refused=refused,
                       qtype=q.get("type") or "", meta=q.get("meta") or {}, judge=None,
                       primary=primary, tau_f1=spec.get("tau_f1") or M.DEFAULT_TAU_F1,
                       crag_mode="normalised" if primary == "crag" else spec.get("crag_mode"),
                       crag_profile=spec.get("crag_profile") or "ragx",
                       metric_profile=M.profile_of(spec),
                       answer_entities=q.get("answer_entities") or [])
    return bool(s.correct and tr.status in ("finished", "refused")), scored_by


def _merge(store: Any, run_id: str, *patches: dict[str, Any]) -> None:
    """JSON merge patches applied in turn to the run's metrics, in one update."""
    store.execute(f"UPDATE runs SET metrics = json_merge_patch(coalesce(metrics, '{{}}')"
                  f"{', ?' * len(patches)}) WHERE run_id = ?",
                  [json.dumps(p, default=str) for p in patches] + [run_id])


def _record(store: Any, plan_: Plan, t: Target, **kw: Any) -> dict[str, Any]:
    rec = {"version": VERSION, "eval_id": plan_.eval_id, "scope": plan_.scope,
           "created_at": time.time(), "triage_class": t.triage_class,
           "break_node": t.break_node, "node": t.node, "via": t.via, "add_ids": t.add_ids,
           "missing": t.missing, "unresolved": t.unresolved, **kw}
    # the new record replaces an earlier one of this scope (a merge patch would keep its
    # keys, such as an earlier skip's reason beside a later result)
    _merge(store, t.run_id, {"gold_repair": {plan_.scope: None}},
           {"gold_repair": {plan_.scope: rec}})
    return rec


def run(store: Any, plan_: Plan, *, llm: Any, limit: int | None = None,
        build: Any = None, on_outcome: Callable[[Outcome], None] | None = None
        ) -> list[Outcome]:
    """Carry out ``plan_``: record the skipped and held runs, replay up to ``limit`` of the
    runs to repair (question order), record each. Refuses a model other than the eval's
    before anything is written."""
    check_model(plan_, llm.info)
    out: list[Outcome] = []

    def done(o: Outcome) -> None:
        out.append(o)
        if on_outcome:
            on_outcome(o)

    for t in plan_.targets:
        if t.action == "skipped":
            _record(store, plan_, t, status="skipped", skip=t.skip, reason=t.reason)
            done(Outcome(t.run_id, t.series, t.question_id, "skipped", t.reason))
        elif t.action == "held":
            _record(store, plan_, t, status="not_repaired", held=True, reason=t.reason,
                    verdict="reasoning", fresh_calls=0, replayed_calls=0)
            done(Outcome(t.run_id, t.series, t.question_id, "not_repaired", t.reason))
    n = 0
    for t in plan_.todo:
        if limit is not None and n >= limit:
            break
        n += 1
        done(repair_one(store, plan_, t, llm=llm, build=build))
    return out


def repair_one(store: Any, plan_: Plan, t: Target, *, llm: Any, build: Any = None) -> Outcome:
    iv = Intervention(t.node or "", add_ids=list(t.add_ids))
    around = None
    if plan_.scope == "all":
        index = GoldIndex(_dataset(plan_.dataset))
        q = _dataset(plan_.dataset).question(t.question_id).to_dict()
        gold = [(h, ps) for h in G.passage_hops(q)[0] if (ps := index.hop_passages(h))]

        def around(apply: Apply) -> GoldEverywhere:
            return GoldEverywhere(apply, gold)
    try:
        res = whatif(store, t.run_id, iv, llm=llm, build=build, around=around, add_first=True)
    except WhatIfError as e:
        key = "not_applicable" if e.code == "not_applicable" else "not_replayable"
        _record(store, plan_, t, status="skipped", skip=key, reason=str(e))
        return Outcome(t.run_id, t.series, t.question_id, "skipped", str(e))
    applied = [a for a in res.applied if a.get("part") == "evidence"]
    if res.fresh_calls == 0 and res.reused_calls == 0:
        # every call replayed: no prompt saw the gold, so nothing was tested
        why = (f"the gold passages added at {t.node} reached no LLM call: the method cut or "
               f"merged them away after the retrieval; the re-run is {res.run_id}")
        _record(store, plan_, t, status="skipped", skip="not_reached", reason=why,
                child_run_id=res.run_id, applied=applied, replayed_calls=res.replayed_calls)
        return Outcome(t.run_id, t.series, t.question_id, "skipped", why, res.run_id)
    correct, scored_by = _score(store, t, plan_.spec, res.run_id, plan_.dataset)
    _merge(store, res.run_id, {"gold_repair": {"eval_id": plan_.eval_id, "scope": plan_.scope,
                                               "parent_run_id": t.run_id,
                                               "correct": correct}})
    status = "repaired" if correct else "not_repaired"
    _record(store, plan_, t, status=status, held=False,
            verdict="retrieval" if correct else "reasoning", child_run_id=res.run_id,
            answer=res.answer, parent_answer=res.parent_answer, correct=correct,
            scored_by=scored_by, applied=applied, fresh_calls=res.fresh_calls,
            replayed_calls=res.replayed_calls, reused_calls=res.reused_calls,
            llm_ms=res.llm_ms)
    return Outcome(t.run_id, t.series, t.question_id, status, "", res.run_id, res.answer,
                   correct, res.fresh_calls, res.replayed_calls, res.reused_calls)


def _dataset(name: str) -> Any:
    from ..datasets import load_dataset
    return load_dataset(name)


# ---------------------------------------------------------------- reading back

def side(triage_class: str | None) -> str | None:
    if triage_class in RETRIEVAL_SIDE:
        return "retrieval"
    if triage_class in REASONING_SIDE:
        return "reasoning"
    return None


def summary(store: Any, eval_id: str) -> dict[str, dict[str, dict[str, Any]]]:
    """{scope: {series: figures}} for the scopes repaired so far (empty: none). Figures:
    wrong (wrong runs), tested (replayed or held), repaired, not_repaired, held,
    repaired_share, skipped {reason: n}, pending (no result yet), by_class {class:
    {tested, repaired}}, table {triage side: {intervention verdict: n}}, agreement, n_agree,
    fresh_calls, replayed_calls."""
    from ..eval.queries import series
    rows = series(store.query("""
        SELECT i.method, i.variant, i.run_id, t.failure_class,
               json_extract(r.metrics, '$.gold_repair') AS rep
        FROM eval_items i JOIN runs r ON r.run_id = i.run_id
        LEFT JOIN triage t ON t.run_id = i.run_id
        WHERE i.eval_id = ? AND i.correct = false AND i.status IN ('finished', 'refused')
        ORDER BY i.method, i.variant""", [eval_id]))
    for r in rows:
        if isinstance(r["rep"], str):
            r["rep"] = json.loads(r["rep"])
    scopes = [s for s in SCOPES if any(s in (r["rep"] or {}) for r in rows)]
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for scope in scopes:
        per: dict[str, dict[str, Any]] = {}
        for r in rows:
            f = per.setdefault(r["series"], {
                "wrong": 0, "tested": 0, "repaired": 0, "not_repaired": 0, "held": 0,
                "skipped": {}, "pending": 0, "by_class": {},
                "table": {"retrieval": {"retrieval": 0, "reasoning": 0},
                          "reasoning": {"retrieval": 0, "reasoning": 0}},
                "fresh_calls": 0, "replayed_calls": 0})
            f["wrong"] += 1
            rec = (r["rep"] or {}).get(scope)
            if not rec:
                f["pending"] += 1
                continue
            st = rec.get("status")
            if st == "skipped":
                k = rec.get("skip") or "not_applicable"
                f["skipped"][k] = f["skipped"].get(k, 0) + 1
                continue
            ok = st == "repaired"
            cls = rec.get("triage_class") or r["failure_class"]
            f["tested"] += 1
            f["repaired" if ok else "not_repaired"] += 1
            f["held"] += int(bool(rec.get("held")))
            f["fresh_calls"] += int(rec.get("fresh_calls") or 0)
            f["replayed_calls"] += int(rec.get("replayed_calls") or 0)
            c = f["by_class"].setdefault(cls, {"tested": 0, "repaired": 0})
            c["tested"] += 1
            c["repaired"] += int(ok)
            sd = side(cls)
            if sd:
                f["table"][sd]["retrieval" if ok else "reasoning"] += 1
        for f in per.values():
            tab = f["table"]
            n = sum(v for row in tab.values() for v in row.values())
            agree = tab["retrieval"]["retrieval"] + tab["reasoning"]["reasoning"]
            f["n_agree"] = n
            f["agreement"] = agree / n if n else None
            f["repaired_share"] = f["repaired"] / f["tested"] if f["tested"] else None
        out[scope] = per
    return out


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.0%}"


SCOPE_WORDS = {"breaking": "gold passages added to the breaking node",
               "all": "gold passages added to every retrieving node"}


def lines(summ: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """The ``eval show`` section (empty when no repair was run)."""
    out: list[str] = []
    for scope, per in summ.items():
        if not per:
            continue
        w = min(40, max([len(s) for s in per] + [6]))
        out.append(f"gold repair, scope {scope} ({SCOPE_WORDS[scope]}, replayed): repaired = "
                   f"a retrieval failure by intervention, not repaired = a reasoning failure")
        out.append(f"  {'method':{w}s} {'wrong':>5s} {'tested':>6s} {'repaired':>8s} "
                   f"{'share':>6s} {'agree':>6s} {'skipped':>7s} {'pending':>7s}")
        for s, f in per.items():
            out.append(f"  {s[:w]:{w}s} {f['wrong']:5d} {f['tested']:6d} {f['repaired']:8d} "
                       f"{_pct(f['repaired_share']):>6s} {_pct(f['agreement']):>6s} "
                       f"{sum(f['skipped'].values()):7d} {f['pending']:7d}")
        for s, f in per.items():
            tab = f["table"]
            if f["n_agree"]:
                out.append(f"  {s[:w]}: triage retrieval-side -> repaired "
                           f"{tab['retrieval']['retrieval']}, not {tab['retrieval']['reasoning']}"
                           f"; reasoning-side -> repaired {tab['reasoning']['retrieval']}, not "
                           f"{tab['reasoning']['reasoning']}"
                           + (f"; {f['held']} held every gold passage already (no replay)"
                              if f["held"] else ""))
            if f["skipped"]:
                out.append(f"  {s[:w]} skipped: " + ", ".join(
                    f"{SKIPS.get(k, k)} {n}" for k, n in f["skipped"].items()))
    if out:
        out.append("  triage retrieval-side: retrieval_miss, partial_retrieval, hallucination; "
                   "reasoning-side: reasoning_error, wrong_refusal, answer_format; agree = "
                   "share where the two verdicts match")
    return out


def report(store: Any, plan_: Plan, outcomes: list[Outcome]) -> dict[str, Any]:
    """The JSON summary of one `eval repair` call."""
    summ = summary(store, plan_.eval_id).get(plan_.scope, {})
    replayed = [o for o in outcomes if o.child_run_id]
    return {"eval_id": plan_.eval_id, "scope": plan_.scope, "model": plan_.model_name,
            "replayed_now": len(replayed),
            "repaired_now": sum(o.status == "repaired" for o in replayed),
            "fresh_calls": sum(o.fresh_calls for o in replayed),
            "replayed_calls": sum(o.replayed_calls for o in replayed),
            "reused_calls": sum(o.reused_calls for o in replayed),
            "child_runs": [o.child_run_id for o in replayed],
            "pending": sum(f["pending"] for f in summ.values()),
            "methods": summ}
