"""Streamlit pieces of the failure triage: the class and breaking node of a run (Ask,
Compare, Annotate), the gold evidence a node holds (inspector), the people's label
(Annotate) and the per-method roll-up (Evaluate). Logic lives in :mod:`workbench.triage`.

Node text, queries and titles in the explanations are untrusted: they go through
``md_escape`` or dataframes.
"""
from __future__ import annotations

from typing import Any

import streamlit as st

from ..store import Store
from ..triage import CLASS_HELP, CLASS_LABELS, CLASSES, Triage, triage
from ..triage import store as TS
from ..viz.safe import md_escape, shorten

# The failure-mode taxonomy tag each class suggests for the breaking node (Annotate).
CLASS_TAGS = {"retrieval_miss": "retrieval_error", "partial_retrieval": "retrieval_miss",
              "reasoning_error": "inference_error", "answer_format": "verbose_answer",
              "wrong_refusal": "over_refusal", "hallucination": "answer_not_grounded"}
_ICONS = {"correct": ":green[:material/check_circle:]", "answer_format": ":green[:material/rule:]",
          "reasoning_error": ":violet[:material/psychology_alt:]",
          "wrong_refusal": ":orange[:material/block:]",
          "partial_retrieval": ":orange[:material/join_left:]",
          "retrieval_miss": ":gray[:material/search_off:]",
          "hallucination": ":red[:material/report:]"}
RULES_MD = """
| class | rule (first that applies) |
|---|---|
| correct | the stored verdict is correct |
| answer format | not correct, not refused, but the gold answer is in the output |
| wrong refusal | refused although every gold hop was retrieved |
| reasoning error | wrong answer although every gold hop was retrieved |
| partial retrieval | some gold hops retrieved, not all |
| retrieval miss | no gold hop retrieved, and the method refused |
| hallucination | no gold hop retrieved, and a (wrong) answer was given |

A **hop** is one supporting title (HotpotQA, 2Wiki, the demo world), one decomposition step
(MuSiQue), one gold-path triple (KG runs on the demo world, 2Wiki) or "an answer entity
reached" (WebQSP/CWQ). The **breaking node** is, for retrieval classes, the first
retrieving node on the answer's path that found no new gold hop (else the last one, else
the answer node); for reasoning errors and wrong refusals, the first node below gold
evidence that was marked insufficient / failed / pruned (else the answer node).
**Question-level recall** counts retrievals made with the question itself; **node-level**
counts every retrieval of the run. `python -m workbench.triage` prints the full rules.
"""


def for_run(store: Store | None, tr: Any, run_id: str | None,
            correct: bool | None = None) -> Triage | None:
    """The run's triage: the stored one (computed on first use) once the run is over;
    None while it runs."""
    if tr is None or tr.status == "running":
        return None
    t = None
    if store is not None and run_id:
        try:
            t = TS.get(store, run_id, trace=tr)
        except Exception as e:      # noqa: BLE001 - triage must never break a page
            st.caption(f"Triage unavailable: {type(e).__name__}: {e}")
            return None
    return t if t is not None else triage(tr, None, correct)


def banner(t: Triage | None) -> None:
    """One line: the class, what it means, and where the chain broke."""
    if t is None:
        return
    if t.failure_class is None:
        st.caption(":material/troubleshoot: Not triaged: " + md_escape(t.reason))
        return
    cls = t.failure_class
    line = f"{_ICONS[cls]} Failure class **{CLASS_LABELS[cls]}** — {CLASS_HELP[cls]}"
    if t.break_node:
        line += (f"  \n:material/link_off: Chain breaks at **{md_escape(t.break_node)}** "
                 f"({md_escape(t.break_kind or '?')}): {md_escape(t.break_why)}")
    st.markdown(line)
    st.caption(recall_text(t))


def recall_text(t: Triage) -> str:
    if not t.hops:
        return ""
    q = "n/a (no retrieval with the question)" if t.found_q is None else \
        f"{len(t.found_q)}/{len(t.hops)}"
    return (f"Gold evidence ({t.knowledge}): {len(t.found)} of {len(t.hops)} hops retrieved "
            f"anywhere (node level), question level {q}. Hops: "
            + md_escape("; ".join(f"{i + 1}. {shorten(h, 60)}" + (" ★" if i in t.found else "")
                                  for i, h in enumerate(t.hops))))


