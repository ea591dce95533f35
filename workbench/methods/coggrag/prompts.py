"""CogGRAG prompts (spec coggrag.md §3.6), paraphrased (the spec forbids copying the
paper's wording): decomposition, local and global key extraction, reasoning,
self-verification and re-think, with the JSON schemas / grammar that constrain them.

The reasoning, verification and re-think prompts all carry the completed reasoning M̂ and
the knowledge T; :func:`reason_messages`, :func:`verify_messages` and
:func:`rethink_messages` build them from (knowledge lines, M̂ pairs) so the caller can fit
them to the context budget. Their ``layout``: ``knowledge_first`` opens all three with one
system line and T, so every such call of a run starts with the same tokens and the prompt
cache evaluates T once (T is the run's whole kept set by default; M̂ grows a level at a
time, so it comes next), and each call's role line moves to the head of its task;
``paper`` gives each its role as the system line and M̂ before T, as the paper's prompts
list them.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

VERSION = "coggrag-2"
UNKNOWN_TEXT = "Insufficient information, I don't know"
VERDICT_GRAMMAR = 'root ::= "[" ("right" | "wrong") "]"'

DECOMPOSE_SYS = (
    "Split the question into the simpler sub-questions its logic needs, in the order they "
    "must be solved. Decide how many are needed. Give each a State: \"End.\" if it can be "
    "answered directly, \"Continue.\" if it must be split further. A later sub-question may "
    "refer to an earlier one as \"sub-question #1\". Reply with a JSON list of objects "
    "{\"Sub-question\": ..., \"State\": ...}.\n\n"
    "Example question: Which river runs through the city where the author of The Quiet "
    "Orchard was born?\n"
    "[{\"Sub-question\": \"Who wrote The Quiet Orchard?\", \"State\": \"End.\"}, "
    "{\"Sub-question\": \"In which city was the author from sub-question #1 born?\", "
    "\"State\": \"End.\"}, {\"Sub-question\": \"Which river runs through the city from "
    "sub-question #2?\", \"State\": \"End.\"}]\n\n"
    "Example question: Are the Blue Pavilion and the Iron Gate in the same district?\n"
    "[{\"Sub-question\": \"In which district is the Blue Pavilion?\", \"State\": \"End.\"}, "
    "{\"Sub-question\": \"In which district is the Iron Gate?\", \"State\": \"End.\"}, "
    "{\"Sub-question\": \"Are the districts from sub-questions #1 and #2 the same?\", "
    "\"State\": \"End.\"}]")

LOCAL_SYS = (
    "Extract the keys that would help answer the question(s): entities (people, places, "
    "organisations, works...), (entity, relation) tuples and (entity, relation, entity) "
    "triples. Write an unknown value as a short placeholder such as \"unknown\" or "
    "\"birth year\". Reply with JSON {\"entities\": [...], \"tuples\": [[e, r], ...], "
    "\"triples\": [[e, r, e], ...]}.")

LOCAL_MAP_SYS = (
    "Extract the keys that would help answer each numbered question: entities (people, "
    "places, organisations, works...), (entity, relation) tuples and (entity, relation, "
    "entity) triples. Write an unknown value as a short placeholder such as \"unknown\" or "
    "\"birth year\". Reply with JSON {\"questions\": [{\"entities\": [...], \"tuples\": "
    "[[e, r], ...], \"triples\": [[e, r, e], ...]}, ...]}: one object per question, in "
    "their order.")

GLOBAL_SYS = (
    "Organise the information in these questions into a small subgraph: (subject, relation, "
    "object) triples that share entities and show how the questions connect. Write unknown "
    "values as short placeholder noun phrases. Reply with JSON {\"subgraph\": [[s, r, o], "
    "...]}.")

REASON_SYS = ("You answer questions using the completed reasoning and the knowledge "
              "triples you are given.")
VERIFY_SYS = "You are a logical verification assistant."
RETHINK_SYS = "You are a reasoning and knowledge-integration assistant."
# the knowledge_first layout's one system line; each call's role line opens its task
SHARED_SYS = "You work from the knowledge triples and the completed reasoning you are given."
LAYOUTS = ("knowledge_first", "paper")


def schema_decompose(n_max: int) -> dict[str, Any]:
    return {"type": "array", "minItems": 1, "maxItems": n_max, "items": {
        "type": "object", "properties": {
            "Sub-question": {"type": "string", "minLength": 3, "maxLength": 200},
            "State": {"enum": ["End.", "Continue."]}},
        "required": ["Sub-question", "State"]}}


def schema_local(n: int) -> dict[str, Any]:
    s = {"type": "string", "minLength": 1, "maxLength": 60}
    return {"type": "object", "properties": {
        "entities": {"type": "array", "items": s, "maxItems": n},
        "tuples": {"type": "array", "maxItems": n,
                   "items": {"type": "array", "items": s, "minItems": 2, "maxItems": 2}},
        "triples": {"type": "array", "maxItems": n,
                    "items": {"type": "array", "items": s, "minItems": 3, "maxItems": 3}}},
        "required": ["entities", "tuples", "triples"]}


def schema_global(n: int) -> dict[str, Any]:
    s = {"type": "string", "minLength": 1, "maxLength": 60}
    return {"type": "object", "properties": {
        "subgraph": {"type": "array", "minItems": 1, "maxItems": n,
                     "items": {"type": "array", "items": s, "minItems": 3, "maxItems": 3}}},
        "required": ["subgraph"]}


def schema_answers(n: int, echo: bool = True) -> dict[str, Any]:
    """The reasoning call's answers: {Question, Answer} objects as the paper's (``echo``),
    or the answers alone, one string per question in their order."""
    if not echo:
        return {"type": "object", "properties": {"answers": {
            "type": "array", "minItems": n, "maxItems": n,
            "items": {"type": "string", "minLength": 1, "maxLength": 200}}},
            "required": ["answers"]}
    return {"type": "object", "properties": {"answers": {
        "type": "array", "minItems": n, "maxItems": n, "items": {
            "type": "object", "properties": {
                "Question": {"type": "string", "maxLength": 300},
                "Answer": {"type": "string", "minLength": 1, "maxLength": 200}},
            "required": ["Question", "Answer"]}}}, "required": ["answers"]}


SCHEMA_ONE = {"type": "object", "properties": {
    "answer": {"type": "string", "minLength": 1, "maxLength": 200}}, "required": ["answer"]}


def qa_json(pairs: Sequence[Sequence[Any]]) -> str:
    """M̂ as the prompts show it: (node id, question, answer, unknown) -> Question/Answer."""
    return json.dumps([{"Question": p[1], "Answer": p[2]} for p in pairs], ensure_ascii=False)


def knowledge_lines(k: Sequence[str]) -> str:
    return "\n".join(k) if k else "(none)"


def _msgs(system: str, body: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": body}]


def decompose_messages(question: str) -> list[dict[str, str]]:
    return _msgs(DECOMPOSE_SYS, f"Question: {question}")


def local_messages(questions: Sequence[str]) -> list[dict[str, str]]:
    body = "\n".join(f"- {q}" for q in questions)
    return _msgs(LOCAL_SYS, f"Question(s):\n{body}")


def local_map_messages(questions: Sequence[str]) -> list[dict[str, str]]:
    """Eq. 2's one extraction call over the whole mind map; keys come back per question."""
    body = "\n".join(f"{i}. {q}" for i, q in enumerate(questions, 1))
    return _msgs(LOCAL_MAP_SYS, f"Questions:\n{body}")


