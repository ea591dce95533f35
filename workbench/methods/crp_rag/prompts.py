"""CRP-RAG prompts (spec crp-rag.md §3.6): P_gen, P_combine, P_integration, P_evaluation, P_step,
P_abstract, and the one-shot path prompt of the "w/o iterative reasoning" ablation.

Each system message starts with a one-line ``Task:`` header that names the prompt; the
scripted test backend matches on these headers.
"""
from __future__ import annotations

import json

from ..prompts import chat

VERSION = "crp-7"

# -- P_gen (Eq. 4): one next step + is_final, JSON-constrained --------------------------------
GEN_TAG = "Task: next reasoning step."
GEN_SYSTEM = (GEN_TAG + " Break the question into small steps. Given the question and the "
              "steps done so far, write the ONE next step as a short instruction, like "
              "\"Find the director of X.\". Set is_final to true when doing this step gives the "
              "answer to the question. Reply in JSON.")
GEN_SCHEMA = {
    "type": "object",
    "properties": {"step": {"type": "string", "maxLength": 160},
                   "is_final": {"type": "boolean"}},
    "required": ["step", "is_final"],
}


def _steps(known: list[str]) -> str:
    return "\n".join(f"{i}. {s}" for i, s in enumerate(known, 1)) if known else "none"


def gen_user(question: str, known: list[str]) -> str:
    return f"Question: {question}\nSteps done:\n{_steps(known)}\nNext step?"


# Few-shot turns from the demo world (facts of data/demo/passages.jsonl; no demo question
# asks about Psycho, Vertigo or Alfred Hitchcock, so no shot gives a test answer away).
GEN_SHOTS = [
    (gen_user("Where was the director of Psycho (1960) born?", []),
     json.dumps({"step": "Find the director of Psycho (1960).", "is_final": False})),
    (gen_user("Where was the director of Psycho (1960) born?",
              ["Find the director of Psycho (1960)."]),
     json.dumps({"step": "Find where that director was born.", "is_final": True})),
    (gen_user("Which film came out first, Psycho or Vertigo?",
              ["Find the release year of Psycho."]),
     json.dumps({"step": "Find the release year of Vertigo and compare the two years.",
                 "is_final": True})),
]


# Eq. 7 retrieves a node's knowledge with its text alone, so a step that says "that director"
# or "the given criteria" retrieves nothing about its subject: this variant asks for steps that
# name what they are about, and its second shot does so.
GEN_SYSTEM_NAMED = (GEN_SYSTEM + " Write a step that can be read without the question: name "
                    "the people, works, places or events it is about instead of writing 'that "
                    "director', 'the film' or 'the given criteria'.")
GEN_SHOTS_NAMED = [GEN_SHOTS[0],
                   (GEN_SHOTS[1][0],
                    json.dumps({"step": "Find where the director of Psycho (1960) was born.",
                                "is_final": True})),
                   GEN_SHOTS[2]]


def gen(question: str, known: list[str], named: bool = False) -> list[dict]:
    if named:
        return chat(GEN_SYSTEM_NAMED, GEN_SHOTS_NAMED, gen_user(question, known))
    return chat(GEN_SYSTEM, GEN_SHOTS, gen_user(question, known))


# -- P_gen as a list (Eq. 4: one call per sink yields the set of next steps) -----------------
# Fixed instructions and demos first and the sink's question and steps last, so calls of this
# kind share one long prefix a prompt cache can keep.
GEN_LIST_TAG = "Task: next reasoning steps."
GEN_LIST_SYSTEM = (GEN_LIST_TAG + " Break the question into small steps. Given the question "
                   "and the steps done so far, list the next steps: 1 to {n} short "
                   "instructions like \"Find the director of X.\". Give more than one only "
                   "for different facts that can be found independently (one per thing "
                   "compared, or two ways forward); never write the same step twice in other "
                   "words. Set is_final to true on a step when doing it gives the answer to "
                   "the question. Reply with a JSON list.")
def gen_list_user(question: str, known: list[str]) -> str:
    return f"Question: {question}\nSteps done:\n{_steps(known)}\nNext steps?"


