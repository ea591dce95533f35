"""CRP-RAG's answer generation after the sufficiency verdicts (spec crp-rag.md §3.4-3.5): enumerate the
root-to-sink paths, prune those through an insufficient node (refusing when none is left),
reason along the best ``max_answer_paths`` step by step (paths together, the steps of one
path in turn), integrate two or more path answers, and read the short answer span."""
from __future__ import annotations

from typing import Any, Iterator

from ... import trace as T
from .. import answer_span as S
from ..answers import REFUSAL_TEXT, extract_answer
from ..generation import greedy, score_dict
from ..graph import tap
from ..base import RunContext
from ..batched import InOrder, together
from .config import CrpRagConfig
from . import prompts as P


def _record_result(results: dict[str, dict[str, str]], x: str, p: str,
                   a_c: str) -> Iterator[T.Event]:
    results.setdefault(x, {})[p] = a_c
    yield T.node_updated(x, None, results=dict(results[x]))


def _valid_abstract(obj: Any) -> tuple[str, str]:
    if not isinstance(obj, dict) or not isinstance(obj.get("final_answer"), str):
        raise KeyError("final_answer")
    return obj["final_answer"].strip(), str(obj.get("details", "")).strip()


def path_answer(ctx: RunContext, q: str, nodes: dict[str, Any], root_id: str, p: str,
                c: list[str], results: dict[str, dict[str, str]]) -> Iterator[Any]:
    """Reason along one path (its steps in turn; paths run together); returns a_c and the
    last completion and its call id. A node's results on every path are recorded in trace
    order."""
    cfg: CrpRagConfig = ctx.config
    calls: list[T.Event] = []
    steps = [x for x in c if x != root_id] or [root_id]
    if cfg.no_iterative_reasoning:
        comp = yield from tap(ctx.generate(
            "path_answer", P.path_oneshot(q, [(nodes[x].content, nodes[x].knowledge)
                                             for x in steps]),
            greedy(cfg.step_max_tokens), node_id=steps[-1], prompt_version=P.VERSION), calls)
        a_c = " ".join(comp.text.split())
        yield T.custom("step_reasoned", steps[-1], path_id=p, condition=q,
                       step="(all steps at once)", knowledge_used=None, result=a_c)
        yield InOrder(_record_result(results, steps[-1], p, a_c))
    else:
        done: list[tuple[str, str]] = []
        a_c = ""
        for i, x in enumerate(steps):
            cond = P.condition_text(q, done)
            comp = yield from tap(ctx.generate(
                "reason", P.step(cond, nodes[x].content, nodes[x].knowledge or "(none)",
                                 last=i == len(steps) - 1),
                greedy(cfg.step_max_tokens), node_id=x, prompt_version=P.VERSION), calls)
            a_c = " ".join(comp.text.split()) or "(no result)"
            done.append((nodes[x].content, a_c))
            yield T.custom("step_reasoned", x, path_id=p, condition=cond,
                           step=nodes[x].content, knowledge_used=nodes[x].knowledge,
                           result=a_c)
            yield InOrder(_record_result(results, x, p, a_c))
    yield T.custom("path_answered", None, path_id=p, answer=a_c)
    return a_c, comp, (calls[-1].llm_call_id if calls else None)

