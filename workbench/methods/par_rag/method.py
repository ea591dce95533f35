"""PAR-RAG: plan, act (retrieve-then-read with citations), review (dual verification).

Implements /work/shared/methods/par-rag.md:

* ``plan``   — hop-count estimate ĥ without a trained BERT (embedding kNN over the
  hop-labelled questions of a training split, or the feature heuristic / a one-digit LLM
  call / a manual value), with the paper's four features shown (``n/a`` with a reason where
  no parser/WordNet exists); α(ĥ) = 1 / (1 + exp(γ(ĥ − h0))); a complexity-matched exemplar
  from a store of up to 10 worked plans per hop label built from that training split's
  decompositions (the paper's store comes from training data, never the evaluated set); one
  JSON-constrained plan call (Thought, Question, Action per step).
* ``act``    — per step: dense retrieval (top-k), a cited read, evidence = cited passages.
* ``review`` — judge score A in [0, 1], attribution label → F ∈ {0, 0.5, 1},
  C = αA + (1−α)F; C < ct → exactly one sparse (BM25) re-retrieval and re-read, accepted
  without a second check (``revise`` phase). The judge and attribution calls read the same
  answer and evidence, so they run together (``batch_size`` > 1, ``batched.together``); the
  steps run in turn, each refining the next one's question.
* ``refine`` — the next sub-question is rewritten with the answers so far.
* ``answer`` — final answer from the trajectory records. The reader is asked for one line
  "So the answer is: <short answer>" (the paper's f_Read gives a short answer), and the text
  after that lead-in is the answer: already a span, so no answer-span extraction call
  (``answer_span``, which CRP-RAG and CogGRAG need for their free-text answers).
"""
from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from ... import trace as T
from ...config import Preset, PresetConfig, knob
from ...datasets.base import Question
from ...knowledge.types import Hit
from ..answers import extract_answer, normalize_answer, parse_citations, strip_citations
from ..embeddings import embedder_name, embedder_of
from ..generation import derive_seed, greedy, score_dict
from ..graph import question_node, tap
from ..passages import fit_passages, format_passages, hit_brief, passage_line, retriever_name, rrf_merge
from .. import context_select as CS
from .. import fitted
from . import declarations as D
from ..base import Method, RunContext
from ..batched import batch_knob, together
from . import prompts as P

ATTR_F = {"Attributable": 1.0, "Extrapolatory": 0.5, "Contradictory": 0.0}


