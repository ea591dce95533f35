"""CogGRAG stage 3: bottom-up reasoning with self-verification (spec coggrag.md §3.4).

The deepest level first: each sibling group (or node) is answered given the knowledge T and
the completed reasoning M̂ (every pair of the deeper levels, §3.4; in per-node mode also the
earlier siblings, V4); each answer is verified ([right]/[wrong]) against T and M̂; a wrong one
gets one re-think that may answer "Insufficient information, I don't know".

Prompts that would overflow the context drop the lowest-scored triples, then the oldest M̂
pairs; every call says what it dropped (``context_overflow``), the verifier's included, so a
verdict that did not see all of T is visible. Node scores (spec §6.3): the perplexity of a
node's answer tokens (and confidence = 1/perplexity) and the verifier's
p_right = p("[right]") / (p("[right]") + p("[wrong]")), each verdict scored whole.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable, Iterator, Sequence

from ... import trace as T
from ...llm.base import ScoreRequest
from ..answers import normalize_answer
from ..graph import tap
from .mindmap import MMNode, descendants
from . import prompts as P

UNKNOWN_RE = re.compile(r"i don'?t know|i do not know|insufficient information", re.I)

Pair = tuple[str, str, str, bool]          # (node id, question, answer, unknown)


def is_unknown(text: str) -> bool:
    return bool(UNKNOWN_RE.search(text or ""))


def span_perplexity(rec: dict[str, Any] | None, span: str) -> float | None:
    """Perplexity of the generated tokens that cover ``span`` inside the output text."""
    if not rec or not span:
        return None
    toks = rec.get("tokens") or []
    text = "".join(t[1] for t in toks)
    i = text.find(span)
    if i < 0:
        lps = [t[2] for t in toks if t[2] is not None]
    else:
        j, pos, lps = i + len(span), 0, []
        for t in toks:
            a, b = pos, pos + len(t[1])
            pos = b
            if b > i and a < j and t[2] is not None:
                lps.append(t[2])
    if not lps:
        return None
    return round(math.exp(-sum(lps) / len(lps)), 4)


def support(answer: str, kept: Sequence[dict[str, Any]], texts: Sequence[str] = ()) -> int:
    """Triples of T whose head or tail (normalised) occurs in the answer, plus knowledge
    sentences (entity descriptions) that contain the answer."""
    a = normalize_answer(answer)
    if not a:
        return 0
    n = 0
    for c in kept:
        names = c["text_prompt"].strip("()").split(", ")
        if any(len(normalize_answer(x)) > 2 and normalize_answer(x) in a
               for x in (names[0], names[-1])):
            n += 1
    return n + sum(1 for x in texts if a in normalize_answer(x))


def context(nodes: dict[str, MMNode], mhat: Sequence[Pair], level_pairs: Sequence[Pair],
            grp: Sequence[MMNode], cfg: Any) -> list[Pair]:
    """M̂ for a group: every deeper-level pair (the paper); in per-node mode also the
    earlier siblings already answered at this level; descendants-only as an option."""
    pairs = list(mhat)
    if cfg.reasoning == "node":
        pairs += [p for p in level_pairs if nodes[p[0]].parent == grp[0].parent]
    if cfg.context_scope == "descendants" and grp[0].parent:
        ids = set(descendants(nodes, grp[0].parent))
        pairs = [p for p in pairs if p[0] in ids and p[0] != grp[0].id]
    return pairs


def knowledge(grp: Sequence[MMNode], kept: Sequence[dict[str, Any]], know_all: list[str],
              cfg: Any, described: Sequence[str] = ()) -> list[str]:
    """All of T (the paper), or the group's attributed triples plus the top global ones
    (after the entity descriptions, which belong to no node)."""
    if cfg.knowledge_scope == "all":
        return list(know_all)
    ids = {m.id for m in grp}
    own = [c["text_prompt"] for c in kept if c["owner"] in ids]
    glob = [c["text_prompt"] for c in kept if c["owner"] in ("GLOBAL", "BATCH")][:10]
    return list(dict.fromkeys(list(described) + own + glob))


def fit(ctx: Any, build: Callable[[list[str], list[Pair]], list[dict[str, str]]],
        know: Sequence[str], pairs: Sequence[Pair]) -> tuple[Any, dict[str, int]]:
    """Drop the lowest-scored triples, then the oldest M̂ pairs, until the prompt fits the
    budget; returns the messages and what was dropped."""
    budget = int(ctx.config.context_budget * (ctx.n_ctx or 4096))
    k, c = list(know), list(pairs)
    dropped = {"triples_dropped": 0, "pairs_dropped": 0}
    msgs = build(k, c)
    while ctx.prompt_tokens(msgs) > budget and (k or c):
        if k:
            k.pop()
            dropped["triples_dropped"] += 1
        else:
            c.pop(0)
            dropped["pairs_dropped"] += 1
        msgs = build(k, c)
    return msgs, dropped


def overflow_events(node_id: str, purpose: str, dropped: dict[str, int],
                    n_know: int) -> Iterator[T.Event]:
    if dropped["triples_dropped"] or dropped["pairs_dropped"]:
        info = {**dropped, "purpose": purpose, "triples_shown": n_know -
                dropped["triples_dropped"], "triples_total": n_know}
        yield T.custom("context_overflow", node_id, **info)
        yield T.node_updated(node_id, None, **{f"{purpose}_overflow": info})


def reason(ctx: Any, grp: Sequence[MMNode], pairs: list[Pair], know: list[str], params: Any,
           pv: str) -> Iterator[T.Event]:
    """One call answering a sibling group; returns (answers, the call's record)."""
    cfg = ctx.config
    msgs, dropped = fit(ctx, lambda k, c: P.reason_messages(
        [m.question for m in grp], k, c, cfg.abstain_in_first_pass, cfg.prompt_layout,
        cfg.answer_echo), know, pairs)
    yield from overflow_events(grp[0].id, "reason", dropped, len(know))
    # the answered pairs the prompt kept (fit drops the oldest first): what the answers of
    # this group are made from, so a correct root answer's path runs through them
    read = [p[0] for p in pairs[dropped["pairs_dropped"]:]]
    calls: list[T.Event] = []
    n = len(grp)
    obj = yield from tap(ctx.generate_json(
        "reason", msgs, P.schema_answers(n, cfg.answer_echo), params, node_id=grp[0].id,
        prompt_version=pv, validate=lambda o: [
            str(x["Answer"] if cfg.answer_echo else x).strip() for x in o["answers"]]), calls)
    answers = [P.UNKNOWN_TEXT] * n if obj is None else \
        [a or P.UNKNOWN_TEXT for a in (obj + [P.UNKNOWN_TEXT] * n)[:n]]
    for i, m in enumerate(grp):  # the batched call serves the whole sibling group
        extra = {"reasoned_with": grp[0].id} if i else {}
        if read:
            extra["reasoned_from"] = read
        if extra:
            yield T.node_updated(m.id, None, **extra)
    return answers, (calls[-1].data if calls else None)


def p_right(ctx: Any, comp: Any, node_id: str | None = None) -> Iterator[T.Event]:
    """p("[right]") / (p("[right]") + p("[wrong]")), each verdict teacher-forced whole after
    the prompt the verifier saw and the text before its bracket (the backend gives no top-k);
    returns (p_right, detail).

    The spec's "first verdict token after [" assumes the tokenizer splits the bracket off.
    Qwen2.5's has "[right" as one token, so scoring "right" after a lone "[" token read the
    model off its own tokenization (p_right 0.01-0.25 on verdicts it wrote as [right]). The
    whole strings' probabilities give the spec's ratio wherever "[" is its own token (its
    probability cancels) and stay right where it is not."""
    i = comp.text.find("[")
    if i < 0:
        return None, {"reason": "no verdict bracket"}
    prefix = comp.prompt + comp.text[:i]
    try:
        got = yield from ctx.score_many([ScoreRequest(prefix, f"[{w}]")
                                         for w in ("right", "wrong")],
                                        purpose="p_right", node_id=node_id)
    except Exception as e:          # a backend without scoring: the score is n/a
        return None, {"reason": f"{type(e).__name__}: {e}"}
    lps = {w: (sum(t.logprob for t in s.tokens) if s.tokens and
               all(t.logprob is not None for t in s.tokens) else None)
           for w, s in zip(("right", "wrong"), got)}
    if lps["right"] is None or lps["wrong"] is None:
        return None, {"reason": "no logprobs"}
    top = max(lps.values())
    pr, pw = math.exp(lps["right"] - top), math.exp(lps["wrong"] - top)
    return round(pr / (pr + pw), 4), {"logprob_right": round(lps["right"], 4),
                                      "logprob_wrong": round(lps["wrong"], 4)}


SKIPPED = ("not scored: nothing reads p_right (min_p_right is 0); set verdict_scores to "
           "'always' to see it")


def verify(ctx: Any, m: MMNode, answer: str, pairs: list[Pair], know: list[str], params: Any,
           pv: str, score: bool = True) -> Iterator[T.Event]:
    """The verifier's verdict on one answer, with p_right when ``score`` (two scoring
    passes); returns (verdict, p_right, raw)."""
    msgs, dropped = fit(ctx, lambda k, c: P.verify_messages(
        m.question, answer, k, c, ctx.config.prompt_layout), know, pairs)
    yield from overflow_events(m.id, "verify", dropped, len(know))
    comp = yield from ctx.generate("verify", msgs, params, node_id=m.id, prompt_version=pv)
    mt = re.search(r"\[\s*(right|wrong)\s*\]", comp.text, re.I)
    verdict = mt.group(1).lower() if mt else "unparsed"
    if not mt:
        pr, detail = None, {"reason": "unparsed verdict"}
    elif not score:
        pr, detail = None, {"skipped": True, "reason": SKIPPED}
    else:
        pr, detail = yield from p_right(ctx, comp, m.id)
    yield T.custom("verdict_scored", m.id, p_right=pr, **detail)
    return verdict, pr, comp.text


def rethink(ctx: Any, m: MMNode, pairs: list[Pair], know: list[str], params: Any,
            pv: str) -> Iterator[T.Event]:
    msgs, dropped = fit(ctx, lambda k, c: P.rethink_messages(
        m.question, k, c, ctx.config.prompt_layout), know, pairs)
    yield from overflow_events(m.id, "rethink", dropped, len(know))
    calls: list[T.Event] = []
    obj = yield from tap(ctx.generate_json(
        "rethink", msgs, P.SCHEMA_ONE, params, node_id=m.id, prompt_version=pv,
        validate=lambda o: str(o["answer"]).strip()), calls)
    return (obj or P.UNKNOWN_TEXT), (calls[-1].data if calls else None)
