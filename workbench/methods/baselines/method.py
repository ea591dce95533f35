"""Baselines that draw as graphs too: ``vanilla`` (the LLM alone), ``standard-rag`` (top-k
retrieval on the question, one answer call) and ``ircot`` (interleaved retrieval and
chain-of-thought: retrieve with each new reasoning sentence until an answer or a step limit).

Their answers are already short spans, so none makes the answer-span extraction call
(``answer_span``): vanilla and standard RAG are asked for a name, a place, a year or a number,
and IRCoT's answer is the text after "So the answer is:", in a reasoning sentence or in the
reader call's one line.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from ... import trace as T
from ...config import knob
from ...knowledge.types import Hit
from ..answers import extract_answer, first_sentence, is_unknown
from ..generation import greedy, score_dict
from ..graph import question_node, tap
from ..passages import context_event, format_passages, hit_brief, retriever_name
from .. import context_select as CS
from ..base import Method, RunContext
from . import declarations as D
from . import prompts as P


def _answer_events(ctx: RunContext, aid: str, raw: str, parents: list[str], layer: int,
                   comp: Any, call_ids: list[str], score_call: str | None = None
                   ) -> Iterator[T.Event]:
    """``score_call``: the call ``comp`` was recorded as, when it is not the node's own
    (IRCoT's answer is read from the last thought's call)."""
    short = extract_answer(raw) or raw.strip()
    sc = score_dict(comp) if comp is not None else {}
    idk = is_unknown(short)
    yield T.node_added(aid, "answer", short or "(empty)", parents=parents, layer=layer,
                       state="answered", full_answer=raw.strip(), call_ids=call_ids, idk=idk)
    if sc:
        yield T.node_scored(aid, {k: sc[k] for k in ("perplexity", "confidence")},
                            call_id=score_call or (call_ids[-1] if call_ids else None))
    yield T.answer(short, node_id=aid, confidence=sc.get("confidence"), full_answer=raw.strip(),
                   final_perplexity=sc.get("perplexity"))


def _answer_call(ctx: RunContext, messages: list[dict], max_tokens: int, parents: list[str],
                 layer: int) -> Iterator[T.Event]:
    """One greedy answer call served to a fresh answer node."""
    aid = ctx.node_id("a")
    calls: list[T.Event] = []
    comp = yield from tap(ctx.generate("answer", messages, greedy(max_tokens), node_id=aid,
                                         prompt_version=P.VERSION), calls)
    yield from _answer_events(ctx, aid, comp.text, parents, layer, comp,
                              [c.llm_call_id for c in calls])


def _retrieval_node(ctx: RunContext, query: str, k: int, retriever: str, parent: str,
                    layer: int, **attrs: Any) -> Iterator[T.Event]:
    """A retrieval node for one query; returns (node id, hits)."""
    rid = ctx.node_id("r")
    query = ctx.whatif.step(rid, query)
    yield T.node_added(rid, "retrieval", query, parents=[parent], layer=layer, state="created",
                       retriever=retriever, query=query, **attrs)
    hits = yield from ctx.retrieve(rid, query, k, retriever)
    yield T.node_updated(rid, "retrieved", docs=[hit_brief(h) for h in hits])
    return rid, hits


def _retriever_knob() -> Any:
    return knob("default", "Retriever (default = the Settings choice).",
                choices=["default", "bm25", "dense", "hybrid"])


# ----------------------------------------------------------------------------- vanilla

@dataclass
class VanillaConfig:
    DOCS = "docs/methods/baselines.md"        # the method page: knob table and evidence
    answer_max_tokens: int = knob(32, "Token budget of the answer.", min=4, max=512)


class Vanilla(Method):
    name = "vanilla"
    node_kinds = D.NODE_KINDS_VANILLA
    failure_tags = D.FAILURE_TAGS_VANILLA
    whatif_nodes = D.WHATIF_NODES_VANILLA
    preferred = True
    eval_default = True
    title = "Vanilla LLM (no retrieval)"
    kind = "none"
    view = "graph"
    Config = VanillaConfig
    prompt_version = P.VERSION
    description = "The LLM alone answers from its parameters: one call, no retrieval."

    def run(self, ctx: RunContext, question: str) -> Iterator[T.Event]:
        cfg: VanillaConfig = ctx.config
        yield ctx.set_phase("answer")
        qid, ev = question_node(ctx, question)
        yield ev
        yield from _answer_call(ctx, P.vanilla(question), cfg.answer_max_tokens, [qid], 1)


# ----------------------------------------------------------------------------- standard RAG

@dataclass
class StandardRagConfig:
    DOCS = "docs/methods/baselines.md"        # the method page: knob table and evidence
    retriever: str = _retriever_knob()
    top_k: int = knob(5, "Passages retrieved for the question.", min=1, max=20)
    context: str = CS.context_knob()
    passage_chars: int = knob(320, "Character budget per passage body in the prompt (the "
                              "title is always kept).", min=50, max=4000)
    answer_max_tokens: int = knob(32, "Token budget of the answer.", min=4, max=512)


class StandardRag(Method):
    name = "standard-rag"
    node_kinds = D.NODE_KINDS_STANDARD_RAG
    failure_tags = D.FAILURE_TAGS_STANDARD_RAG
    whatif_nodes = D.WHATIF_NODES_STANDARD_RAG
    preferred = True
    eval_default = True
    reference = True
    title = "Standard RAG"
    kind = "text"
    view = "graph"
    Config = StandardRagConfig
    prompt_version = P.VERSION
    description = "Top-k retrieval with the question, then one answer call over the passages."

    def run(self, ctx: RunContext, question: str) -> Iterator[T.Event]:
        cfg: StandardRagConfig = ctx.config
        yield ctx.set_phase("retrieve")
        qid, ev = question_node(ctx, question)
        yield ev
        rid, hits = yield from _retrieval_node(
            ctx, question, cfg.top_k, retriever_name(ctx, cfg.retriever), qid, 1)
        yield ctx.set_phase("answer")
        cuts = CS.select_many([h.text for h in hits], question, cfg.passage_chars, cfg.context,
                              [h.title for h in hits])
        yield context_event(rid, hits, cuts)
        passages = format_passages(hits, cfg.passage_chars, numbered=False, cuts=cuts)
        yield from _answer_call(ctx, P.rag(passages, question), cfg.answer_max_tokens, [rid], 2)


# ----------------------------------------------------------------------------- IRCoT

@dataclass
class IrcotConfig:
    DOCS = "docs/methods/baselines.md"        # the method page: knob table and evidence
    retriever: str = _retriever_knob()
    k_per_step: int = knob(3, "Passages retrieved per query (question, then each sentence).",
                           min=1, max=20)
    max_docs: int = knob(9, "Cap on the passages kept in the prompt (first retrieved kept).",
                         min=1, max=50)
    max_steps: int = knob(4, "Reasoning sentences before the loop stops.", min=1, max=12)
    context: str = CS.context_knob()
    passage_chars: int = knob(260, "Character budget per passage body in the prompt (the "
                              "title is always kept).", min=50, max=4000)
    cot_max_tokens: int = knob(40, "Token budget of one reasoning sentence.", min=8, max=256)
    answer_max_tokens: int = knob(32, "Token budget of the final reader call.", min=4, max=256)


class Ircot(Method):
    name = "ircot"
    node_kinds = D.NODE_KINDS_IRCOT
    failure_tags = D.FAILURE_TAGS_IRCOT
    whatif_nodes = D.WHATIF_NODES_IRCOT
    title = "IRCoT (interleaved retrieval + CoT)"
    kind = "text"
    view = "graph"
    Config = IrcotConfig
    prompt_version = P.VERSION
    description = ("Retrieves with the question, then alternates: write the next reasoning "
                   "sentence, retrieve with it; stops when a sentence gives the answer or at "
                   "the step limit (then one reader call answers).")

    def run(self, ctx: RunContext, question: str) -> Iterator[T.Event]:
        cfg: IrcotConfig = ctx.config
        name = retriever_name(ctx, cfg.retriever)
        yield ctx.set_phase("retrieve")
        qid, ev = question_node(ctx, question)
        yield ev
        docs: list[Hit] = []
        cuts: dict[str, CS.Cut] = {}

        def add(rid: str, hits: list[Hit], query: str) -> Iterator[T.Event]:
            # each passage is cut once, for the question and the query that found it, so
            # its text stays the same in every later prompt (a stable prompt prefix)
            new = [h for h in dict((h.id, h) for h in hits).values()
                   if h.id not in cuts][:max(cfg.max_docs - len(docs), 0)]
            got = CS.select_many([h.text for h in new], f"{question} {query}".strip(),
                                 cfg.passage_chars, cfg.context, [h.title for h in new])
            for h, c in zip(new, got):
                cuts[h.id] = c
                docs.append(h)
            yield T.node_updated(rid, "retrieved", new_docs=[h.id for h in new])
            if new:
                yield context_event(rid, new, got)

        rid, hits = yield from _retrieval_node(ctx, question, cfg.k_per_step, name, qid, 1,
                                               step=0)
        yield from add(rid, hits, "")
        parent, layer = rid, 1
        thoughts: list[str] = []
        answer_raw = None
        for step in range(1, cfg.max_steps + 1):
            yield ctx.set_phase("reason")
            tid = ctx.node_id("t")
            passages = format_passages(docs, cfg.passage_chars, numbered=False,
                                         cuts=[cuts[h.id] for h in docs])
            calls: list[T.Event] = []
            comp = yield from tap(ctx.generate(
                "cot", P.ircot_step(passages, question, thoughts),
                greedy(cfg.cot_max_tokens, stop=["\n"]), node_id=tid,
                prompt_version=P.VERSION), calls)
            text = " ".join(comp.text.split())
            has_answer = P.LEADIN.lower() in text.lower() or "the answer is" in text.lower()
            sentence = text if has_answer else first_sentence(text)
            new = ctx.whatif.step(tid, sentence)
            if new != sentence:
                sentence = new
                has_answer = P.LEADIN.lower() in sentence.lower() or \
                    "the answer is" in sentence.lower()
            layer += 1
            yield T.node_added(tid, "thought", sentence or "(empty)", parents=[parent],
                               layer=layer, state="done", step=step, raw_output=comp.text,
                               has_answer=has_answer,
                               call_ids=[c.llm_call_id for c in calls])
            sc = score_dict(comp)
            if sc:
                yield T.node_scored(tid, {k: sc[k] for k in ("perplexity", "confidence")},
                                    call_id=calls[-1].llm_call_id if calls else None)
            yield T.custom("cot_step", tid, step=step, sentence=sentence, has_answer=has_answer)
            parent = tid
            if not sentence:
                break
            thoughts.append(sentence)
            if has_answer:
                answer_raw = sentence
                break
            if step == cfg.max_steps:
                break
            yield ctx.set_phase("retrieve")
            layer += 1
            rid, hits = yield from _retrieval_node(ctx, sentence, cfg.k_per_step, name, tid,
                                                   layer, step=step)
            yield from add(rid, hits, sentence)
            parent = rid
        yield ctx.set_phase("answer")
        if answer_raw is not None:
            yield T.custom("ircot_stopped", None, reason="answer found", steps=len(thoughts))
            yield from _answer_events(ctx, ctx.node_id("a"), answer_raw, [parent], layer + 1,
                                      comp, [], score_call=calls[-1].llm_call_id if calls else None)
            return
        yield T.custom("ircot_stopped", None, reason="step limit", steps=len(thoughts))
        passages = format_passages(docs, cfg.passage_chars, numbered=False,
                                     cuts=[cuts[h.id] for h in docs])
        yield from _answer_call(ctx, P.ircot_read(passages, question, thoughts),
                                cfg.answer_max_tokens, [parent], layer + 1)