def node_gold(t: Triage, node_id: str) -> None:
    """In the inspector: the gold evidence this node's retrievals hold, its sub-question."""
    if t.failure_class is None and not t.hops:
        return
    held = t.gold_held(node_id)
    if held:
        st.markdown("**★ Gold evidence held here**  \n" + "  \n".join(
            "- " + md_escape(h) for h in held))
    elif t.hops and node_id in t.path:
        st.caption(f"No gold evidence in this node's retrievals ({len(t.hops)} gold hops).")
    step = t.steps.get(node_id)
    if step:
        st.caption(("Corresponds to" if step["matched"] else "Closest (no match, below 0.5):")
                   + f" gold sub-question {step['step'] + 1}, "
                   + md_escape(repr(shorten(step["question"], 100)))
                   + f" (token F1 {step['score']:.2f})")
    if node_id == t.break_node:
        st.markdown(":red[:material/link_off: **The chain breaks here**]: "
                    + md_escape(t.break_why))


def taxonomy_suggestions(t: Triage | None) -> list[dict[str, Any]]:
    """The class as a failure-mode tag on the breaking node (Annotate's suggestion list)."""
    if t is None or t.failure_class in (None, "correct") or not t.break_node:
        return []
    return [{"target_kind": "node", "target_id": t.break_node,
             "tag": CLASS_TAGS[t.failure_class],
             "why": f"triage: {CLASS_LABELS[t.failure_class]}, {t.break_why}"}]


def label_panel(store: Store, tr: Any, run_id: str, t: Triage | None, *, key: str) -> None:
    """Annotate: the failure class and breaking node, pre-filled with the suggestion; a
    person confirms or changes them (stored apart from the suggestion)."""
    st.markdown("**Failure class** (knowledge-centric triage)")
    if t is None or t.failure_class is None:
        st.caption("Not triaged: " + md_escape(t.reason if t else "the run is not finished"))
        return
    saved = TS.get_label(store, run_id)
    cls0 = saved["failure_class"] if saved else t.failure_class
    node0 = (saved["break_node"] if saved else t.break_node) or ""
    nodes = [""] + list(tr.nodes)

    def fmt_cls(c: str) -> str:
        return CLASS_LABELS[c] + (" (suggested)" if c == t.failure_class else "")

    def fmt_node(n: str) -> str:
        if not n:
            return "(none)"
        nd = tr.nodes[n]
        return f"{n} · {nd.kind} · {shorten(nd.text, 40)}" + \
            (" (suggested)" if n == t.break_node else "")

    c1, c2 = st.columns(2)
    cls = c1.selectbox("Failure class", CLASSES, index=CLASSES.index(cls0), format_func=fmt_cls,
                       key=f"{key}__fc_{run_id}", help=CLASS_HELP[t.failure_class])
    node = c2.selectbox("Breaking node", nodes, index=nodes.index(node0) if node0 in nodes else 0,
                        format_func=fmt_node, key=f"{key}__fn_{run_id}")
    agrees = cls == t.failure_class and (node or None) == t.break_node
    if st.button("Confirm the suggestion" if agrees else "Save my label", key=f"{key}__fsave",
                 type="secondary"):
        TS.set_label(store, run_id, cls, node or None,
                     author=st.session_state.get(f"{key}__author", ""))
        st.toast("Failure class saved.")
        st.rerun()
    if saved:
        st.caption(f"Labelled {CLASS_LABELS[saved['failure_class']]}"
                   + (f" at {md_escape(saved['break_node'])}" if saved["break_node"] else "")
                   + f" by {md_escape(saved['author'] or 'anonymous')}; suggestion: "
                   + f"{CLASS_LABELS[t.failure_class]} at {md_escape(t.break_node or '-')}.")
    else:
        st.caption("Not labelled yet: the suggestion is pre-filled.")


def agreement_caption(store: Any, eval_ids: list[str] | None = None) -> None:
    a = TS.agreement(store, eval_ids)
    if not a["n_labels"]:
        st.caption("No failure-class labels yet (confirm or change suggestions on Annotate).")
        return
    ca, na = a["class_agreement"], a["node_agreement"]
    st.caption(f"People's failure-class labels: {a['n_labels']}. Agreement with the suggestion: "
               f"class {'n/a' if ca is None else f'{ca:.0%}'} of {a['n_compared']}, breaking "
               f"node {'n/a' if na is None else f'{na:.0%}'} of {a['n_nodes']}.")


