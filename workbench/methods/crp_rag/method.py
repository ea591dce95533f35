"""CRP-RAG: reasoning-graph construction, per-node knowledge, perplexity-based pruning.

Implements /work/shared/methods/crp-rag.md. Three phases run strictly in order:

* ``gc``  — graph construction: per open sink, one sampled call returning a JSON list of
  1-3 steps (``proposals=list``, Eq. 4) or ``samples_per_sink`` sampled one-step calls at
  the root and ``samples_below_root`` below it (``proposals=samples``), each step
  ``{"step", "is_final"}``; the share of sibling proposals above 0.8 similarity is the
  run's ``sibling_near_duplicates`` figure; proposals of one iteration whose embedding
  cosine is above ``tau_combine`` are grouped (connected components) and fused by one LLM
  call; a merged node keeps the parents of all its members.
* ``kra`` — per non-root node: retrieval with the node text (``query_with_question`` puts the
  question before it), then a knowledge summary.
* ``ag``  — per node: an evaluation answer whose perplexity decides sufficiency
  (PPL < tau_ppl); every root-to-sink path through an insufficient node is pruned; no
  surviving path means refusal; otherwise the best ``max_answer_paths`` valid paths (lowest
  maximum PPL first) are reasoned step by step, and two or more path answers are
  integrated; one constrained call then reads the short answer span (entity, date, number,
  yes/no) out of that free-text answer (``answer_span``, an addition for EM/F1 scoring; its
  ``answer_extraction`` node sits between the sinks and the answer).

The knobs and the shipped threshold are in ``config``, the answer generation after
the sufficiency verdicts (paths, step reasoning, integration, span) in ``answer``.

Event names and order follow spec crp-rag.md §6.1: core events where the reducer has one
(``node_added`` = node_created, ``retrieved``, ``node_scored``, ``path``, ``answer``), and
``custom`` events with the spec's names for the rest.

Batched (``batch_size`` calls together, ``batched.together``; events in the order above):
the samples of every open sink of one iteration, the P_combine calls of one iteration, the
knowledge summaries of all nodes, their evaluations, the noise probe's calls, and the
selected paths (paths together, the steps of one path in turn).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from ... import trace as T
from ..answers import extract_answer, first_sentence, is_unknown
from ..embeddings import cosine_matrix, embedder_name, embedder_of
from ..generation import derive_seed, greedy, sampled, score_dict
from ..graph import tap
from ..passages import context_event, format_passages, hit_brief, retriever_name
from .. import context_select as CS
from .. import answer_span as S
from .. import fitted
from . import declarations as D
from ..base import Method, RunContext
from ..batched import InOrder, together
from .answer import paths_and_answer
from .config import TAU_CALIBRATION, CrpRagConfig, calibration_mismatch
from . import prompts as P

# Fixed unrelated text for the noise probe's noise_source=fixed (the paper has the LLM write
# distractors for unrelated tasks, noise_source=llm).
NOISE_STEPS = ["Find the boiling point of water at sea level.",
               "List the ingredients of a pancake batter.",
               "Find the height of the tallest mountain in Africa.",
               "Count the legs of a spider."]
NOISE_KNOWLEDGE = ["Pancake batter is made from flour, eggs, milk and a pinch of salt.",
                   "Water boils at 100 degrees Celsius at sea level.",
                   "Kilimanjaro in Tanzania rises to 5,895 metres.",
                   "Spiders have eight legs and most of them spin silk."]


_CLOSE_WORDS = {"", "none", "done", "no further step", "no further steps", "no next step",
                "stop", "finish", "finished", "n/a"}


@dataclass
class _Node:
    id: str
    content: str
    parents: list[str]
    iteration: int
    is_final: bool = False
    forced_final: bool = False
    children: list[str] = field(default_factory=list)
    knowledge: str = ""
    ppl: float | None = None
    sufficient: bool | None = None
    apology: bool = False


@dataclass
class _Sink:
    """An open sink's proposals of one iteration, taken in trace order."""
    v: "_Node"
    n: int
    is_root: bool
    closed: bool = False
    out: list["_Proposal"] = field(default_factory=list)


@dataclass
class _Proposal:
    pid: str
    parent: str
    sample_idx: int
    text: str
    is_final: bool
    raw: str
    seed: int
    call_id: str | None