@dataclass
class ParRagConfig(PresetConfig):
    DOCS = "docs/methods/par-rag.md"        # the method page: knob table and evidence
    # -- review --
    ct: float = knob(0.65, "Confidence threshold C_t: a step passes review iff C >= ct.",
                     min=0.0, max=1.0, group="review", paper=0.65)
    gamma: float = knob(1.5, "Slope γ of α(ĥ) = 1/(1+exp(γ(ĥ−h0))).", min=0.05, max=5.0,
                        group="review", paper=1.5)
    h0: float = knob(3.5, "Midpoint h0 of α(ĥ): the hop count where A and F weigh equally.",
                     min=0.5, max=5.0, group="review", paper=3.5)
    rescore_revised: bool = knob(False, "Score the revised answer too (display only; never "
                                 "changes control flow).", group="review", paper=False,
                                 status="extension")
    no_review: bool = knob(False, "Ablation 'w/o Review': accept every step without "
                           "verification.", group="review", paper=False, ablation=True)
    # -- complexity + exemplars --
    complexity_estimator: str = knob("knn", "Hop-count estimator: knn = vote of the nearest "
                                     "labelled questions; heuristic = cue rules; llm = one "
                                     "constrained call; manual = manual_hops",
                                     choices=["knn", "heuristic", "llm", "manual"], group="plan",
                                     paper="a BERT + 4-feature classifier trained on "
                                     "MuSiQue/TriviaQA train splits")
    exemplar_source: str = knob("demo:train", "Question set DATASET:SPLIT the exemplar store and "
                                "the kNN hop estimator are built from (its questions with a gold "
                                "decomposition)", group="plan", paper="a separate store built "
                                "from training data")
    exemplars_per_hop: int = knob(10, "Exemplars kept per hop label in the store (first by "
                                  "id).", min=1, max=100, group="plan", paper=10)
    manual_hops: int = knob(2, "ĥ used when complexity_estimator = manual.", min=1, max=4,
                            group="plan")
    knn_k: int = knob(7, "Neighbours in the kNN hop vote.", min=1, max=50, group="plan")
    exemplar_strategy: str = knob("complexity", "Exemplar selection: complexity = same hop "
                                  "label as ĥ, then most similar (paper); similarity; zero-shot; "
                                  "random.", choices=["complexity", "similarity", "zero-shot",
                                                      "random"], group="plan",
                                  paper="complexity")
    n_exemplars: int = knob(1, "Exemplars placed in the plan prompt.", min=0, max=3,
                            group="plan", paper=1)
    max_plan_steps: int = knob(6, "Safety cap on plan length (not in the paper).", min=1,
                               max=10, group="plan", paper="no cap")
    skip_final_answer_step: bool = knob(True, "Fold a last step whose action is Answer into the "
                                        "final answer (spec §7.1).", group="plan")
    no_plan: bool = knob(False, "Ablation 'w/o Plan': one step whose sub-question is the "
                         "question.", group="plan", paper=False, ablation=True)
    plan_max_tokens: int = knob(240, "Token budget of the plan (JSON).", min=32, max=1024,
                                group="plan")
    # -- act --
    top_k: int = knob(10, "Passages per retrieval (dense, and sparse on revision).", min=1,
                      max=20, group="act", paper=10)
    dense_retriever: str = knob("dense", "First-attempt retriever.",
                                choices=["dense", "hybrid", "bm25", "default"], group="act",
                                paper="dense (ColBERTv2)", status="paper")
    sparse_retriever: str = knob("bm25", "Re-retrieval on failed review (paper: BM25S).",
                                 choices=["bm25", "hybrid", "dense", "default"], group="act",
                                 paper="bm25 (BM25S)", status="paper")
    sparse_merge: bool = knob(False, "On revision, fuse dense and sparse hits (RRF) instead of "
                              "replacing them (Algorithm 1 replaces).", group="act", paper=False,
                              status="experimental")
    passage_chars: int = knob(0, "Characters kept per passage in prompts (0 = whole passages, cut "
                              "only to fit context_tokens).", min=0, max=4000, group="act",
                              paper="whole passages", status="paper", evidence="#measurements")
    context: str = CS.context_knob(group="act", paper="whole passages")
    context_tokens: int = knob(1600, "Token budget for the sources of one read (passages are "
                               "cut first, then the lowest-ranked dropped).", min=128,
                               max=16000, group="act")
    evidence_when_uncited: str = knob("none", "Evidence when the reader cites nothing: none = "
                                      "empty evidence (spec §7.7); top = the top-ranked passage "
                                      "(workbench option for small models).",
                                      choices=["none", "top"], group="act",
                                      paper="not stated (spec §7.7: none)", status="paper")
    read_max_tokens: int = knob(48, "Token budget of a read.", min=8, max=256, group="act")
    # -- refine + answer --
    refine_context: str = knob("all_previous", "What RefineNextQuestion sees.",
                               choices=["last", "all_previous", "all_with_evidence"],
                               group="refine", paper="unclear: Algorithm 1 passes the last "
                               "answer, its prompt speaks of all previous steps", status="paper")
    refine_max_tokens: int = knob(40, "Token budget of a refined question.", min=8, max=128,
                                  group="refine")
    final_max_tokens: int = knob(32, "Token budget of the final answer.", min=8, max=256,
                                 group="answer")
    batch_size: int = batch_knob()

    PRESETS = {
        "small-model": Preset(
            "small-model",
            "Passages cut to 300 characters, the earlier default that kept SmolLM2-135M's "
            "read prompts short. With the default model on HotpotQA-100's first 12 train "
            "questions: token F1 0.42 against whole passages' 0.45 (-0.03 [-0.28, +0.22]; 3 "
            "answers differ), 26% fewer tokens, 62 s against 85 s per question.",
            {"passage_chars": 300}),
    }


# ----------------------------------------------------------------------------- features

_QWORDS = {"who", "what", "which", "when", "where", "why", "how", "whose", "whom", "is", "was",
           "are", "were", "did", "does", "do", "in", "the", "a", "an", "of", "and", "or"}


def complexity_features(q: str) -> dict[str, Any]:
    """The paper's x = [f_len, f_ent, f_dep, f_mse]; n/a (None) with a reason where the
    resource is missing (no spaCy parser, no WordNet on this machine)."""
    toks = re.findall(r"\w+(?:'\w+)?|[^\w\s]", q)
    ents: set[str] = {m.strip() for m in re.findall(r"[\"“]([^\"”]+)[\"”]", q) if m.strip()}
    words = re.findall(r"[\w'-]+", q)
    run: list[str] = []
    for i, w in enumerate(words + [""]):
        cap = bool(w) and w[0].isupper() and not (i == 0 or w.lower() in _QWORDS and not run)
        if cap:
            run.append(w)
        else:
            if run:
                ents.add(" ".join(run))
            run = []
    ents |= set(re.findall(r"\b(?:1[5-9]|20)\d{2}\b", q))
    feats: dict[str, Any] = {"f_len": len(toks), "f_ent": len(ents), "entities": sorted(ents),
                             "f_dep": None, "f_mse": None}
    reasons = {}
    try:                                            # pragma: no cover - not installed here
        import spacy  # noqa: F401
        reasons["f_dep"] = "spaCy is installed but no English pipeline is loaded by the workbench"
    except ImportError:
        reasons["f_dep"] = "n/a: no dependency parser installed (spaCy absent)"
    try:                                            # pragma: no cover - not installed here
        from nltk.corpus import wordnet  # noqa: F401
        reasons["f_mse"] = "n/a: WordNet sense counts not wired in"
    except ImportError:
        reasons["f_mse"] = "n/a: no WordNet resource installed (nltk absent)"
    feats["na_reasons"] = reasons
    return feats