GEN_LIST_SHOTS = [
    (gen_list_user("Where was the director of Psycho (1960) born?", []),
     json.dumps([{"step": "Find the director of Psycho (1960).", "is_final": False}])),
    (gen_list_user("Where was the director of Psycho (1960) born?",
                   ["Find the director of Psycho (1960)."]),
     json.dumps([{"step": "Find where that director was born.", "is_final": True}])),
    (gen_list_user("Which film came out first, Psycho or Vertigo?", []),
     json.dumps([{"step": "Find the release year of Psycho.", "is_final": False},
                 {"step": "Find the release year of Vertigo.", "is_final": False}])),
    (gen_list_user("Which film came out first, Psycho or Vertigo?",
              ["Find the release year of Psycho."]),
     json.dumps([{"step": "Find the release year of Vertigo and compare the two years.",
                  "is_final": True}])),
]
GEN_LIST_SHOTS_NAMED = [GEN_LIST_SHOTS[0],
                        (GEN_LIST_SHOTS[1][0],
                         json.dumps([{"step": "Find where the director of Psycho (1960) was "
                                              "born.", "is_final": True}])),
                        *GEN_LIST_SHOTS[2:]]


def gen_list_schema(n: int) -> dict:
    """A JSON list of 1..n steps, each as P_gen's single step."""
    return {"type": "array", "minItems": 1, "maxItems": n, "items": GEN_SCHEMA}


def gen_list(question: str, known: list[str], named: bool = False, n: int = 3) -> list[dict]:
    system = GEN_LIST_SYSTEM.format(n=n)
    if named:
        return chat(system + GEN_SYSTEM_NAMED[len(GEN_SYSTEM):], GEN_LIST_SHOTS_NAMED,
                    gen_list_user(question, known))
    return chat(system, GEN_LIST_SHOTS, gen_list_user(question, known))


# -- P_combine (Eq. 6): fuse similar proposals into one step ---------------------------------
COMBINE_TAG = "Task: merge similar steps."
COMBINE_SYSTEM = (COMBINE_TAG + " The steps below ask for nearly the same thing. Write ONE step "
                  "that keeps everything they ask for. Set is_final to true if doing it gives "
                  "the answer to the question. Reply in JSON.")
COMBINE_SCHEMA = GEN_SCHEMA


def combine_user(question: str, texts: list[str]) -> str:
    lines = "\n".join(f"- {t}" for t in texts)
    return f"Question: {question}\nSteps:\n{lines}\nMerged step?"


COMBINE_SHOTS = [
    (combine_user("Who composed the music for Psycho?",
                  ["Find the composer of Psycho.", "Look up who wrote the score of Psycho."]),
     json.dumps({"step": "Find who composed the music for Psycho.", "is_final": True})),
]
# Spec §7 gap 20: a bridge and a comparison demo per prompt. P_gen's shots above already have
# both; P_combine and P_integration get theirs with the ``comparison_demos`` knob.
_COMPARE_Q = "Who was born first, Anthony Perkins or Janet Leigh?"
_COMPARE_STEP = "Find the birth years of Anthony Perkins and Janet Leigh and compare them."
COMBINE_SHOT_COMPARE = (
    combine_user(_COMPARE_Q, ["Find the birth years of Anthony Perkins and Janet Leigh.",
                              "Compare when Anthony Perkins and Janet Leigh were born."]),
    json.dumps({"step": _COMPARE_STEP, "is_final": True}))


def combine(question: str, texts: list[str], comparison_demo: bool = False) -> list[dict]:
    shots = COMBINE_SHOTS + [COMBINE_SHOT_COMPARE] * comparison_demo
    return chat(COMBINE_SYSTEM, shots, combine_user(question, texts))


# -- P_integration (Eq. 8): knowledge summary for one node ----------------------------------
AGG_TAG = "Task: summarise knowledge for a step."
# The paper's integration prompt: organise the topic's knowledge with concepts and examples,
# list what only some passages say as bullets by theme, and settle conflicts by plausibility
# (time, place, domain), dropping implausible claims, all of them if none is plausible.
AGG_SYSTEM = (AGG_TAG + " Write a knowledge summary of the passages for the step.\n"
              "1. Organise the knowledge related to the step's topic, with the relevant "
              "concepts and examples. Keep names, years and numbers.\n"
              "2. List knowledge that only some of the passages give as bullet points, grouped "
              "by theme.\n"
              "3. Where passages contradict each other, judge which claim is plausible from "
              "clues of time, place and domain, and drop the implausible ones. If none is "
              "plausible, drop them all and write: No usable knowledge.")
# The short variant (small-model preset): a 135M model copes with one to three sentences.
AGG_SYSTEM_SHORT = (AGG_TAG + " Read the passages and write what they say that helps with the "
                    "step, in one to three short sentences. Keep names, years and numbers. "
                    "Leave out passages that do not help. If passages disagree, keep the more "
                    "plausible one.")


def agg_user(step: str, passages: str) -> str:
    return f"Step: {step}\nPassages:\n{passages}\nSummary:"


_AGG_PASSAGES = (
    "- Psycho (1960 film): Alfred Hitchcock directed Psycho, a horror thriller released in "
    "1960. It was a Paramount Pictures release with music by Bernard Herrmann.\n"
    "- Casablanca: Casablanca is located in Morocco. It is the largest city in Morocco.")