def _components(adj: np.ndarray) -> list[list[int]]:
    """Connected components of a boolean adjacency matrix, each sorted, ordered by first index."""
    n = adj.shape[0]
    seen = [False] * n
    out = []
    for i in range(n):
        if seen[i]:
            continue
        comp, stack = [], [i]
        seen[i] = True
        while stack:
            a = stack.pop()
            comp.append(a)
            for b in np.nonzero(adj[a])[0].tolist():
                if not seen[b]:
                    seen[b] = True
                    stack.append(b)
        out.append(sorted(comp))
    return out


def _valid_step(obj: Any) -> tuple[str, bool]:
    if not isinstance(obj, dict) or not isinstance(obj.get("step"), str):
        raise KeyError("step")
    fin = obj.get("is_final")
    if not isinstance(fin, bool):
        raise TypeError("is_final is not a boolean")
    return " ".join(obj["step"].split()), fin


def _norm_step(text: str) -> str:
    return " ".join(text.lower().strip(" .").split())


def _valid_steps(obj: Any) -> tuple[list[tuple[str, bool]], list[str]]:
    """P_gen's list (proposals=list): its valid distinct steps, and why each other item was
    dropped. A lone step object counts as a list of one (a backend without grammars may
    answer so); a list without one valid step raises, which retries and then fails visibly."""
    if isinstance(obj, dict):
        obj = obj.get("steps", [obj]) if "step" not in obj else [obj]
    if not isinstance(obj, list):
        raise TypeError(f"expected a JSON list of steps, got {type(obj).__name__}")
    steps: list[tuple[str, bool]] = []
    dropped: list[str] = []
    seen: set[str] = set()
    for i, item in enumerate(obj):
        try:
            text, fin = _valid_step(item)
        except (KeyError, TypeError) as e:
            dropped.append(f"item {i}: {type(e).__name__}: {e}")
            continue
        key = _norm_step(text)
        if key in seen:
            dropped.append(f"item {i}: repeats an earlier step")
            continue
        seen.add(key)
        steps.append((text, fin))
    if not steps:
        raise ValueError(f"no valid step in the list ({'; '.join(dropped) or 'empty list'})")
    return steps, dropped


# Sibling proposals (one parent, one iteration) more similar than this count as near-duplicates
# in the run's sibling_near_duplicates figure; below the merge threshold such pairs survive
# as separate nodes, each with its own retrieval, summary, evaluation and path steps.
SIBLING_DUP_SIM = 0.8