def paths_and_answer(ctx: RunContext, q: str, nodes: dict[str, Any],
                     root_id: str) -> Iterator[T.Event]:
    cfg: CrpRagConfig = ctx.config
    paths, truncated = enumerate_paths(nodes, root_id, cfg.max_paths_enumerated)
    pids = [f"p{i}" for i in range(1, len(paths) + 1)]
    yield T.custom("paths_enumerated", None, paths={p: c for p, c in zip(pids, paths)},
                   n=len(paths), truncated=truncated)

    def stats(c: list[str]) -> dict[str, Any]:
        ppls = [nodes[x].ppl for x in c if nodes[x].ppl is not None]
        return {"max_ppl": round(max(ppls), 4) if ppls else None,
                "mean_ppl": round(sum(ppls) / len(ppls), 4) if ppls else None,
                "length": len(c),
                "truncated": any(nodes[x].forced_final for x in c)}

    valid: list[tuple[str, list[str]]] = []
    if cfg.no_evaluation:
        by_len = sorted(zip(pids, paths), key=lambda t: (len(t[1]), t[0]))
        chosen = [by_len[0]] + ([by_len[-1]] if len(by_len) > 1 else [])
        chosen_ids = {p for p, _ in chosen}
        selected = chosen
        unused = [(p, c) for p, c in zip(pids, paths) if p not in chosen_ids]
    else:
        for p, c in zip(pids, paths):
            blocking = [x for x in c if nodes[x].sufficient is False]
            if blocking:
                info = stats(c)
                yield T.custom("path_pruned", None, path_id=p, nodes=c, blocking=blocking,
                               first_blocking=blocking[0], **info)
                yield T.path_event(p, c, "pruned", blocking=blocking, **info)
            else:
                valid.append((p, c))
        valid.sort(key=lambda t: (stats(t[1])["max_ppl"] or 0.0, len(t[1]), t[0]))
        selected = valid[: cfg.max_answer_paths]
        unused = valid[cfg.max_answer_paths:]
    for p, c in selected:
        info = stats(c)
        yield T.custom("path_selected", None, path_id=p, nodes=c, **info)
        yield T.path_event(p, c, "selected", **info)
    for p, c in unused:
        info = stats(c)
        yield T.custom("path_unused", None, path_id=p, nodes=c, **info)
        yield T.path_event(p, c, "unused", **info)

    if not selected:
        scored = [(stats(c)["max_ppl"], p, c) for p, c in zip(pids, paths)]
        scored = [s for s in scored if s[0] is not None]
        closest = min(scored)[1:] if scored else None
        reason = ("no root-to-sink path has only knowledge-sufficient nodes "
                  f"(tau_ppl={cfg.tau_ppl:g}, {len(paths)} paths enumerated)")
        yield T.custom("refused", None, reason=reason,
                       closest_path=closest[1] if closest else None,
                       closest_path_id=closest[0] if closest else None)
        rid = ctx.node_id("r")
        yield T.node_added(rid, "refusal", REFUSAL_TEXT, parents=[root_id],
                           layer=max(v.iteration for v in nodes.values()) + 1,
                           state="refused", reason=reason,
                           closest_path=closest[1] if closest else None)
        yield T.answer(REFUSAL_TEXT, refused=True, reason=reason, node_id=rid)
        return

    results: dict[str, dict[str, str]] = {}
    reasoned = yield from together(
        ctx, [path_answer(ctx, q, nodes, root_id, p, c, results) for p, c in selected],
        cfg.batch_size)
    answers = [(p, a_c, c) for (p, c), (a_c, _, _) in zip(selected, reasoned)]
    last_comp, last_call = reasoned[-1][1], reasoned[-1][2]

    details = ""
    integ_call = None
    if len(answers) == 1:
        final = answers[0][1]
    else:
        calls: list[T.Event] = []
        parsed = yield from tap(ctx.generate_json(
            "integrate", P.abstract(q, [a for _, a, _ in answers]), P.ABSTRACT_SCHEMA,
            greedy(cfg.answer_max_tokens), node_id=root_id, prompt_version=P.VERSION,
            validate=_valid_abstract), calls)
        if calls:
            integ_call = calls[-1]
        if parsed is None or not parsed[0]:
            final, details = answers[0][1], "integration output unparsable: best path used"
        else:
            final, details = parsed
        yield T.custom("answers_integrated", None, answers=[a for _, a, _ in answers],
                       final_answer=final, details=details,
                       call_id=integ_call.llm_call_id if integ_call else None)
    conf = None
    fin_ppl = None
    score_call = integ_call.llm_call_id if integ_call is not None else last_call
    if integ_call is not None:
        s = integ_call.data.get("scores") or {}
        fin_ppl, conf = s.get("perplexity"), s.get("confidence")
    elif last_comp is not None:
        s = score_dict(last_comp)
        fin_ppl, conf = s.get("perplexity"), s.get("confidence")
    sinks = list(dict.fromkeys(c[-1] for _, _, c in answers))
    layer = max(v.iteration for v in nodes.values()) + 1
    sp = yield from S.extract(ctx, q, final, extract_answer(final) or final,
                              parents=sinks, layer=layer, enabled=cfg.answer_span,
                              if_stated=cfg.span_if_stated)
    aid = ctx.node_id("a")
    yield T.node_added(aid, "answer", sp.text, parents=sp.parents,
                       layer=layer + sp.layer_offset,
                       state="answered", full_answer=final, details=details,
                       path_answers={p: a for p, a, _ in answers},
                       call_ids=[integ_call.llm_call_id] if integ_call else [], **sp.fields())
    if fin_ppl is not None:
        # from the integration call, or (one path) the last step call of another node
        yield T.node_scored(aid, {"perplexity": fin_ppl, "confidence": conf},
                            call_id=score_call)
    yield T.answer(sp.text, node_id=aid, confidence=conf, full_answer=final,
                   paths=[p for p, _, _ in answers], final_perplexity=fin_ppl, **sp.fields())


def enumerate_paths(nodes: dict[str, Any], root_id: str, cap: int
                    ) -> tuple[list[list[str]], bool]:
    """Every root-to-sink path, depth first in child order, at most ``cap`` of them."""
    out: list[list[str]] = []
    truncated = False

    def dfs(path: list[str]) -> None:
        nonlocal truncated
        if len(out) >= cap:
            truncated = True
            return
        v = nodes[path[-1]]
        if not v.children:
            out.append(list(path))
            return
        for ch in v.children:
            dfs(path + [ch])

    dfs([root_id])
    return out, truncated