def heuristic_hops(q: str, feats: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Spec par-rag.md §3.1 fallback: 1 + bridge cues (max 3) + 1 if f_ent >= 3 (or f_dep >= 6)."""
    low = q.lower()
    cues = []
    if re.search(r"\w's\b|\bthe \w+(?: \w+)? of\b", low):
        cues.append("possessive / 'the X of the Y' chain")
    if re.search(r"\w+ (?:who|which|that|whose|where)\b", low):
        cues.append("relative clause")
    if feats["f_ent"] >= 2 and re.search(r"\b(?:both|either|first|earlier|later|older|younger|"
                                         r"more|less|longer|shorter|\w+er than)\b", low):
        cues.append("second entity + comparative")
    h = 1 + min(len(cues), 3)
    if feats["f_ent"] >= 3 or (feats.get("f_dep") or 0) >= 6:
        h += 1
        cues.append("f_ent >= 3")
    return max(1, min(4, h)), {"cues": cues}


# ----------------------------------------------------------------------------- exemplars

@dataclass
class Exemplar:
    id: str
    question: str
    hop_label: int
    plan: list[dict[str, str]]
    source: str


def _sub_q(d: dict[str, Any]) -> str:
    for k in ("question", "sub_question", "subquestion", "q", "text"):
        if isinstance(d.get(k), str) and d[k].strip():
            return d[k].strip()
    return ""


def exemplar_from_question(q: Question, source: str = "demo") -> Exemplar | None:
    """A question + its gold decomposition -> a worked plan in the planner's JSON schema.
    Earlier answers named in later sub-questions are replaced by 'the answer of step j',
    so the exemplar shows references, not resolved facts."""
    steps = [d for d in (q.decomposition or []) if isinstance(d, dict) and _sub_q(d)]
    if not steps:
        return None
    plan = []
    answers: list[str] = []
    for i, d in enumerate(steps, 1):
        sq = _sub_q(d)
        for j, a in enumerate(answers, 1):
            if a and len(a) > 2 and a.lower() in sq.lower():
                sq = re.sub(re.escape(a), f"the answer of step {j}", sq, flags=re.I)
        thought = d.get("thought") or (
            "First I need this fact." if i == 1 else
            f"This uses the answer of step {i - 1}." if "answer of step" in sq else
            "I also need this fact.")
        action = d.get("action") if d.get("action") in ("Retrieve", "Answer") else "Retrieve"
        plan.append({"Thought": str(thought), "Question": sq, "Action": action})
        ans = d.get("answer") or d.get("a") or ""
        answers.append(ans if isinstance(ans, str) else str(ans))
    hop = q.hops or len(steps)
    return Exemplar(q.id, q.question, int(max(1, min(4, hop))), plan, source)


def source_questions(ctx: RunContext) -> list[Question]:
    """The hop-labelled questions the kNN estimator and the exemplar store come from: the
    ``exemplar_source`` split (or ``ctx.extra['par_questions']``, for tests)."""
    if "par_questions" in ctx.extra:
        return list(ctx.extra["par_questions"])
    return _source(ctx.config.exemplar_source)[2]


def _source(ref: str) -> tuple[str, str, list[Question]]:
    try:
        return fitted.load_questions(ref)
    except LookupError:
        return "", "", []


def exemplar_store(questions: list[Question], per_hop: int) -> list[Exemplar]:
    """Up to ``per_hop`` worked plans per hop label (first by id), as in the paper's store of
    10 exemplars per hop."""
    out: list[Exemplar] = []
    count: dict[int, int] = {}
    for q in sorted(questions, key=lambda q: q.id):
        e = exemplar_from_question(q)
        if e is not None and count.get(e.hop_label, 0) < per_hop:
            count[e.hop_label] = count.get(e.hop_label, 0) + 1
            out.append(e)
    return out


def hop_seeds(questions: list[Question]) -> list[Question]:
    return [s for s in questions if s.hops or s.decomposition]


def _same(a: str, b: str) -> bool:
    return normalize_answer(a) == normalize_answer(b)


# ----------------------------------------------------------------------------- method

@dataclass
class _Step:
    index: int
    thought: str
    question: str
    action: str
    node: str = ""
    question_executed: str = ""
    status: str = "pending"
    answer: str = ""
    evidence: list[Hit] = field(default_factory=list)
    trajectory_node: str = ""


def alpha_of(h: float, gamma: float, h0: float) -> float:
    """PAR-RAG Eq. 9: alpha(h) = 1 / (1 + exp(gamma * (h - h0)))."""
    return 1.0 / (1.0 + math.exp(gamma * (h - h0)))


class ParRag(Method):
    name = "par-rag"
    title = "PAR-RAG (plan, act, review)"
    kind = "text"
    view = "graph"
    Config = ParRagConfig
    prompt_version = P.VERSION
    description = ("Estimates the question's hop count, picks a same-complexity exemplar, plans "
                   "all steps at once, answers each step from dense retrieval with citations, "
                   "verifies it (C = αA + (1−α)F against ct), re-retrieves with BM25 once on "
                   "failure, refines the next sub-question, and answers from the trajectory.")
    thresholds = D.THRESHOLDS
    node_kinds = D.NODE_KINDS
    failure_tags = D.FAILURE_TAGS
    whatif_nodes = D.WHATIF_NODES
    check_kinds = D.CHECK_KINDS
    preferred = True

    @classmethod
    def fitted_state(cls, cfg: ParRagConfig) -> list[fitted.FitRecord]:
        """The kNN hop estimator's seed questions and the exemplar store, when in use."""
        name, split, qs = _source(cfg.exemplar_source)
        out = []
        if cfg.complexity_estimator == "knn" and not cfg.no_plan:
            seeds = hop_seeds(qs)
            if seeds:
                out.append(fitted.record("par_hop_estimator", f"knn over {cfg.exemplar_source}",
                                         name, split, seeds, data=cfg.knn_k))
        if cfg.exemplar_strategy != "zero-shot" and cfg.n_exemplars and not cfg.no_plan:
            store = exemplar_store(qs, cfg.exemplars_per_hop)
            ids = {e.id for e in store}
            if store:
                out.append(fitted.record(
                    "par_exemplar_store", f"{len(store)} exemplars from {cfg.exemplar_source}",
                    name, split, [q for q in qs if q.id in ids],
                    data=[e.plan for e in store]))
        return out

    def run(self, ctx: RunContext, question: str) -> Iterator[T.Event]:
        cfg: ParRagConfig = ctx.config
        pv = P.VERSION
        yield ctx.set_phase("plan")
        qid, ev = question_node(ctx, question)
        yield ev
        if "par_questions" not in ctx.extra:
            for rec in self.fitted_state(cfg):
                yield rec.event(qid, ctx.gold, ctx.dataset)

        # 1-3: complexity
        cx = ctx.node_id("cx")
        est = yield from self._complexity(ctx, question, cx)
        h = est["hop_hat"]
        alpha = alpha_of(h, cfg.gamma, cfg.h0)
        est["alpha"] = round(alpha, 4)
        yield T.custom("complexity_estimated", cx, **est, one_minus_alpha=round(1 - alpha, 4),
                       gamma=cfg.gamma, h0=cfg.h0)
        yield T.node_added(cx, "complexity", f"ĥ = {h} hops ({est['estimator']})", parents=[qid],
                           layer=1, state="done", **est)
        yield T.node_scored(cx, {"hop_hat": float(h), "alpha": round(alpha, 4),
                                 **{f"p_hop{k}": v for k, v in est["class_probs"].items()}})

        # 4: exemplars
        ex_id = ctx.node_id("ex")
        sel = self._select_exemplars(ctx, question, h)
        yield T.custom("exemplars_selected", ex_id, **sel)
        label = (sel["chosen_questions"][0] if sel["chosen_questions"] else
                 f"no exemplar ({sel['strategy']})")
        yield T.node_added(ex_id, "exemplar", label, parents=[cx], layer=2, state="done", **sel)

        # 5-8: plan
        plan_id = ctx.node_id("plan")
        yield T.node_added(plan_id, "plan", "Plan", parents=[ex_id], layer=3, state="created")
        steps, plan_info = yield from self._plan(ctx, question, plan_id, sel)
        prev = plan_id
        for st in steps:
            st.node = ctx.node_id("s")
            st.question = ctx.whatif.step(st.node, st.question)
            st.question_executed = st.question
            yield T.node_added(st.node, "step", st.question, parents=[prev], layer=4,
                               state="proposed", index=st.index, thought=st.thought,
                               action=st.action, status="pending")
            prev = st.node
        exec_idx = list(range(len(steps)))
        if cfg.skip_final_answer_step and len(steps) > 1 and steps[-1].action == "Answer":
            exec_idx = exec_idx[:-1]
            steps[-1].status = "skipped"
        yield T.custom("plan_generated", plan_id, steps=[self._step_dict(s) for s in steps],
                       executed=[steps[i].index for i in exec_idx], hop_hat=h,
                       plan_length=len(steps), **plan_info)
        yield T.node_updated(plan_id, "done", steps=[self._step_dict(s) for s in steps],
                             executed=[steps[i].index for i in exec_idx], **plan_info)
        if steps[-1].status == "skipped":
            yield T.node_updated(steps[-1].node, "pruned", status="skipped",
                                 reason="a last Answer step is folded into the final answer")

        # 9-19: act, review, refine
        trajectory: list[dict[str, Any]] = []
        revisions = 0
        for pos, i in enumerate(exec_idx):
            st = steps[i]
            revised = yield from self._execute_step(ctx, st, alpha, trajectory)
            revisions += int(revised)
            if pos + 1 < len(exec_idx):
                yield from self._refine(ctx, st, steps[exec_idx[pos + 1]], trajectory)

        # 20: final answer
        yield ctx.set_phase("answer")
        tr_text = "\n".join(t["rendered"] for t in trajectory)
        aid = ctx.node_id("a")
        calls: list[T.Event] = []
        comp = yield from tap(ctx.generate("final", P.final(question, tr_text),
                                             greedy(cfg.final_max_tokens), node_id=aid,
                                             prompt_version=pv), calls)
        raw = comp.text.strip()
        final = extract_answer(raw, (P.LEADIN.lower(), "the answer is", "answer:"))
        idk = not final or bool(re.search(r"don'?t know|\bunknown\b", final, re.I))
        sc = score_dict(comp)
        last = steps[exec_idx[-1]]
        yield T.custom("final_answer", aid, answer=final, raw_output=raw, idk=idk,
                       trajectory=[t["index"] for t in trajectory],
                       perplexity=sc.get("perplexity"), revisions=revisions)
        yield T.node_added(aid, "answer", final or raw or P.IDK, parents=[last.node], layer=9,
                           state="refused" if idk else "answered", raw_output=raw, idk=idk,
                           call_ids=[c.llm_call_id for c in calls], revisions=revisions)
        for t in trajectory:
            yield T.edge_added(t["node"], aid, "uses")
        if sc:
            yield T.node_scored(aid, {k: sc[k] for k in ("perplexity", "confidence")})
        if idk:
            yield T.answer(final or P.IDK, refused=True, node_id=aid,
                           reason="the final reader found no answer in the trajectory "
                                  "(\"I don't know\")", confidence=sc.get("confidence"))
        else:
            yield T.answer(final, node_id=aid, confidence=sc.get("confidence"),
                           raw_output=raw, revisions=revisions, hop_hat=h,
                           final_perplexity=sc.get("perplexity"))

    # ------------------------------------------------------------------ complexity
    def _complexity(self, ctx: RunContext, q: str, cx: str) -> Iterator[T.Event]:
        cfg: ParRagConfig = ctx.config
        feats = complexity_features(q)
        est: dict[str, Any] = {"features": feats, "embedding_dim": None, "neighbours": [],
                               "gold_hop": ctx.gold.hops if ctx.gold else None}
        method = cfg.complexity_estimator
        note = ""
        probs = {k: 0.0 for k in (1, 2, 3, 4)}
        if method == "manual":
            h = cfg.manual_hops
        elif method == "llm":
            calls: list[T.Event] = []
            comp = yield from tap(ctx.generate(
                "complexity", P.hops(q), greedy(2, grammar=P.HOPS_GRAMMAR), node_id=cx,
                prompt_version=P.VERSION), calls)
            m = re.search(r"[1-4]", comp.text)
            h = int(m.group()) if m else 2
            if not m:
                note = f"unparsable LLM hop count {comp.text!r}: used 2"
        else:
            h = 0
            if method == "knn":
                seeds = [s for s in hop_seeds(source_questions(ctx))
                         if not _same(s.question, q)]
                if seeds:
                    emb = embedder_of(ctx)
                    vq = np.asarray(emb.encode([q]), dtype=np.float32)[0]
                    vs = np.asarray(emb.encode([s.question for s in seeds]), dtype=np.float32)
                    sims = vs @ vq
                    order = np.argsort(-sims, kind="stable")[: cfg.knn_k]
                    votes = {k: 0.0 for k in (1, 2, 3, 4)}
                    nb = []
                    for j in order.tolist():
                        hop = int(max(1, min(4, seeds[j].hops or len(seeds[j].decomposition))))
                        votes[hop] += max(float(sims[j]), 0.0)
                        nb.append({"id": seeds[j].id, "question": seeds[j].question,
                                   "hops": hop, "sim": round(float(sims[j]), 4)})
                    tot = sum(votes.values())
                    if tot > 0:
                        probs = {k: round(v / tot, 4) for k, v in votes.items()}
                        h = max(probs, key=lambda k: (probs[k], -k))
                    est["neighbours"] = nb
                    est["embedding_dim"] = int(vq.shape[0])
                    est["embedder"] = embedder_name(emb)
                else:
                    note = "no hop-labelled seed questions: fell back to the heuristic"
            if not h:
                h, info = heuristic_hops(q, feats)
                est["heuristic"] = info
                method = "heuristic" if method == "heuristic" else "heuristic (fallback)"
        if not any(probs.values()):
            probs[h] = 1.0
        est.update(class_probs=probs, hop_hat=int(h), estimator=method, note=note,
                   mispredicted=(est["gold_hop"] is not None and est["gold_hop"] != h))
        return est

    # ------------------------------------------------------------------ exemplars
    def _select_exemplars(self, ctx: RunContext, q: str, h: int) -> dict[str, Any]:
        cfg: ParRagConfig = ctx.config
        strategy = cfg.exemplar_strategy
        out: dict[str, Any] = {"strategy": strategy, "k": cfg.n_exemplars, "candidates": [],
                               "chosen": [], "chosen_questions": [], "chosen_plans": [],
                               "hop_bucket": h, "note": ""}
        if strategy == "zero-shot" or cfg.n_exemplars == 0:
            return out
        store = [e for e in exemplar_store(source_questions(ctx), cfg.exemplars_per_hop)
                 if not _same(e.question, q)]
        source = cfg.exemplar_source
        if not store:
            store = [Exemplar(f"builtin-{k}", eq, k, plan, "built-in")
                     for k, (eq, plan) in P.BUILTIN_EXEMPLARS.items()]
            source = "built-in"
            out["note"] = (f"no decompositions in {cfg.exemplar_source}: built-in exemplars "
                           f"used")
        out["store_size"] = len(store)
        out["store_source"] = source
        pool = store
        if strategy in ("complexity", "random"):
            pool = [e for e in store if e.hop_label == h]
            if not pool:
                near = min({e.hop_label for e in store}, key=lambda x: (abs(x - h), x))
                pool = [e for e in store if e.hop_label == near]
                out["hop_bucket"] = near
                out["note"] = f"no exemplar with hop={h}; used the nearest bucket hop={near}"
        if strategy == "random":
            rnd = random.Random(derive_seed(ctx.seed, "par-exemplar", q))
            chosen = sorted(rnd.sample(pool, min(cfg.n_exemplars, len(pool))), key=lambda e: e.id)
            cands = [(e, None) for e in pool]
        else:
            emb = embedder_of(ctx)
            vq = np.asarray(emb.encode([q]), dtype=np.float32)[0]
            vs = np.asarray(emb.encode([e.question for e in pool]), dtype=np.float32)
            sims = vs @ vq
            ranked = sorted(zip(pool, sims.tolist()), key=lambda t: (-t[1], t[0].id))
            cands = ranked
            chosen = [e for e, _ in ranked[: cfg.n_exemplars]]
        out["candidates"] = [{"id": e.id, "question": e.question, "hops": e.hop_label,
                              "sim": None if s is None else round(float(s), 4)}
                             for e, s in cands[:10]]
        out["chosen"] = [e.id for e in chosen]
        out["chosen_questions"] = [e.question for e in chosen]
        out["chosen_plans"] = [e.plan for e in chosen]
        return out

    # ------------------------------------------------------------------ plan
    def _plan(self, ctx: RunContext, q: str, plan_id: str,
              sel: dict[str, Any]) -> Iterator[T.Event]:
        cfg: ParRagConfig = ctx.config
        info: dict[str, Any] = {"raw_output": "", "parse_ok": True, "fallback_used": False,
                                "truncated": False, "ablation_no_plan": cfg.no_plan}
        if cfg.no_plan:
            return [_Step(1, "", q, "Retrieve")], info
        exemplars = list(zip(sel["chosen_questions"], sel["chosen_plans"]))
        calls: list[T.Event] = []

        def valid(obj: Any) -> list[dict[str, str]]:
            steps = obj["steps"] if isinstance(obj, dict) else obj
            if not isinstance(steps, list) or not steps:
                raise ValueError("empty plan")
            for s in steps:
                if not isinstance(s, dict) or not str(s.get("Question", "")).strip():
                    raise KeyError("Question")
            return steps

        parsed = yield from tap(ctx.generate_json(
            "plan", P.plan(q, exemplars), P.plan_schema(cfg.max_plan_steps),
            greedy(cfg.plan_max_tokens), node_id=plan_id, prompt_version=P.VERSION,
            validate=valid), calls)
        info["raw_output"] = calls[-1].data.get("output", "") if calls else ""
        if parsed is None:
            info.update(parse_ok=False, fallback_used=True)
            return [_Step(1, "", q, "Retrieve")], info
        if len(parsed) > cfg.max_plan_steps:
            parsed = parsed[: cfg.max_plan_steps]
            info["truncated"] = True
        steps = [_Step(i, " ".join(str(s.get("Thought", "")).split()),
                       " ".join(str(s["Question"]).split()),
                       s.get("Action") if s.get("Action") in ("Retrieve", "Answer") else "Retrieve")
                 for i, s in enumerate(parsed, 1)]
        return steps, info

    # ------------------------------------------------------------------ act + review
    def _read(self, ctx: RunContext, st: _Step, parent: str, hits: list[Hit], attempt: int,
              retriever: str) -> Iterator[T.Event]:
        cfg: ParRagConfig = ctx.config
        sources, kept, note = fit_passages(ctx.llm.count_tokens, hits, cfg.passage_chars,
                                             cfg.context_tokens, context=cfg.context,
                                             queries=st.question_executed)
        rd = ctx.node_id("rd")
        calls: list[T.Event] = []
        comp = yield from tap(ctx.generate("read", P.read(sources, st.question_executed),
                                             greedy(cfg.read_max_tokens), node_id=rd,
                                             prompt_version=P.VERSION), calls)
        raw = comp.text.strip()
        nos, warnings = parse_citations(raw, len(kept))
        evidence = [kept[n - 1] for n in nos]
        uncited = not nos
        if uncited and cfg.evidence_when_uncited == "top" and kept:
            evidence = kept[:1]
        answer = strip_citations(raw) or raw
        idk = bool(re.search(r"don'?t know", raw, re.I))
        sc = score_dict(comp)
        yield T.node_added(rd, "read", answer or "(empty)", parents=[parent], layer=6,
                           state="answered", attempt=attempt, retriever=retriever,
                           answer_raw=raw, cited=nos, idk=idk, no_citation=uncited,
                           evidence=[hit_brief(h) for h in evidence], context=note,
                           call_ids=[c.llm_call_id for c in calls], step=st.index)
        if sc:
            yield T.node_scored(rd, {k: sc[k] for k in ("perplexity", "confidence")})
        yield T.custom("step_answered", rd, step=st.index, attempt=attempt, answer=answer,
                       answer_raw=raw, cited=nos, idk=idk, perplexity=sc.get("perplexity"),
                       tokens=comp.completion_tokens, latency_ms=round(comp.latency_ms, 3),
                       context=note)
        yield T.custom("evidence_extracted", rd, step=st.index, attempt=attempt,
                       evidence=[hit_brief(h) for h in evidence], warnings=warnings,
                       no_citation=uncited)
        return rd, answer, evidence

    def _retrieve(self, ctx: RunContext, st: _Step, parent: str, attempt: int,
                  kind: str, dense_hits: list[Hit] | None = None) -> Iterator[T.Event]:
        cfg: ParRagConfig = ctx.config
        name = retriever_name(ctx, cfg.dense_retriever if kind == "dense" else
                                cfg.sparse_retriever)
        rid = ctx.node_id("r")
        yield T.node_added(rid, "retrieval", st.question_executed, parents=[parent], layer=5,
                           state="created", attempt=attempt, retriever=name, role=kind,
                           query=st.question_executed, step=st.index)
        hits = yield from ctx.retrieve(rid, st.question_executed, cfg.top_k, name)
        merged = False
        if kind == "sparse" and cfg.sparse_merge and dense_hits:
            hits = rrf_merge([dense_hits, hits], cfg.top_k)
            merged = True
        docs = [hit_brief(h) for h in hits]
        yield T.node_updated(rid, "retrieved", docs=docs, merged_with_dense=merged)
        yield T.custom("retrieval_done", rid, step=st.index, attempt=attempt, retriever=name,
                       role=kind, query=st.question_executed, docs=docs, merged=merged)
        return rid, hits

    def _verify(self, ctx: RunContext, st: _Step, parent: str, answer: str,
                evidence: list[Hit], alpha: float, display_only: bool = False) -> Iterator[T.Event]:
        cfg: ParRagConfig = ctx.config
        vf = ctx.node_id("vf")
        yield T.node_added(vf, "verify", f"Review step {st.index}", parents=[parent], layer=7,
                           state="created", step=st.index, display_only=display_only)
        ev_text = format_passages(evidence, cfg.passage_chars, numbered=False,
                                    context=cfg.context, queries=st.question_executed) \
            if evidence else "(no cited evidence)"
        errors = []
        comp, comp2 = yield from together(ctx, [
            ctx.generate("judge", P.judge(st.question_executed, answer, ev_text),
                         greedy(4, grammar=P.JUDGE_GRAMMAR), node_id=vf,
                         prompt_version=P.VERSION),
            ctx.generate("attribution", P.attribution(f"{st.question_executed} {answer}", ev_text),
                         greedy(6, grammar=P.ATTR_GRAMMAR), node_id=vf,
                         prompt_version=P.VERSION)], cfg.batch_size)
        a_raw = comp.text.strip()
        A = _parse_score(a_raw)
        if A is None:
            errors.append(f"judge output {a_raw!r} is not a number in [0, 1]: A = 0")
            A = 0.0
        label = next((lab for lab in P.ATTR_LABELS if comp2.text.strip().lower().startswith(
            lab.lower()[:5])), None)
        if label is None:
            errors.append(f"attribution output {comp2.text!r} is not a label: Extrapolatory")
            label = "Extrapolatory"
        F = ATTR_F[label]
        Cq = alpha * A + (1 - alpha) * F
        passed = Cq >= cfg.ct
        if not display_only:
            passed = ctx.whatif.verdict(vf, "review", passed)
        res = {"accuracy_raw": a_raw, "A": A, "attr_label": label, "F": F,
               "alpha": round(alpha, 4), "C": round(Cq, 4), "C_t": cfg.ct, "passed": passed,
               "judge_backend": f"{ctx.llm.info.backend}:{ctx.llm.info.name} (self-judged)",
               "attr_backend": f"{ctx.llm.info.backend}:{ctx.llm.info.name} (LLM substitute "
                               f"for AttrScore)", "parse_errors": errors,
               "evidence_ids": [h.id for h in evidence]}
        yield T.node_scored(vf, {"C": round(Cq, 4), "A": A, "F": F, "alpha": round(alpha, 4)},
                            {"ct": cfg.ct})
        yield T.node_updated(vf, "verified" if passed else "failed_verification", **res)
        yield T.custom("step_rescored" if display_only else "step_verified", vf,
                       step=st.index, **res)
        return vf, passed

    def _execute_step(self, ctx: RunContext, st: _Step, alpha: float,
                      trajectory: list[dict[str, Any]]) -> Iterator[T.Event]:
        cfg: ParRagConfig = ctx.config
        yield ctx.set_phase("act")
        yield T.custom("step_started", st.node, step=st.index, question=st.question,
                       question_executed=st.question_executed,
                       refined=st.question_executed != st.question)
        yield T.node_updated(st.node, "created", status="running",
                             question_executed=st.question_executed)
        r1, hits = yield from self._retrieve(ctx, st, st.node, 1, "dense")
        rd, answer, evidence = yield from self._read(ctx, st, r1, hits, 1, "dense")
        revised = False
        last = rd
        if not cfg.no_review:
            yield ctx.set_phase("review")
            vf, passed = yield from self._verify(ctx, st, rd, answer, evidence, alpha)
            if not passed:
                revised = True
                yield ctx.set_phase("revise")
                r2, hits2 = yield from self._retrieve(ctx, st, vf, 2, "sparse", hits)
                rd2, answer, evidence = yield from self._read(ctx, st, r2, hits2, 2, "sparse")
                last = rd2
                if cfg.rescore_revised:
                    yield from self._verify(ctx, st, rd2, answer, evidence, alpha,
                                            display_only=True)
        st.answer, st.evidence = answer, evidence
        st.status = "revised" if revised else "accepted"
        ev_lines = "\n".join(f"Evidence: "
                             f"{passage_line(h, cfg.passage_chars, cfg.context, st.question_executed)}"
                             for h in evidence) or "Evidence: (none cited)"
        rendered = (f"Step {st.index}. Thought: {st.thought or '-'}\n"
                    f"Question: {st.question_executed}\nAnswer: {answer}\n{ev_lines}")
        tj = ctx.node_id("tj")
        st.trajectory_node = tj
        rec = {"index": st.index, "thought": st.thought, "question": st.question_executed,
               "answer": answer, "evidence": [hit_brief(h) for h in evidence],
               "rendered": rendered, "node": tj}
        trajectory.append(rec)
        yield T.node_added(tj, "trajectory", f"T{st.index}: {answer}", parents=[last], layer=8,
                           state="done", **{k: v for k, v in rec.items() if k != "node"})
        yield T.custom("trajectory_appended", tj, **{k: v for k, v in rec.items() if k != "node"})
        yield T.node_updated(st.node, "answered", status=st.status, answer=answer,
                             revised=revised)
        return revised

    def _refine(self, ctx: RunContext, st: _Step, nxt: _Step,
                trajectory: list[dict[str, Any]]) -> Iterator[T.Event]:
        cfg: ParRagConfig = ctx.config
        yield ctx.set_phase("refine")
        recs = trajectory[-1:] if cfg.refine_context == "last" else trajectory
        lines = []
        for t in recs:
            line = f"{t['index']}. {t['question']} -> {t['answer']}"
            if cfg.refine_context == "all_with_evidence" and t["evidence"]:
                line += " (evidence: " + "; ".join(e["title"] for e in t["evidence"]) + ")"
            lines.append(line)
        comp = yield from ctx.generate("refine", P.refine("\n".join(lines), nxt.question),
                                       greedy(cfg.refine_max_tokens), node_id=nxt.node,
                                       prompt_version=P.VERSION)
        out = next((ln.strip() for ln in comp.text.splitlines() if ln.strip()), "")
        out = out.strip().strip("\"'").strip()
        before = nxt.question_executed
        if out:
            nxt.question_executed = out
        nxt.question_executed = ctx.whatif.step(nxt.node, nxt.question_executed)
        yield T.edge_added(st.trajectory_node, nxt.node, "refines", before=before,
                           after=nxt.question_executed)
        yield T.custom("next_question_refined", nxt.node, step=nxt.index, before=before,
                       after=nxt.question_executed, context=lines, empty_output=not out)
        yield T.node_updated(nxt.node, None, question_executed=nxt.question_executed,
                             refined_from=before)

    @staticmethod
    def _step_dict(s: _Step) -> dict[str, Any]:
        return {"index": s.index, "thought": s.thought, "question": s.question,
                "action": s.action, "status": s.status, "node": s.node}


def _parse_score(text: str) -> float | None:
    """'0.8', '1', '8/10', '80%' -> a float in [0, 1]; None when unparsable."""
    t = (text or "").strip()
    m = re.match(r"^(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)", t)
    if m and float(m.group(2)) > 0:
        return max(0.0, min(1.0, float(m.group(1)) / float(m.group(2))))
    m = re.match(r"^(\d+(?:\.\d+)?)\s*%", t)
    if m:
        return max(0.0, min(1.0, float(m.group(1)) / 100.0))
    m = re.match(r"^(\d+(?:\.\d+)?)", t)
    if m:
        v = float(m.group(1))
        return v if 0.0 <= v <= 1.0 else None
    return None


def alpha_table(gamma: float = 1.5, h0: float = 3.5) -> dict[int, float]:
    """α(ĥ) for ĥ = 1..4 (spec par-rag.md §3.4: 0.977, 0.905, 0.679, 0.321 with the defaults)."""
    return {h: round(alpha_of(h, gamma, h0), 3) for h in (1, 2, 3, 4)}


__all__ = ["ParRag", "ParRagConfig", "alpha_table", "complexity_features", "heuristic_hops",
           "exemplar_from_question"]