class CrpRag(Method):
    name = "crp-rag"
    title = "CRP-RAG (reasoning graph)"
    kind = "text"
    view = "graph"
    Config = CrpRagConfig
    prompt_version = P.VERSION
    description = ("Builds a DAG of reasoning steps (sampled proposals, similar ones merged), "
                   "retrieves and summarises knowledge per step, prunes every path through a "
                   "step whose evaluation answer has perplexity >= tau_ppl, refuses when no path "
                   "survives, reasons along the best surviving path(s), and extracts the "
                   "short answer from the result.")
    thresholds = D.THRESHOLDS
    node_kinds = D.NODE_KINDS
    failure_tags = D.FAILURE_TAGS
    whatif_nodes = D.WHATIF_NODES
    preferred = True

    @classmethod
    def fitted_state(cls, cfg: CrpRagConfig) -> list[fitted.FitRecord]:
        """A shipped tau_ppl is fitted on its calibration split; a tau the user chose, or no
        evaluation at all, fits nothing."""
        cal = TAU_CALIBRATION.get(cfg.sufficiency_mode)
        # isclose, not a difference test: a NaN tau must not pass for the shipped one
        if cal is None or cfg.no_evaluation or not math.isclose(cfg.tau_ppl, cal.tau,
                                                                 rel_tol=0, abs_tol=1e-9):
            return []
        name, split, qs = fitted.load_questions(cal.ref)
        return [fitted.record("crp_tau_ppl", f"tau_ppl={cfg.tau_ppl} ({cal.mode}, {cal.model})",
                              name, split, qs, data=[cal.tau, cal.mode, cal.model],
                              model=cal.model, mode=cal.mode)]

    # ------------------------------------------------------------------ run
    def run(self, ctx: RunContext, question: str) -> Iterator[T.Event]:
        cfg: CrpRagConfig = ctx.config
        self.pv = P.VERSION
        nodes: dict[str, _Node] = {}
        root_id = ctx.node_id("v")
        nodes[root_id] = _Node(root_id, question, [], 0)

        yield ctx.set_phase("gc")
        yield T.node_added(root_id, "question", question, layer=0, state="created",
                           is_source=True, is_final=False, iteration=0)
        for rec in self.fitted_state(cfg):
            yield rec.event(root_id, ctx.gold, ctx.dataset)
            flag = calibration_mismatch(rec, cfg.tau_ppl, ctx)
            if flag:
                yield T.custom("tau_calibration_mismatch", root_id, **flag)

        if cfg.root_probe:
            done = yield from self._root_probe(ctx, question, nodes[root_id])
            if done:
                return
            yield ctx.set_phase("gc")

        yield from self._construct(ctx, question, nodes, root_id)

        order = [nid for nid in nodes if nid != root_id]
        if cfg.noise_mode == "nodes":
            yield from self._inject_noise(ctx, nodes, order, "nodes")
        yield ctx.set_phase("kra")
        yield from together(ctx, [self._kra(ctx, question, nodes[nid]) for nid in order],
                              cfg.batch_size)
        if cfg.noise_mode == "knowledge":
            yield from self._inject_noise(ctx, nodes, order, "knowledge")

        yield ctx.set_phase("ag")
        root = nodes[root_id]
        root.sufficient = True
        yield T.node_updated(root_id, "sufficient", assumed_sufficient=True,
                             note="the root is not scored (spec §7 gap 11)")
        if not cfg.no_evaluation:
            yield from together(ctx, [self._evaluate(ctx, nodes[nid]) for nid in order],
                                  cfg.batch_size)
        yield from paths_and_answer(ctx, question, nodes, root_id)

    # ------------------------------------------------------------------ GC
    def _construct(self, ctx: RunContext, q: str, nodes: dict[str, _Node],
                   root_id: str) -> Iterator[T.Event]:
        cfg: CrpRagConfig = ctx.config
        emb = embedder_of(ctx)
        n = 0
        reason = "all_sinks_final"
        forced: list[str] = []
        sib = [0, 0]            # sibling pairs, those above SIBLING_DUP_SIM
        while True:
            open_sinks = [v for v in nodes.values() if not v.children and not v.is_final]
            if not open_sinks:
                reason = "all_sinks_final"
                break
            cap_hit = len(nodes) >= cfg.max_nodes
            if n >= cfg.max_iterations or cap_hit:
                reason = "max_iterations" if not cap_hit else "max_nodes"
                for v in open_sinks:
                    v.is_final = v.forced_final = True
                    forced.append(v.id)
                    yield T.node_updated(v.id, None, is_final=True, forced_final=True,
                                         truncated=True, forced_reason=reason)
                break
            yield T.custom("gc_iteration_started", None, iteration=n,
                           open_sinks=[v.id for v in open_sinks])
            cands: list[_Proposal] = []
            samples = [it for v in open_sinks
                       for it in self._propose(ctx, q, nodes, v, n, root_id, cands)]
            yield from together(ctx, samples, cfg.batch_size)
            new_nodes, capped = yield from self._merge(ctx, q, nodes, cands, n, emb, sib)
            yield T.custom("gc_iteration_finished", None, iteration=n,
                           new_nodes=new_nodes, capped=capped,
                           open_sinks=sum(1 for v in nodes.values()
                                          if not v.children and not v.is_final),
                           finals=sum(1 for v in nodes.values() if v.is_final))
            n += 1
        depth = max(v.iteration for v in nodes.values())
        yield T.custom("graph_completed", None, reason=reason, forced_finals=forced,
                       nodes=len(nodes), edges=sum(len(v.parents) for v in nodes.values()),
                       depth=depth, iterations=n)
        yield T.custom("sibling_near_duplicates", None, pairs=sib[0], near_duplicates=sib[1],
                       rate=round(sib[1] / sib[0], 4) if sib[0] else None,
                       threshold=SIBLING_DUP_SIM, embedder=embedder_name(emb),
                       proposals=cfg.proposals)

    def _propose(self, ctx: RunContext, q: str, nodes: dict[str, _Node], v: _Node, n: int,
                 root_id: str, cands: list[_Proposal]) -> list[Iterator[T.Event]]:
        """One item per sample of sink ``v`` (its calls run with the other sinks'); each
        sample is taken in trace order and the last one settles the sink into ``cands``."""
        cfg: CrpRagConfig = ctx.config
        known = [nodes[a].content for a in self._ancestors(nodes, v.id) if a != root_id]
        if v.id != root_id:
            known.append(v.content)
        sink = _Sink(v, n, v.id == root_id)
        if cfg.proposals == "list":
            return [self._sample_list(ctx, q, known, sink, cands)]
        k = cfg.samples_per_sink
        if not sink.is_root:
            k = 1 if cfg.structure == "chain" else (cfg.samples_below_root or k)
        return [self._sample(ctx, q, known, sink, s, cands if s == k - 1 else None)
                for s in range(k)]

    def _sample(self, ctx: RunContext, q: str, known: list[str], sink: "_Sink", s: int,
                cands: list[_Proposal] | None) -> Iterator[Any]:
        cfg: CrpRagConfig = ctx.config
        v, n = sink.v, sink.n
        seed = derive_seed(ctx.seed, "crp-gen", n, v.id, s)
        params = sampled(cfg.gen_max_tokens, cfg.gen_temperature, cfg.gen_top_p, seed)
        calls: list[T.Event] = []
        parsed = yield from tap(ctx.generate_json(
            "propose", P.gen(q, known, cfg.named_steps), P.GEN_SCHEMA, params, node_id=v.id,
            prompt_version=self.pv, validate=_valid_step), calls)
        yield InOrder(self._take(ctx, q, sink, s, seed, parsed, calls, cands))

    def _take(self, ctx: RunContext, q: str, sink: "_Sink", s: int, seed: int, parsed: Any,
              calls: list[T.Event], cands: list[_Proposal] | None) -> Iterator[T.Event]:
        cfg: CrpRagConfig = ctx.config
        v, n = sink.v, sink.n
        raw = calls[-1].data.get("output", "") if calls else ""
        call_id = calls[-1].llm_call_id if calls else None
        pid = f"{v.id}.p{n}.{s}"
        if parsed is None:
            yield T.custom("proposal_generated", v.id, iteration=n, proposal_id=pid,
                           parent=v.id,
                           sample_idx=s, temperature=cfg.gen_temperature, seed=seed,
                           raw=raw, step=None, is_final=None, parse_ok=False,
                           call_id=call_id)
        else:
            text, fin = parsed
            yield T.custom("proposal_generated", v.id, iteration=n, proposal_id=pid, parent=v.id,
                           sample_idx=s, temperature=cfg.gen_temperature, seed=seed, raw=raw,
                           step=text, is_final=fin, parse_ok=True, call_id=call_id)
            if text.strip(" .").lower() not in _CLOSE_WORDS:
                sink.out.append(_Proposal(pid, v.id, s, text, fin, raw, seed, call_id))
            elif not sink.is_root and not sink.closed:
                sink.closed = True
                v.is_final = True
                yield T.custom("sink_closed", v.id, iteration=n,
                               reason="the model proposed no further step", raw=raw)
                yield T.node_updated(v.id, None, is_final=True, closed_by_model=True)
        if cands is not None:
            yield from self._settle_sink(q, sink, cands)

    def _sample_list(self, ctx: RunContext, q: str, known: list[str], sink: "_Sink",
                     cands: list[_Proposal]) -> Iterator[Any]:
        """proposals=list: one sampled P_gen call for sink ``v`` returning its next steps."""
        cfg: CrpRagConfig = ctx.config
        v, n = sink.v, sink.n
        seed = derive_seed(ctx.seed, "crp-gen-list", n, v.id)
        params = sampled(cfg.gen_max_tokens * cfg.list_max_steps, cfg.gen_temperature,
                           cfg.gen_top_p, seed)
        calls: list[T.Event] = []
        parsed = yield from tap(ctx.generate_json(
            "propose", P.gen_list(q, known, cfg.named_steps, cfg.list_max_steps),
            P.gen_list_schema(cfg.list_max_steps), params, node_id=v.id,
            prompt_version=self.pv, validate=_valid_steps), calls)
        yield InOrder(self._take_list(ctx, q, sink, seed, parsed, calls, cands))

    def _take_list(self, ctx: RunContext, q: str, sink: "_Sink", seed: int, parsed: Any,
                   calls: list[T.Event], cands: list[_Proposal]) -> Iterator[T.Event]:
        cfg: CrpRagConfig = ctx.config
        v, n = sink.v, sink.n
        raw = calls[-1].data.get("output", "") if calls else ""
        call_id = calls[-1].llm_call_id if calls else None
        common = dict(iteration=n, parent=v.id, temperature=cfg.gen_temperature, seed=seed,
                      raw=raw, call_id=call_id, mode="list")
        if parsed is None:
            # generate_json has added the parse_failed node; the sink settles as one with no
            # parseable proposal (the root: the question as its final step; others: final)
            yield T.custom("proposal_generated", v.id, proposal_id=f"{v.id}.p{n}.0",
                           sample_idx=0, step=None, is_final=None, parse_ok=False, **common)
            yield T.node_updated(v.id, None, proposal_parse_failed=True, proposal_raw=raw,
                                 proposal_call_id=call_id)
            yield from self._settle_sink(q, sink, cands)
            return
        steps, dropped = parsed
        if cfg.structure == "chain" and not sink.is_root:
            steps = steps[:1]
        real = [(t, f) for t, f in steps if t.strip(" .").lower() not in _CLOSE_WORDS]
        for i, (text, fin) in enumerate(steps):
            pid = f"{v.id}.p{n}.{i}"
            yield T.custom("proposal_generated", v.id, proposal_id=pid, sample_idx=i,
                           step=text, is_final=fin, parse_ok=True, list_size=len(steps),
                           dropped=dropped if i == 0 else [], **common)
        if dropped:
            yield T.node_updated(v.id, None, proposal_items_dropped=dropped)
        if real:
            sink.out.extend(_Proposal(f"{v.id}.p{n}.{i}", v.id, i, t, f, raw, seed, call_id)
                            for i, (t, f) in enumerate(steps) if (t, f) in real)
        elif not sink.is_root:
            sink.closed = True
            v.is_final = True
            yield T.custom("sink_closed", v.id, iteration=n,
                           reason="the model proposed no further step", raw=raw)
            yield T.node_updated(v.id, None, is_final=True, closed_by_model=True)
        yield from self._settle_sink(q, sink, cands)

    @staticmethod
    def _settle_sink(q: str, sink: "_Sink", cands: list[_Proposal]) -> Iterator[T.Event]:
        v, n, out = sink.v, sink.n, sink.out
        if sink.closed:
            return          # a closed sink is final: its other proposals are discarded
        if not out:
            if sink.is_root:
                # the root must get a step: fall back to the question itself as the final step
                out.append(_Proposal(f"{v.id}.p{n}.fallback", v.id, -1,
                                     f"Answer the question: {q}", True, "", 0, None))
                yield T.custom("proposal_generated", v.id, iteration=n, proposal_id=out[0].pid,
                               parent=v.id, sample_idx=-1, temperature=0.0, seed=0, raw="",
                               step=out[0].text, is_final=True, parse_ok=True, fallback=True)
            else:
                v.is_final = v.forced_final = True
                yield T.custom("sink_closed", v.id, iteration=n, reason="no parseable proposal")
                yield T.node_updated(v.id, None, is_final=True, forced_final=True,
                                     forced_reason="no parseable proposal")
        cands.extend(out)

    def _merge(self, ctx: RunContext, q: str, nodes: dict[str, _Node], cands: list[_Proposal],
               n: int, emb: Any, sib: list[int]) -> Iterator[T.Event]:
        cfg: CrpRagConfig = ctx.config
        if not cands:
            return [], []
        cands = sorted(cands, key=lambda c: (self._id_key(c.parent), c.sample_idx))
        vecs = np.asarray(emb.encode([c.text for c in cands]), dtype=np.float32)
        sim = cosine_matrix(vecs)
        m = len(cands)
        pairs = [(i, j) for i in range(m) for j in range(i + 1, m)
                 if cands[i].parent == cands[j].parent]
        near = sum(1 for i, j in pairs if sim[i, j] > SIBLING_DUP_SIM)
        sib[0] += len(pairs)
        sib[1] += near
        yield T.custom("similarity_computed", None, iteration=n, sibling_pairs=len(pairs),
                       sibling_near_duplicates=near,
                       proposals=[c.pid for c in cands], texts=[c.text for c in cands],
                       matrix=np.round(sim, 4).tolist(), tau_combine=cfg.tau_combine,
                       embedder=embedder_name(emb), merging=cfg.structure == "graph")
        adj = (sim > cfg.tau_combine) & ~np.eye(m, dtype=bool)
        groups = _components(adj) if cfg.structure == "graph" else [[i] for i in range(m)]
        built: list[dict[str, Any]] = yield from together(
            ctx, [self._combine(ctx, q, cands, sim, g, n) for g in groups], cfg.batch_size)
        new_ids: list[str] = []
        capped: list[dict[str, Any]] = []
        room = max(0, cfg.max_nodes - len(nodes))
        for b in built:
            if len(new_ids) >= min(cfg.max_new_per_iter, room):
                capped.append(b)
                continue
            nid = ctx.node_id("v")
            b["text"] = ctx.whatif.step(nid, b["text"])
            node = _Node(nid, b["text"], b["parents"], n + 1, is_final=b["is_final"])
            nodes[nid] = node
            for p in b["parents"]:
                nodes[p].children.append(nid)
            new_ids.append(nid)
            attrs = {k: v for k, v in b.items() if k not in ("text", "parents", "is_final")}
            yield T.node_added(nid, "final" if b["is_final"] else "step", b["text"],
                               parents=b["parents"], layer=n + 1, state="created",
                               is_source=False, is_final=b["is_final"], iteration=n + 1,
                               proposal_ids=attrs.pop("members"), **attrs)
        for b in capped:
            yield T.custom("node_capped", None, iteration=n, proposals=b["members"],
                           text=b["text"], parents=b["parents"],
                           reason=f"max_new_per_iter={cfg.max_new_per_iter}, "
                                  f"max_nodes={cfg.max_nodes}")
        # a sink whose every proposal was capped stays without children: make it final
        for nid in list(nodes):
            v = nodes[nid]
            if v.iteration == n and not v.children and not v.is_final and \
                    any(v.id in b["parents"] for b in capped):
                v.is_final = v.forced_final = True
                yield T.node_updated(v.id, None, is_final=True, forced_final=True,
                                     forced_reason="all proposals capped")
        return new_ids, [b["members"] for b in capped]

    def _combine(self, ctx: RunContext, q: str, cands: list[_Proposal], sim: np.ndarray,
                 g: list[int], n: int) -> Iterator[T.Event]:
        """One group of similar proposals as a node record; a group of two or more is fused
        by one P_combine call (run with the other groups'), or with ``merge_by=first`` kept
        as its first proposal, final when any member is."""
        cfg: CrpRagConfig = ctx.config
        members = [cands[i] for i in g]
        parents = list(dict.fromkeys(c.parent for c in members))
        origin = [[c.parent, c.sample_idx, c.raw, cfg.gen_temperature, c.seed]
                  for c in members]
        if len(g) == 1:
            c = members[0]
            return dict(text=c.text, is_final=c.is_final, parents=parents, merged=False,
                        members=[c.pid], origin=origin)
        texts = [c.text for c in members]
        sims = [[cands[i].pid, cands[j].pid, round(float(sim[i, j]), 4)]
                for a, i in enumerate(g) for j in g[a + 1:]]
        calls: list[T.Event] = []
        parsed = None
        if cfg.merge_by == "call":
            parsed = yield from tap(ctx.generate_json(
                "combine", P.combine(q, texts, cfg.comparison_demos), P.COMBINE_SCHEMA,
                greedy(cfg.gen_max_tokens),
                node_id=parents[0], prompt_version=self.pv, validate=_valid_step), calls)
        no_text = parsed is None or not parsed[0]
        fallback = no_text and cfg.merge_by == "call"
        if no_text:
            # the spec's rule where P_combine gives no answer (§7 gap 9): first text, OR
            text, fin = texts[0], any(c.is_final for c in members)
        else:
            text, fin = parsed
        raw = calls[-1].data.get("output", "") if calls else ""
        call_id = calls[-1].llm_call_id if calls else None
        yield T.custom("proposals_merged", None, iteration=n,
                       members=[c.pid for c in members], texts=texts, sims=sims,
                       merged_text=text, is_final=fin, parents=parents, raw=raw,
                       call_id=call_id, fallback=fallback, merged_by=cfg.merge_by)
        return dict(text=text, is_final=fin, parents=parents, merged=True,
                    members=[c.pid for c in members], origin=origin, merged_from=texts,
                    merge_sims=sims, merge_call_id=call_id, merge_raw=raw,
                    merge_fallback=fallback)

    # ------------------------------------------------------------------ KRA
    def _kra(self, ctx: RunContext, q: str, v: _Node) -> Iterator[T.Event]:
        cfg: CrpRagConfig = ctx.config
        query = f"{q} {v.content}" if cfg.query_with_question else v.content
        hits = yield from ctx.retrieve(v.id, query, cfg.top_k, retriever_name(ctx, cfg.retriever))
        docs = [hit_brief(h) for h in hits]
        yield T.custom("node_retrieved", v.id, query=query, k=cfg.top_k, docs=docs)
        yield T.node_updated(v.id, "retrieved", retrieval_query=query, docs=docs)
        cuts = CS.select_many([h.text for h in hits], query, cfg.passage_chars, cfg.context,
                              [h.title for h in hits])
        if any(c.cut_chars for c in cuts):
            yield context_event(v.id, hits, cuts)
        passages = format_passages(hits, cfg.passage_chars, numbered=False, cuts=cuts)
        if cfg.no_aggregation:
            knowledge = passages
            call_id = None
        else:
            calls: list[T.Event] = []
            comp = yield from tap(ctx.generate(
                "aggregate",
                P.aggregate(v.content, passages, cfg.integration_prompt, cfg.comparison_demos),
                greedy(cfg.summary_max_tokens),
                node_id=v.id, prompt_version=self.pv), calls)
            knowledge = " ".join(comp.text.split()) or "(empty summary)"
            call_id = calls[-1].llm_call_id if calls else None
        v.knowledge = knowledge
        v.apology = (not cfg.no_aggregation) and is_unknown(first_sentence(knowledge))
        yield T.custom("node_aggregated", v.id, knowledge=knowledge, length=len(knowledge),
                       apology=v.apology, aggregated=not cfg.no_aggregation, call_id=call_id)
        yield T.node_updated(v.id, "aggregated", knowledge=knowledge, apology=v.apology)

    # ------------------------------------------------------------------ AG: evaluation
    def _evaluate(self, ctx: RunContext, v: _Node) -> Iterator[T.Event]:
        cfg: CrpRagConfig = ctx.config
        sentinel = cfg.sufficiency_mode == "ppl+unknown"
        calls: list[T.Event] = []
        comp = yield from tap(ctx.generate(
            "evaluate", P.evaluate(v.content, v.knowledge, sentinel, cfg.eval_shots),
            greedy(cfg.eval_max_tokens), node_id=v.id, prompt_version=self.pv), calls)
        ans = comp.text.strip()
        sc = score_dict(comp)
        ppl = comp.scores().perplexity          # unrounded: the decision uses the exact value
        unknown = is_unknown(ans)
        reasons = []
        if ppl is None:
            reasons.append("empty evaluation answer")
        elif ppl >= cfg.tau_ppl:
            reasons.append(f"perplexity {ppl:.3f} >= tau_ppl {cfg.tau_ppl:g}")
        if sentinel and unknown:
            reasons.append("evaluation answer is UNKNOWN / an apology")
        if sentinel and v.apology:
            reasons.append("knowledge summary is an apology")
        v.ppl = ppl
        v.sufficient = ctx.whatif.verdict(v.id, "sufficiency", not reasons)
        if v.sufficient == bool(reasons):       # forced by a what-if
            reasons = [] if v.sufficient else ["forced insufficient by an intervention"]
        verdict = "sufficient" if v.sufficient else "insufficient"
        yield T.custom("node_evaluated", v.id, eval_answer=ans,
                       mean_nll=sc.get("mean_nll"),
                       perplexity=ppl, tau_ppl=cfg.tau_ppl, verdict=verdict, unknown=unknown,
                       ppl_verdict=(ppl is not None and ppl < cfg.tau_ppl),
                       reasons=reasons, call_id=calls[-1].llm_call_id if calls else None)
        scores = {k: sc[k] for k in ("confidence", "mean_nll") if k in sc}
        if ppl is not None:
            scores["perplexity"] = ppl
        yield T.node_scored(v.id, scores, {"tau_ppl": cfg.tau_ppl},
                            call_id=calls[-1].llm_call_id if calls else None)
        yield T.node_updated(v.id, verdict, eval_answer=ans, unknown=unknown,
                             verdict_reasons=reasons, sufficiency_mode=cfg.sufficiency_mode)
        if not v.sufficient:
            yield T.custom("node_marked_insufficient", v.id,
                           margin=None if ppl is None else round(cfg.tau_ppl - ppl, 4),
                           reasons=reasons)

    # ------------------------------------------------------------------ AG: paths + answer
    # ------------------------------------------------------------------ noise probe
    def _inject_noise(self, ctx: RunContext, nodes: dict[str, _Node], order: list[str],
                      mode: str) -> Iterator[T.Event]:
        cfg: CrpRagConfig = ctx.config
        n_hit = round(len(order) * cfg.noise_pct / 100.0)
        if not n_hit:
            return
        seed = derive_seed(ctx.seed, "crp-noise", mode, len(order))
        rnd = random.Random(seed)
        hit = sorted(rnd.sample(order, n_hit), key=self._id_key)
        fixed = NOISE_STEPS if mode == "nodes" else NOISE_KNOWLEDGE
        yield ctx.set_phase("noise")
        yield from together(ctx, [self._noise(ctx, nodes[nid], mode, seed + i,
                                                fixed[i % len(fixed)])
                                    for i, nid in enumerate(hit)], cfg.batch_size)

    def _noise(self, ctx: RunContext, v: _Node, mode: str, salt: int,
               fixed: str) -> Iterator[T.Event]:
        cfg: CrpRagConfig = ctx.config
        task = None
        if cfg.noise_source == "llm":
            task = P.NOISE_TASKS[salt % len(P.NOISE_TASKS)]
            comp = yield from ctx.generate(
                "noise", P.noise(mode, task),
                greedy(cfg.gen_max_tokens if mode == "nodes" else cfg.summary_max_tokens),
                node_id=v.id, prompt_version=self.pv)
            noise = " ".join(comp.text.split()) or fixed
        else:
            noise = fixed
        original = v.content if mode == "nodes" else v.knowledge
        yield T.custom("noise_injected", v.id, mode=mode, original=original, noise=noise,
                       source=cfg.noise_source, task=task)
        if mode == "nodes":
            yield T.node_updated(v.id, None, noise=True, noise_text=noise,
                                 original_text=v.content)
            v.content = noise
        else:
            yield T.node_updated(v.id, None, noise=True, knowledge=noise,
                                 original_knowledge=v.knowledge)
            v.knowledge = noise

    # ------------------------------------------------------------------ root probe
    def _root_probe(self, ctx: RunContext, q: str, root: _Node) -> Iterator[T.Event]:
        cfg: CrpRagConfig = ctx.config
        yield ctx.set_phase("probe")
        yield from self._kra(ctx, q, root)
        yield from self._evaluate(ctx, root)
        if not root.sufficient:
            yield T.custom("root_probe", root.id, sufficient=False,
                           note="root knowledge insufficient: building the graph")
            return False
        yield T.custom("root_probe", root.id, sufficient=True,
                       note="root knowledge sufficient: graph construction skipped")
        yield T.path_event("p1", [root.id], "selected", max_ppl=root.ppl, mean_ppl=root.ppl,
                           length=1, truncated=False)
        calls: list[T.Event] = []
        comp = yield from tap(ctx.generate(
            "reason", P.step(P.condition_text(q, []), q, root.knowledge, last=True),
            greedy(cfg.step_max_tokens), node_id=root.id, prompt_version=self.pv), calls)
        a = " ".join(comp.text.split())
        yield T.custom("path_answered", None, path_id="p1", answer=a)
        sc = score_dict(comp)
        sp = yield from S.extract(ctx, q, a, extract_answer(a) or a, parents=[root.id],
                                  layer=1, enabled=cfg.answer_span,
                                  if_stated=cfg.span_if_stated)
        aid = ctx.node_id("a")
        yield T.node_added(aid, "answer", sp.text, parents=sp.parents,
                           layer=1 + sp.layer_offset, state="answered",
                           full_answer=a, path_answers={"p1": a}, **sp.fields())
        if sc:
            yield T.node_scored(aid, {"perplexity": sc["perplexity"],
                                      "confidence": sc["confidence"]},
                                call_id=calls[-1].llm_call_id if calls else None)
        yield T.answer(sp.text, node_id=aid, confidence=sc.get("confidence"), full_answer=a,
                       paths=["p1"], final_perplexity=sc.get("perplexity"), root_probe=True,
                       **sp.fields())
        return True

    # ------------------------------------------------------------------ graph utils
    @staticmethod
    def _id_key(nid: str) -> tuple[int, str]:
        digits = "".join(ch for ch in nid if ch.isdigit())
        return (int(digits) if digits else 0, nid)

    def _ancestors(self, nodes: dict[str, _Node], nid: str) -> list[str]:
        seen: set[str] = set()
        stack = list(nodes[nid].parents)
        while stack:
            a = stack.pop()
            if a not in seen:
                seen.add(a)
                stack.extend(nodes[a].parents)
        return sorted(seen, key=self._id_key)      # creation order is a topological order