def _answer_trail(store: Store, eval_id: str) -> None:
    from ..triage import answer_trail
    rows = answer_trail.funnel(store, eval_id)
    if not rows:
        return
    st.markdown("**Answer trail** (wrong runs: the stages whose output still held a gold "
                "answer, in the order the method uses them; where the count drops, the "
                "method had the answer and lost it)")
    st.dataframe([{"method": r["series"], "step": i + 1, "stage": s["stage"],
                   "runs holding it": s["held"], "of wrong runs": r["n"], "share": s["share"]}
                  for r in rows for i, s in enumerate(r["stages"])],
                 hide_index=True, width="stretch",
                 column_config={"share": st.column_config.NumberColumn(format="percent")})
    skipped = [f"{md_escape(r['series'])}: " + ", ".join(f"{n} {why}" for why, n in
                                                         sorted(r["untraced"].items()))
               for r in rows if r["untraced"]]
    if skipped:
        st.caption("Wrong runs without a trail (the answer string cannot be followed): "
                   + "; ".join(skipped))


def evaluate_section(store: Store, eval_id: str, note: str = "") -> None:
    """Evaluate: failure classes per method (stacked), the commonest breaking node kinds,
    gold-evidence recall at question and node level, and the runs behind a bar. ``note``
    says what "correct" means in this eval (its primary metric and metric profile)."""
    from ..viz import eval_charts as C
    st.subheader("Failure triage: where in the graph it went wrong")
    try:
        summ = TS.summary(store, eval_id)
    except Exception as e:      # noqa: BLE001
        st.error(f"Triage unavailable: {type(e).__name__}: {e}")
        return
    with st.expander("How runs are classified"):
        st.markdown(RULES_MD)
    for r in summ["untriaged"]:
        st.caption(f"Not triaged: {md_escape(r['method'])}: {r['n']} run(s), "
                   f"{md_escape(r['reason'])}")
    if not summ["classes"]:
        # the reasons are the stored ones above; with none, nothing has been stored yet
        st.caption("No triaged runs: " + ("no run of this eval could be triaged (the "
                                          "reasons are listed above)." if summ["untriaged"]
                                          else "no item finished yet."))
        _answer_trail(store, eval_id)
        return
    ev = st.plotly_chart(C.failure_class_bars(summ["classes"], CLASS_LABELS), on_select="rerun",
                         key="ev_triage", width="stretch", config=C.PLOTLY_CONFIG)
    if note:
        st.caption(note)
    c1, c2 = st.columns(2)
    with c1:
        st.markdown("**Most common breaking node kinds** (wrong runs)")
        st.dataframe([{"method": r["series"], "node kind": r["kind"], "runs": r["n"],
                       "share": r["share"], "classes": ", ".join(r["classes"])}
                      for r in summ["break_kinds"]], hide_index=True, width="stretch",
                     column_config={"share": st.column_config.NumberColumn(format="percent")})
    with c2:
        st.markdown("**Gold-evidence recall**")
        st.dataframe([{"method": r["series"], "n": r["n"], "question level": r["recall_q"],
                       "all hops (q)": r["all_q"], "n with a question retrieval": r["n_q"],
                       "node level": r["recall_node"], "all hops (node)": r["all_node"]}
                      for r in summ["recall"]], hide_index=True, width="stretch",
                     column_config={c: st.column_config.NumberColumn(format="%.2f") for c in
                                    ("question level", "all hops (q)", "node level",
                                     "all hops (node)")})
        st.caption("Mean share of gold hops found, and the share of questions with every hop "
                   "found (HotpotQA: both supports). Question level: retrievals made with the "
                   "question itself; node level: every retrieval of the run.")
    agreement_caption(store, [eval_id])
    _answer_trail(store, eval_id)
    picked = C.selected_keys(ev)
    if picked:
        method, variant, cls = picked[-1]
        from ..eval.queries import session
        with session(store) as db:
            rows = TS.runs_of_class(db, eval_id, method=method, variant=variant,
                                    failure_class=cls)
        st.write(f"{len(rows)} run(s): {md_escape(method)}, {CLASS_LABELS.get(cls, cls)}")
        st.dataframe(rows, hide_index=True, width="stretch")
