"""CogGRAG: mind-map decomposition, one-shot KG retrieval, bottom-up self-verified
reasoning (spec: shared/methods/coggrag.md, "paper mode" with the spec's [REC] defaults).

Stage 1 (``mindmap``): the question is split top-down into a mind map of
sub-questions marked End / Continue. Stage 2 (``retrieval``): local and global keys
are extracted once for the whole map, linked to the KG, expanded to 1-hop neighbours and
pruned by similarity to the key triples (epsilon). Stage 3 (``reasoning``): the
deepest level first, each sibling group is answered from T and M̂ (the deeper levels'
pairs), verified, and re-thought once when judged wrong; the root's answer is final, cut to
its short span by one constrained call (``answer_span``, an addition: the paper's answers are
sentences).

Trace layout (view "mindmap"): mind-map nodes have ids "0", "0.1", "0.1.2" (kind
``question`` for the root, ``subquestion`` below), ``layer`` = level; a ``retrieval``
node (child of the root) holds the scored candidates; the ``answer`` node hangs off
the root (through the ``span`` node, kind ``answer_extraction``, when the short answer is
extracted). The event names of spec coggrag.md §6.2 are emitted in its order as custom events.
Answer perplexity, confidence (1/perplexity) and the verifier's p_right are node scores.

Local keys come from one call per node (the paper's text), decoded together as one batch
(``extract_batch``); ``local_extraction`` offers Eq. 2's one call over the whole map (the
released code), which the 1.5B model turns into copies of one key set. p_right's two
scoring passes per verdict run only when something reads them (``min_p_right`` > 0, or
``verdict_scores`` = always); a skipped one is recorded as such.

Batched (``batched.together``; events in the same order): the local-key call(s) with the
global-key call (``extract_batch``, or ``batch_size`` if larger), and under ``batch_size``
the settling of the members of one sibling group (verification, p_right's scorings,
re-think). Not the decomposition:
whether a node is split at all depends on the node budget the splits before it used.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from ... import trace as T
from ...config import Preset, PresetConfig, knob
from ...llm.base import GenParams
from .. import answer_span as S
from . import declarations as D
from . import reasoning as R
from ..base import Method, RunContext
from ..batched import batch_knob, together
from .mindmap import MMNode, bfs_order, force_end, grow, norm_q
from .retrieval import (TripleEmbedder, added_triple, as_intervened, describe, description_events,
                                retrieval_events, retrieve, triple_id, validate_global,
                                validate_local)
from ..answers import hit_at_1, normalize_answer
from ..graph import require_kg
from . import prompts as P

span_perplexity = R.span_perplexity


_ONE_CALL = "#coggrag-one-extraction-call-scoring-only-when-read"
_HOTPOTQA = "#on-hotpotqa"
_FEWER = "#coggrag-fewer-tokens-to-read-and-to-write"
_KEYS = "#coggrag-key-extraction-per-node-decoded-together"


@dataclass
class CogConfig(PresetConfig):
    DOCS = "docs/methods/coggrag.md"        # the method page: knob table and evidence
    max_level: int = knob(3, "T_max: deepest mind-map level (root = 0); deeper Continue nodes "
                          "are forced to End", min=1, max=5, group="decomposition", paper="not reported")
    max_children: int = knob(5, "N_max: sub-questions per decomposition", min=1, max=10,
                             group="decomposition", paper="no cap")
    max_nodes: int = knob(15, "Mind-map node budget (root included)", min=1, max=60,
                          group="decomposition", paper="10 expansions (released code)")
    decomposition: bool = knob(True, "Decompose the question (off = the -nd ablation: the "
                               "root alone, marked End)", group="decomposition", paper=True, ablation=True)
    degenerate_cos: float = knob(0.95, "A single child this similar to its parent is a "
                                 "degenerate split (the parent becomes a leaf)", min=0.5,
                                 max=1.0, group="decomposition")
    local_extraction: str = knob("per_node", "Key extraction: per_node = a call per node "
                                 "(the paper's text); one_call = one call, keys per question "
                                 "(the code); batched = one call, keys not attributed",
                                 choices=["per_node", "one_call", "batched"], group="retrieval",
                                 paper="the text: per question; Eq. 2 and the code: one call "
                                 "over the map", status="paper", evidence=_KEYS)
    global_keys: bool = knob(True, "Global key subgraph over all questions (off = the -ng "
                             "ablation)", group="retrieval", paper=True, ablation=True)
    use_tuples_as_keys: bool = knob(False, "Also prune with (entity, relation) tuples (the "
                                    "released code; the paper's formula uses triples only)",
                                    group="retrieval", paper=False, ablation=True)
    epsilon: float = knob(0.7, "Keep a KG triple when its cosine similarity to some key triple is "
                          "above this (0-1; the paper's 0.7)", min=0.0, max=1.0, group="retrieval",
                          paper=0.7, evidence=_HOTPOTQA)
    k_max: int = knob(50, "Safety cap on kept triples, best first (0 = none; not in the "
                      "paper)", min=0, max=5000, group="retrieval", paper="no cap")
    expand_hops: int = knob(1, "Neighbour expansion depth in hops (1 = the paper; 2 also expands "
                            "the far ends of first-hop triples that pass epsilon)", min=1, max=2,
                            group="retrieval", paper=1, evidence=_HOTPOTQA)
    entity_descriptions: bool = knob(False, "Put the lead sentence of each linked entity's own "
                                     "article beside the triples when it is similar to a mind-map "
                                     "question", group="retrieval", paper=False,
                                     status="experimental", evidence=_HOTPOTQA)
    description_min_sim: float = knob(0.5, "Keep an entity description when its cosine similarity "
                                      "to some mind-map question is above this (0-1; the released "
                                      "code's 0.5)", min=0.0, max=1.0, group="retrieval",
                                      paper="0.5 (released code)", status="experimental",
                                      evidence=_HOTPOTQA)
    max_edges_per_entity: int = knob(300, "Neighbour expansion cap per linked entity "
                                     "(diverse relations first)", min=1, max=100000,
                                     group="retrieval")
    skip_schema_relations: bool = knob(True, "Leave schema/noise relations (type.object.*, "
                                       "common.*, freebase.*, sameAs) out of the candidates "
                                       "(FRAG's list; not in the CogGRAG paper)",
                                       group="retrieval")
    link_top: int = knob(2, "KG nodes linked per extracted entity string", min=1, max=5,
                         group="retrieval")
    link_min_score: float = knob(0.6, "Minimum entity-linking score (exact 1.0, alias 0.9, "
                                 "fuzzy 0.8 x ratio, embedding 0.75 x cosine)", min=0.0,
                                 max=1.0, group="retrieval")
    triple_text: str = knob("plain", "Triple verbalisation for embedding: plain 'head "
                            "relation tail' or paren '(head, relation, tail)' as the code",
                            choices=["plain", "paren"], group="retrieval")
    relation_text: str = knob("last", "Relation ids as text: last segment humanised "
                              "(film.film.directed_by -> directed by), full humanised, or raw",
                              choices=["last", "full", "raw"], group="retrieval")
    reasoning: str = knob("group", "Reason per sibling group (one call, the paper's Fig. 6) "
                          "or per node", choices=["group", "node"], group="reasoning", paper="group")
    context_scope: str = knob("all", "M̂: all deeper-level pairs (paper) or descendants only",
                              choices=["all", "descendants"], group="reasoning", paper="all")
    knowledge_scope: str = knob("all", "Knowledge in prompts: all = every kept triple (the "
                                "paper); node = the node's own triples plus the top global ones",
                                choices=["all", "node"], group="reasoning", paper="all",
                                evidence=_HOTPOTQA)
    prompt_layout: str = knob("knowledge_first", "Prompts of reasoning, verification, "
                              "re-think: T first under one system line (cached once a run), "
                              "or paper: role line, M̂, then T",
                              choices=list(P.LAYOUTS), group="reasoning", paper="paper",
                              evidence=_FEWER)
    answer_echo: bool = knob(False, "Reasoning output repeats each question before its answer "
                             "(the paper's {Question, Answer}); off = the answers alone, in "
                             "order", group="reasoning", paper=True, evidence=_FEWER)
    exclude_unknown_from_context: bool = knob(False, "Leave 'I don't know' answers out of the "
                                              "deeper-level answers a node's prompt shows",
                                              group="reasoning", paper=False,
                                              status="experimental")
    verification: bool = knob(True, "Self-verification and re-think (off = the -nv ablation)",
                              group="reasoning", paper=True, ablation=True)
    max_rethink: int = knob(1, "Re-thinks after a wrong verdict (paper 1; >1 re-verifies)",
                            min=0, max=5, group="reasoning", paper=1)
    abstain_in_first_pass: bool = knob(True, "Allow 'I don't know' in the first reasoning pass "
                                       "too (the paper's text); off = only when re-thinking (its "
                                       "templates)", group="reasoning",
                                       paper="the text: yes; the templates: re-think only",
                                       status="paper", evidence=_HOTPOTQA)
    temperature_explore: float = knob(0.4, "Temperature of decomposition and extraction",
                                      min=0.0, max=2.0, group="llm", paper=0.4)
    temperature_reason: float = knob(0.0, "Temperature of reasoning, verification, re-think",
                                     min=0.0, max=2.0, group="llm", paper=0.0)
    deterministic: bool = knob(False, "Greedy decoding everywhere", group="llm",
                               paper="False (the released code is greedy)", status="paper")
    max_tokens_decompose: int = knob(512, "Max new tokens: decomposition", min=16, max=4096,
                                     group="llm", paper="1024 (released code)")
    max_tokens_extract: int = knob(768, "Max new tokens: key extraction", min=16, max=4096,
                                   group="llm")
    max_tokens_reason: int = knob(768, "Max new tokens: reasoning", min=16, max=4096,
                                  group="llm")
    max_tokens_verify: int = knob(128, "Max new tokens: verification", min=4, max=1024,
                                  group="llm")
    max_tokens_rethink: int = knob(384, "Max new tokens: re-think", min=16, max=4096,
                                   group="llm")
    max_items: int = knob(6, "Most entities / tuples / triples per extraction list", min=1,
                          max=30, group="llm")
    context_budget: float = knob(0.7, "Prompt budget as a share of n_ctx; lowest-scored "
                                 "triples, then oldest M̂ pairs are dropped beyond it (each "
                                 "call says what it dropped)", min=0.2, max=0.95, group="llm")
    batch_size: int = batch_knob()
    extract_batch: int = knob(4, "Key-extraction calls (one per node, and the global one) "
                              "decoded as one batch of at most this many sequences, which share "
                              "decode steps (1 = one after another)",
                              min=1, max=8, group="batching", status="extension",
                              evidence=_KEYS)
    min_p_right: float = knob(0.0, "Also re-think an answer judged right when the verifier's "
                              "p_right is below this (0-1; 0 = off, not in the paper)", min=0.0,
                              max=1.0, group="reasoning", paper=0.0, status="experimental",
                              evidence=_ONE_CALL)
    verdict_scores: str = knob("when_used", "p_right's two scoring passes per verdict: only when "
                               "min_p_right reads them (default), or always, for the inspector "
                               "and the what-if slider", choices=["when_used", "always"],
                               group="reasoning", paper="not in the paper", evidence=_ONE_CALL)
    min_confidence: float = knob(0.0, "Also re-think an answer whose confidence (1 / perplexity "
                                 "of its tokens) is below this (0-1; 0 = off, not in the paper)",
                                 min=0.0, max=1.0, group="reasoning", paper=0.0,
                                 status="experimental")
    answer_span: bool = S.span_knob("no extraction: the root's answer, often a sentence; how "
                                    "EM was computed is not stated (spec gap 19)",
                                    group="reasoning")

    PRESETS = {
        "small-model": Preset(
            "small-model",
            "Budgets that keep a CPU run to minutes (T_max 2, 3 children, 7 nodes, 4 items "
            "per list, short generations; benchmarks/methods_kg.py's setting). With the "
            "default model on HotpotQA-100 questions 26-50 it gave the paper setting's answer "
            "on all 25 (token F1 0.15 both, 10.4 calls per question both): the 1.5B model's "
            "mind maps and outputs already fit these budgets, so it saves nothing there.",
            {"max_level": 2, "max_children": 3, "max_nodes": 7, "max_items": 4,
             "max_tokens_decompose": 160, "max_tokens_extract": 160,
             "max_tokens_reason": 200, "max_tokens_rethink": 96}),
    }


class CogGRAG(Method):
    name = "coggrag"
    title = "CogGRAG (mind map, KG retrieval, self-verification)"
    kind = "kg"
    view = "mindmap"
    Config = CogConfig
    prompt_version = P.VERSION
    description = ("Decomposes the question top-down into a mind map, retrieves KG triples "
                   "once for all its questions (local and global keys, similarity pruning), "
                   "then answers bottom-up with a verifier and one re-think per failed check; "
                   "the root's answer is cut to its short span.")
    thresholds = D.THRESHOLDS
    node_kinds = D.NODE_KINDS
    failure_tags = D.FAILURE_TAGS
    whatif_nodes = D.WHATIF_NODES

    # ---------------------------------------------------------------- decoding
    def _explore(self, ctx: RunContext, max_tokens: int, salt: str) -> GenParams:
        """Decomposition and extraction: the paper's exploration temperature, seeded."""
        cfg: CogConfig = ctx.config
        temp = 0.0 if cfg.deterministic else cfg.temperature_explore
        seed = (int(ctx.seed) * 1_000_003 + sum(map(ord, salt))) & 0x7FFFFFFF
        return GenParams(max_tokens=max_tokens, temperature=temp, seed=seed)

    def _greedy(self, ctx: RunContext, max_tokens: int, **kw: Any) -> GenParams:
        """Reasoning, verification and re-think: temperature 0 in the paper."""
        cfg: CogConfig = ctx.config
        temp = 0.0 if cfg.deterministic else cfg.temperature_reason
        return GenParams(max_tokens=max_tokens, temperature=temp, seed=ctx.seed, **kw)

    def _embedder(self, ctx: RunContext) -> TripleEmbedder:
        emb = ctx.embedder
        if emb is None:
            emb = ctx.extra.get("_coggrag_embedder", False)
            if emb is False:
                try:
                    from ...knowledge.dense import get_embedder
                    emb = get_embedder()
                except Exception:       # no weights: the spec's TF-IDF fallback (lower ε)
                    emb = None
                ctx.extra["_coggrag_embedder"] = emb
        return TripleEmbedder(emb)

    def _same(self, emb: TripleEmbedder, a: str, b: str, cos: float) -> bool:
        if norm_q(a) == norm_q(b):
            return True
        if emb.emb is None:
            return False
        try:
            v = emb.encode([a, b])
        except Exception:
            return False
        return float(v[0] @ v[1]) >= cos

    # ---------------------------------------------------------------- run
    def run(self, ctx: RunContext, question: str) -> Iterator[T.Event]:
        cfg: CogConfig = ctx.config
        kg, caveats = require_kg(ctx, "CogGRAG", "0")
        emb = self._embedder(ctx)
        pv = self.prompt_version
        nodes: dict[str, MMNode] = {}
        root = MMNode("0", question, 0, "continue", None, 0)
        nodes["0"] = root

        # ============ stage 1: top-down decomposition ============
        yield ctx.set_phase("decompose")
        yield T.node_added("0", "question", question, layer=0, state="proposed", level=0,
                           mm_state="continue", sibling_index=0, forced_end=False)
        yield from caveats
        if cfg.decomposition:
            yield from grow(ctx, nodes, root,
                            lambda nid: self._explore(ctx, cfg.max_tokens_decompose, nid),
                            lambda a, b: self._same(emb, a, b, cfg.degenerate_cos), pv)
        else:
            yield from force_end(root, "no decomposition (-nd ablation)")
        depth = max(n.level for n in nodes.values())
        yield T.custom("decomposition_finished", "0", num_nodes=len(nodes), depth=depth,
                       over_decomposed=len(nodes) > 8)

        # ============ stage 2: retrieval ============
        yield ctx.set_phase("extract")
        order = bfs_order(nodes)
        owners = [(order, "0", "BATCH")] if cfg.local_extraction == "batched" else \
            [([i], i, i) for i in order] if cfg.local_extraction == "per_node" else []
        extract = [self._local_keys(ctx, [nodes[i].question for i in qs], nid, owner)
                   for qs, nid, owner in owners] or [self._map_keys(ctx, nodes, order)]
        if cfg.global_keys:
            extract.append(ctx.generate_json(
                "keys_global", P.global_messages([nodes[i].question for i in order]),
                P.schema_global(cfg.max_items + 2),
                self._explore(ctx, cfg.max_tokens_extract, "global"), node_id="0",
                prompt_version=pv, validate=validate_global))
        got = yield from together(ctx, extract, max(cfg.batch_size, cfg.extract_batch))
        for i in order[1:] if cfg.local_extraction == "batched" else ():
            nodes[i].local_keys = {"entities": [], "tuples": [], "triples": [],
                                   "owner": "BATCH"}
        for (_, nid, _), keys in zip(owners, got):
            nodes[nid].local_keys = keys
        for nid, keys in (got[0].items() if not owners else ()):
            nodes[nid].local_keys = keys
        subgraph: list[list[str]] = (got[-1] or []) if cfg.global_keys else []
        yield T.custom("keys_global", "0", subgraph=subgraph, enabled=cfg.global_keys)

        yield ctx.set_phase("retrieve")
        scored, links, key_rows = retrieve(kg, cfg, {i: nodes[i].local_keys or {}
                                                     for i in order}, subgraph, emb)
        kept = [c for c in scored if c["kept"]]
        asked = [(i, nodes[i].question) for i in order]
        for nid in ["kg"] + order:      # a what-if drops or adds triples of one node
            kept = ctx.whatif.evidence(
                nid, kept, triple_id, lambda h, o=("GLOBAL" if nid == "kg" else nid):
                added_triple(h, o), None if nid == "kg" else lambda c, o=nid: c["owner"] == o)
        # the events show what the run reasons over (a what-if's drops and additions)
        yield from retrieval_events(ctx, question, asked, as_intervened(scored, kept), links,
                                    key_rows, subgraph, emb.name)
        descs: list[dict[str, Any]] = []
        if cfg.entity_descriptions:
            descs = describe(kg, links, [q for _, q in asked], emb, cfg.description_min_sim)
            yield from description_events(question, descs, cfg.description_min_sim)
        described = [d["text"] for d in descs if d["kept"]]

        # ============ stage 3: bottom-up reasoning ============
        yield ctx.set_phase("reason")
        mhat: list[R.Pair] = []
        # descriptions first: a prompt over budget loses the lowest-scored triples first
        know_all = described + [c["text_prompt"] for c in kept]
        n_rethink = 0
        for t in range(depth, -1, -1):
            level_nodes = [nodes[i] for i in order if nodes[i].level == t]
            if not level_nodes:
                continue
            yield T.custom("level_reasoning_started", level_nodes[0].id, t=t,
                           node_ids=[m.id for m in level_nodes])
            groups: list[list[MMNode]] = []
            for m in level_nodes:
                if cfg.reasoning == "group" and groups and groups[-1][0].parent == m.parent:
                    groups[-1].append(m)
                else:
                    groups.append([m])
            level_pairs: list[R.Pair] = []
            for grp in groups:
                pairs = R.context(nodes, mhat, level_pairs, grp, cfg)
                know = R.knowledge(grp, kept, know_all, cfg, described)
                answers, rec = yield from R.reason(
                    ctx, grp, pairs, know, self._greedy(ctx, cfg.max_tokens_reason), pv)
                # siblings settle independently: their pairs and knowledge are fixed above
                rounds = yield from together(
                    ctx, [self._settle(ctx, m, a, rec, pairs, know, kept, described)
                          for m, a in zip(grp, answers)], cfg.batch_size)
                n_rethink += sum(rounds)
                for m in grp:
                    if not (cfg.exclude_unknown_from_context and m.is_unknown):
                        level_pairs.append((m.id, m.question, m.final or "", m.is_unknown))
            mhat.extend(level_pairs)
            yield T.custom("level_reasoning_finished", level_nodes[0].id, t=t)

        final = root.final or ""
        refused = root.is_unknown or not final.strip()
        # a refusal stays a refusal: only an answer is cut to its short span
        sp = yield from S.extract(ctx, question, final, final, parents=["0"], layer=0,
                                  enabled=cfg.answer_span and not refused, node_id="span")
        ans = sp.text or P.UNKNOWN_TEXT
        yield T.node_added("answer", "answer", ans, parents=sp.parents,
                           layer=0, state="unknown" if refused else "answered",
                           is_unknown=refused, full_answer=final, **sp.fields())
        gold = ctx.gold
        metrics: dict[str, Any] = {}
        if gold is not None and gold.gold_answers:
            metrics = {"contains": hit_at_1(sp.text, gold.gold_answers),
                       "em": any(normalize_answer(sp.text) == normalize_answer(g)
                                 for g in gold.gold_answers),
                       "missing": refused}
        yield T.answer(ans, refused=refused,
                       reason="insufficient information" if refused else "", node_id="answer",
                       n_nodes=len(nodes), depth=depth, n_candidates=len(scored),
                       n_kept=len(kept), rethinks=n_rethink, full_answer=final,
                       unknowns=sum(1 for m in nodes.values() if m.is_unknown), **metrics,
                       **sp.fields())

    # ---------------------------------------------------------------- stage pieces
    def _local_keys(self, ctx: RunContext, questions: list[str], node_id: str, owner: str):
        cfg: CogConfig = ctx.config
        obj = yield from ctx.generate_json(
            "keys_local", P.local_messages(questions), P.schema_local(cfg.max_items),
            self._explore(ctx, cfg.max_tokens_extract, owner), node_id=node_id,
            prompt_version=self.prompt_version, validate=validate_local)
        keys = obj or {"entities": [], "tuples": [], "triples": []}
        keys["parse_failed"] = obj is None
        keys["owner"] = owner
        yield T.custom("keys_local", node_id, owner=owner, **{k: keys[k] for k in
                                                              ("entities", "tuples", "triples")})
        yield T.node_updated(node_id, None, local_keys=keys)
        return keys

    def _map_keys(self, ctx: RunContext, nodes: dict[str, MMNode],
                  order: list[str]) -> Iterator[T.Event]:
        """Eq. 2: one call extracts the local keys of every mind-map question, one key set
        per question, mapped back to its node by position (the schema fixes the count). An
        output that does not parse twice falls back to one call per node, recorded as
        ``keys_fallback``. Returns {node id: keys}."""
        cfg: CogConfig = ctx.config
        qs = [nodes[i].question for i in order]
        n = len(qs)

        def check(obj: Any) -> list[dict[str, Any]]:
            items = obj["questions"]
            if not isinstance(items, list) or len(items) != n:
                raise ValueError(f"{len(items) if isinstance(items, list) else 'no'} key "
                                 f"sets for {n} questions")
            if not all(isinstance(x, dict) for x in items):
                raise TypeError("a key set is not a JSON object")
            return [validate_local(x) for x in items]
        msgs = P.local_map_messages(qs)
        # one budget per question, within what the context has left (six questions at
        # 768 asked 4,096 tokens of a 4,096 context, and the run failed)
        budget = min(cfg.max_tokens_extract * n, 4096)
        room = ctx.room(msgs)
        if room is not None:
            budget = max(16, min(budget, room))
        got = yield from ctx.generate_json(
            "keys_local", msgs, P.schema_local_map(n, cfg.max_items),
            self._explore(ctx, budget, "map"), node_id="0",
            prompt_version=self.prompt_version, validate=check)
        out: dict[str, dict[str, Any]] = {}
        if got is None:
            why = (f"the one-call extraction for {n} questions did not parse twice; "
                   f"falling back to one call per node ({n} calls)")
            yield T.custom("keys_fallback", "0", reason=why, n_questions=n)
            yield T.node_updated("0", None, local_extraction_fallback=why)
            for i in order:
                out[i] = yield from self._local_keys(ctx, [nodes[i].question], i, i)
            return out
        for i, keys in zip(order, got):
            keys.update(parse_failed=False, owner=i, one_call=True)
            yield T.custom("keys_local", i, owner=i, one_call=True,
                           **{k: keys[k] for k in ("entities", "tuples", "triples")})
            yield T.node_updated(i, None, local_keys=keys)
            out[i] = keys
        return out

    def _settle(self, ctx: RunContext, m: MMNode, a: str, rec: dict[str, Any] | None,
                pairs: list[R.Pair], know: list[str], kept: list[dict[str, Any]],
                described: list[str]) -> Iterator[T.Event]:
        """Draft, verify, maybe re-think, finalise one node; returns its re-think count."""
        cfg: CogConfig = ctx.config
        pv = self.prompt_version
        m.answer = a
        ppl = R.span_perplexity(rec, a)
        yield T.custom("answer_drafted", m.id, answer=a, ppl=ppl)
        yield T.node_updated(m.id, "answered", answer_initial=a, ppl_initial=ppl,
                             context_qa=[[q, x] for _, q, x, _ in pairs], n_knowledge=len(know))
        final, rethought, verdict, p_right, rounds = a, False, None, None, 0
        # p_right costs two scoring passes per verdict: made only when the gate reads it or
        # the user asked to see it
        score_verdict = cfg.verdict_scores == "always" or cfg.min_p_right > 0
        if cfg.verification:
            while True:
                verdict, p_right, vraw = yield from R.verify(
                    ctx, m, final, pairs, know, self._greedy(ctx, cfg.max_tokens_verify,
                                                             grammar=P.VERDICT_GRAMMAR), pv,
                    score=score_verdict)
                conf = None if ppl is None else 1.0 / ppl
                gated = [g for g, low in (
                    ("p_right", p_right is not None and p_right < cfg.min_p_right),
                    ("confidence", conf is not None and conf < cfg.min_confidence)) if low]
                wrong = verdict == "wrong" or (verdict == "right" and bool(gated))
                wrong = not ctx.whatif.verdict(m.id, "review", not wrong)
                yield T.custom("verified", m.id, verdict=verdict, p_right=p_right,
                               justification=None, raw=vraw, gated_by=gated)
                yield T.node_updated(m.id, "failed_verification" if wrong else "verified",
                                     verdict=verdict, p_right=p_right, gated_by=gated)
                if not wrong or rounds >= cfg.max_rethink:
                    break
                rounds += 1
                new, rrec = yield from R.rethink(ctx, m, pairs, know,
                                                 self._greedy(ctx, cfg.max_tokens_rethink), pv)
                final, rethought = new, True
                ppl = R.span_perplexity(rrec, new)
                unk = R.is_unknown(new)
                yield T.custom("rethought", m.id, new_answer=new, ppl=ppl, is_unknown=unk)
                yield T.node_updated(m.id, "unknown" if unk else "answered",
                                     answer_rethink=new, rethought=True, rethinks=rounds,
                                     ppl_final=ppl)
                if cfg.max_rethink <= 1 or unk:
                    break      # the paper: the re-thought answer is not re-verified
        m.final = final
        m.is_unknown = R.is_unknown(final)
        scores = {}
        if ppl is not None:
            scores.update(perplexity=ppl, confidence=round(1.0 / ppl, 4))
        if p_right is not None:
            scores["p_right"] = p_right
        if scores:
            yield T.node_scored(m.id, scores, {"p_right": cfg.min_p_right,
                                               "confidence": cfg.min_confidence})
        support = R.support(final, kept, described)
        state = "unknown" if m.is_unknown else (
            "verified" if verdict == "right" and not rethought else "answered")
        yield T.custom("node_finalized", m.id, final_answer=final, is_unknown=m.is_unknown)
        yield T.node_updated(m.id, state, answer_final=final, is_unknown=m.is_unknown,
                             rethought=rethought, support=support,
                             likely_hallucination=support == 0 and not m.is_unknown)
        return rounds