AGG_SHOTS = [
    (agg_user("Find the director of Psycho (1960).", _AGG_PASSAGES),
     "Psycho (1960), a horror thriller, was directed by Alfred Hitchcock.\n"
     "- Production: a Paramount Pictures release of 1960.\n"
     "- Music: Bernard Herrmann."),
]
AGG_SHOTS_SHORT = [
    (agg_user("Find the director of Psycho (1960).", _AGG_PASSAGES),
     "Psycho (1960) was directed by Alfred Hitchcock."),
]


_AGG_PASSAGES_COMPARE = (
    "- Anthony Perkins: Anthony Perkins, an American actor, was born in 1932 in New York City. "
    "His roles include Norman Bates in Psycho (1960).\n"
    "- Janet Leigh: Born in Merced, California in 1927, Janet Leigh went on to become an "
    "American actor. Her film roles include Marion Crane in Psycho (1960).")
AGG_SHOT_COMPARE = (
    agg_user(_COMPARE_STEP, _AGG_PASSAGES_COMPARE),
    "Janet Leigh was born in 1927 and Anthony Perkins in 1932, so Janet Leigh was born first.\n"
    "- Birthplaces: Leigh in Merced, California; Perkins in New York City.\n"
    "- Roles: both starred in Psycho (1960), Perkins as Norman Bates, Leigh as Marion Crane.")
AGG_SHOT_COMPARE_SHORT = (
    agg_user(_COMPARE_STEP, _AGG_PASSAGES_COMPARE),
    "Janet Leigh was born in 1927 and Anthony Perkins in 1932, so Janet Leigh was born first.")


def aggregate(step: str, passages: str, style: str = "paper",
              comparison_demo: bool = False) -> list[dict]:
    if style == "short":
        system, shots, compare = AGG_SYSTEM_SHORT, AGG_SHOTS_SHORT, AGG_SHOT_COMPARE_SHORT
    else:
        system, shots, compare = AGG_SYSTEM, AGG_SHOTS, AGG_SHOT_COMPARE
    return chat(system, shots + [compare] * comparison_demo, agg_user(step, passages))


# -- P_evaluation (Eq. 9): free text, its perplexity is the sufficiency score ---------------
EVAL_TAG = "Task: answer a step from knowledge."
UNKNOWN = "UNKNOWN"
EVAL_SYSTEM = (EVAL_TAG + " Answer the step using only the knowledge. Give a short answer. If "
               f"the knowledge does not contain the answer, reply {UNKNOWN}.")
EVAL_SYSTEM_FAITHFUL = (EVAL_TAG + " Answer the step using the knowledge. Give a short answer.")


def eval_user(step: str, knowledge: str) -> str:
    return f"Knowledge: {knowledge}\nStep: {step}\nAnswer:"


# The paper's P_evaluation has no demos. One short demo (eval_shots=1, small-model preset)
# keeps a 135M model's answer to a few words. (A second, UNKNOWN demo made SmolLM2-135M
# answer "Unkown" to almost every node, so the sentinel is only in the instruction.)
EVAL_SHOTS = [
    (eval_user("Find the director of Psycho (1960).",
               "Psycho (1960) was directed by Alfred Hitchcock."), "Alfred Hitchcock"),
]


def evaluate(step: str, knowledge: str, unknown_sentinel: bool = False,
             shots: int = 0) -> list[dict]:
    """P_evaluation: the paper's plain instruction, or with the UNKNOWN sentinel (the
    ``ppl+unknown`` sufficiency mode); ``shots`` demos (the paper: none)."""
    system = EVAL_SYSTEM if unknown_sentinel else EVAL_SYSTEM_FAITHFUL
    return chat(system, EVAL_SHOTS[:shots], eval_user(step, knowledge))


# -- noise probe (spec §5.7): distractors written by the model for unrelated tasks ----------
NOISE_TAG = "Task: write for an unrelated task."
NOISE_TASKS = ["baking sourdough bread", "repairing a bicycle tyre", "planting tomatoes",
               "setting up a freshwater aquarium", "knitting a scarf", "tuning a guitar"]
NOISE_STEP_SYSTEM = (NOISE_TAG + " Write ONE short step of a plan for the task, as an "
                     "instruction like \"Find ...\". Reply with the step only.")
NOISE_KNOWLEDGE_SYSTEM = (NOISE_TAG + " Write two or three short factual sentences about the "
                          "task. Reply with the sentences only.")