def schema_local_map(n_questions: int, n: int) -> dict[str, Any]:
    return {"type": "object", "properties": {"questions": {
        "type": "array", "minItems": n_questions, "maxItems": n_questions,
        "items": schema_local(n)}}, "required": ["questions"]}


def global_messages(questions: Sequence[str]) -> list[dict[str, str]]:
    body = "\n".join(f"- {q}" for q in questions)
    return _msgs(GLOBAL_SYS, f"Questions:\n{body}")


def _grounded(layout: str, role: str, know: Sequence[str], pairs: Sequence[Any],
              task: str) -> list[dict[str, str]]:
    """A reasoning, verification or re-think prompt: T, M̂ and the call's own task."""
    mhat = f"Completed reasoning: {qa_json(pairs)}"
    kn = f"Knowledge:\n{knowledge_lines(know)}"
    if layout == "paper":
        return _msgs(role, f"{mhat}\n\n{kn}\n\n{task}")
    if layout != "knowledge_first":
        raise ValueError(f"prompt layout {layout!r} is not one of {', '.join(LAYOUTS)}")
    return _msgs(SHARED_SYS, f"{kn}\n\n{mhat}\n\n{role}\n{task}")


def reason_messages(questions: Sequence[str], know: Sequence[str], pairs: Sequence[Any],
                    abstain: bool, layout: str = "knowledge_first",
                    echo: bool = True) -> list[dict[str, str]]:
    ab = (f" If the completed reasoning and the knowledge are not enough, answer "
          f"\"{UNKNOWN_TEXT}\".") if abstain else ""
    reply = ("{\"answers\": [{\"Question\": ..., \"Answer\": ...}]}" if echo else
             "{\"answers\": [...]}, one answer per question, in their order")
    task = (f"Questions: {json.dumps(list(questions), ensure_ascii=False)}\n\nAnswer each "
            f"question using the completed reasoning and the knowledge.{ab} Reply with JSON "
            f"{reply}.")
    return _grounded(layout, REASON_SYS, know, pairs, task)


def verify_messages(question: str, answer: str, know: Sequence[str], pairs: Sequence[Any],
                    layout: str = "knowledge_first") -> list[dict[str, str]]:
    cand = json.dumps({"Question": question, "Answer": answer}, ensure_ascii=False)
    task = (f"Candidate: {cand}\n\nIs the answer logically consistent with the completed "
            f"reasoning and the knowledge? Reply [right] or [wrong].")
    return _grounded(layout, VERIFY_SYS, know, pairs, task)


def rethink_messages(question: str, know: Sequence[str], pairs: Sequence[Any],
                     layout: str = "knowledge_first") -> list[dict[str, str]]:
    task = (f"Question: {question}\n\nAn earlier answer to this question was judged wrong. "
            f"Think again and give a new answer from the completed reasoning and the knowledge. "
            f"If they are not enough, answer \"{UNKNOWN_TEXT}\". Reply with JSON "
            f"{{\"answer\": ...}}.")
    return _grounded(layout, RETHINK_SYS, know, pairs, task)