def noise(kind: str, task: str) -> list[dict]:
    """The paper's distractors: a node (kind="nodes") or a knowledge summary (kind=
    "knowledge") produced by the LLM from an unrelated task instruction."""
    system = NOISE_STEP_SYSTEM if kind == "nodes" else NOISE_KNOWLEDGE_SYSTEM
    return chat(system, [], f"Task: {task}")


# -- P_step (Eq. 11): carry out one step of a path given the conditions so far -------------
STEP_TAG = "Task: carry out a reasoning step."
STEP_SYSTEM = (STEP_TAG + " You are answering a question step by step. Use what is known so "
               "far and the knowledge to carry out the current step. Reply with its result in "
               "one short sentence.")


def condition_text(question: str, done: list[tuple[str, str]]) -> str:
    """The spec's concate template: 'Known so far:' + numbered 'step -> result' lines."""
    lines = [f"Question: {question}", "Known so far:"]
    if done:
        lines += [f"{i}. {s} -> {r}" for i, (s, r) in enumerate(done, 1)]
    else:
        lines.append("nothing yet")
    return "\n".join(lines)


# The last step of a path gives the path's answer (Eq. 12: a_c = its result), so its prompt
# says so. Seen in a HotpotQA trace: a last step told only to "carry out the step" restated
# facts ("X formed in 2006, Y in 1997") and left the comparison to P_abstract, which a 1.5B
# model then got wrong. On the first 20 HotpotQA-100 questions it changed two answers (one
# to right, one to wrong): it makes Eq. 12 hold, it is not a measured gain.
LAST_STEP_NOTE = "This is the last step: its result must answer the question."


def step_user(condition: str, step: str, knowledge: str, last: bool = False) -> str:
    note = f"\n{LAST_STEP_NOTE}" if last else ""
    return f"{condition}\nCurrent step: {step}\nKnowledge: {knowledge}{note}\nResult:"


STEP_SHOTS = [
    (step_user(condition_text("Where was the director of Psycho (1960) born?",
                              [("Find the director of Psycho (1960).",
                                "Psycho was directed by Alfred Hitchcock.")]),
               "Find where that director was born.",
               "Alfred Hitchcock was born in London, England in 1899.", last=True),
     "Alfred Hitchcock was born in London, so the answer is London."),
    (step_user(condition_text("Which film came out first, Psycho or Vertigo?",
                              [("Find the release year of Psycho.",
                                "Psycho was released in 1960.")]),
               "Find the release year of Vertigo and compare the two years.",
               "Vertigo is a 1958 thriller film.", last=True),
     "Vertigo came out in 1958, before Psycho (1960), so the answer is Vertigo."),
]


def step(condition: str, step_text: str, knowledge: str, last: bool = False) -> list[dict]:
    return chat(STEP_SYSTEM, STEP_SHOTS, step_user(condition, step_text, knowledge, last))


# -- "w/o iterative reasoning" ablation: one call per path ----------------------------------
PATH_TAG = "Task: answer from a reasoning path."
PATH_SYSTEM = (PATH_TAG + " Use the steps and their knowledge to answer the question. Reply "
               "with a short answer.")


def path_oneshot(question: str, steps: list[tuple[str, str]]) -> list[dict]:
    body = "\n".join(f"{i}. {s}\n   Knowledge: {k}" for i, (s, k) in enumerate(steps, 1))
    return chat(PATH_SYSTEM, [], f"Question: {question}\nSteps:\n{body}\nAnswer:")


# -- P_abstract (Eq. 13): integrate several path answers -----------------------------------
ABSTRACT_TAG = "Task: combine answers."
ABSTRACT_SYSTEM = (ABSTRACT_TAG + " Several reasoning paths answered the same question. Merge "
                   "answers that say the same thing. Give the final short answer, and in "
                   "details list distinct answers if they disagree. Reply in JSON.")
ABSTRACT_SCHEMA = {
    "type": "object",
    "properties": {"final_answer": {"type": "string", "maxLength": 120},
                   "details": {"type": "string", "maxLength": 240}},
    "required": ["final_answer", "details"],
}


def abstract_user(question: str, answers: list[str]) -> str:
    lines = "\n".join(f"{i}. {a}" for i, a in enumerate(answers, 1))
    return f"Question: {question}\nAnswers:\n{lines}\nFinal answer?"


ABSTRACT_SHOTS = [
    (abstract_user("Who directed Psycho (1960)?",
                   ["Psycho was directed by Alfred Hitchcock.", "Alfred Hitchcock."]),
     json.dumps({"final_answer": "Alfred Hitchcock", "details": "Both paths agree."})),
]


def abstract(question: str, answers: list[str]) -> list[dict]:
    return chat(ABSTRACT_SYSTEM, ABSTRACT_SHOTS, abstract_user(question, answers))
