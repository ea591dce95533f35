"""PAR-RAG prompts (spec par-rag.md §3.3-3.5): plan, read (cited), judge, attribution, refine, final,
and the optional LLM hop estimate. Each system message starts with a ``Task:`` header.
"""
from __future__ import annotations

import json

from ..prompts import chat

VERSION = "par-2"

# -- plan (one call, JSON steps) -------------------------------------------------------------
PLAN_TAG = "Task: make a plan."
PLAN_SYSTEM = (PLAN_TAG + " Break the question into steps. Each step has a Thought, one simple "
               "Question that can be looked up on its own, and an Action: Retrieve (look it up) "
               "or Answer (combine earlier answers). A later question may say \"the director "
               "from step 1\". Do not answer the questions and do not add outside facts. Give "
               "the complete plan in JSON.")


def plan_schema(max_steps: int) -> dict:
    return {
        "type": "object",
        "properties": {"steps": {
            "type": "array", "minItems": 1, "maxItems": max_steps,
            "items": {"type": "object",
                      "properties": {"Thought": {"type": "string", "maxLength": 160},
                                     "Question": {"type": "string", "maxLength": 160},
                                     "Action": {"enum": ["Retrieve", "Answer"]}},
                      "required": ["Thought", "Question", "Action"]}}},
        "required": ["steps"],
    }


def plan_user(question: str) -> str:
    return f"Question: {question}\nPlan:"


# A built-in exemplar per hop count, used only when the demo world has no decompositions.
# Demo-world facts (data/demo), about films no demo question asks about.
BUILTIN_EXEMPLARS = {
    1: ("Who directed Psycho (1960)?",
        [{"Thought": "I need the director of the film.",
          "Question": "Who directed Psycho (1960)?", "Action": "Retrieve"}]),
    2: ("Where was the director of Psycho (1960) born?",
        [{"Thought": "First find the director.", "Question": "Who directed Psycho (1960)?",
          "Action": "Retrieve"},
         {"Thought": "Then find where that person was born.",
          "Question": "Where was the director from step 1 born?", "Action": "Retrieve"}]),
    3: ("In which country was the director of Psycho (1960) born?",
        [{"Thought": "First find the director.", "Question": "Who directed Psycho (1960)?",
          "Action": "Retrieve"},
         {"Thought": "Then the birthplace.", "Question": "Where was the director from step 1 "
          "born?", "Action": "Retrieve"},
         {"Thought": "Then the country of that city.",
          "Question": "Which country is the city from step 2 in?", "Action": "Retrieve"}]),
    4: ("In which country was the composer of the film Alfred Hitchcock released in 1960 born?",
        [{"Thought": "First find the film.", "Question": "Which film did Alfred Hitchcock "
          "release in 1960?", "Action": "Retrieve"},
         {"Thought": "Then its composer.", "Question": "Who composed the music for the film "
          "from step 1?", "Action": "Retrieve"},
         {"Thought": "Then the birthplace.", "Question": "Where was the composer from step 2 "
          "born?", "Action": "Retrieve"},
         {"Thought": "Then the country.", "Question": "Which country is the city from step 3 "
          "in?", "Action": "Retrieve"}]),
}


def plan(question: str, exemplars: list[tuple[str, list[dict]]]) -> list[dict]:
    shots = [(plan_user(q), json.dumps({"steps": steps})) for q, steps in exemplars]
    return chat(PLAN_SYSTEM, shots, plan_user(question))


# -- read: retrieve-then-read with numbered citations ---------------------------------------
READ_TAG = "Task: answer from sources with citations."
IDK = "I don't know"
READ_SYSTEM = (READ_TAG + " Answer the question in a few words using the numbered sources, and "
               "cite the sources you used like [1]. If the sources do not give the answer, "
               f"reply exactly: {IDK}.")


def read_user(sources: str, question: str) -> str:
    return f"{sources}\nQuestion: {question}\nAnswer:"


READ_SHOTS = [
    (read_user("Source 1: Psycho (1960 film): Alfred Hitchcock directed Psycho, a horror thriller "
               "released in 1960.\n"
               "Source 2: Alfred Hitchcock: British-American film director Alfred Hitchcock was "
               "born in London, England in 1899.\n"
               "Source 3: Casablanca: Casablanca is located in Morocco.",
               "Where was the director of Psycho (1960) born?"),
     "London. Psycho was directed by Alfred Hitchcock [1], who was born in London [2]."),
]


def read(sources: str, question: str) -> list[dict]:
    return chat(READ_SYSTEM, READ_SHOTS, read_user(sources, question))


# -- review: accuracy judge (a number in [0, 1]) ---------------------------------------------
JUDGE_TAG = "Task: rate an answer."
JUDGE_SYSTEM = (JUDGE_TAG + " Given the question, the answer and the context, rate how "
                "factually correct the answer is, from 0 (wrong) to 1 (correct). Reply with the "
                "number only.")
JUDGE_GRAMMAR = 'root ::= "0" ( "." [0-9] )? | "1" ( ".0" )?'


def judge(question: str, answer: str, context: str) -> list[dict]:
    return chat(JUDGE_SYSTEM, [],
                f"Question: {question}\nAnswer: {answer}\nContext: {context}\nScore:")


# -- review: attribution (AttrScore substitute, three labels) -------------------------------
ATTR_TAG = "Task: check attribution."
ATTR_LABELS = ("Attributable", "Extrapolatory", "Contradictory")
ATTR_SYSTEM = (ATTR_TAG + " Does the reference support the claim? Reply with one word: "
               "Attributable (the reference fully supports it), Extrapolatory (not enough "
               "support) or Contradictory (the reference says otherwise).")
ATTR_GRAMMAR = "root ::= " + " | ".join(f'"{w}"' for w in ATTR_LABELS)


def attribution(claim: str, reference: str) -> list[dict]:
    return chat(ATTR_SYSTEM, [], f"Claim: {claim}\nReference: {reference}\nLabel:")


# -- refine the next sub-question ------------------------------------------------------------
REFINE_TAG = "Task: rewrite the next question."
REFINE_SYSTEM = (REFINE_TAG + " Rewrite the next question so it can be answered on its own: "
                 "replace words like \"the director from step 1\" with the answer found. Do not "
                 "change what it asks. Reply with the question only.")


def refine_user(trajectory: str, next_question: str) -> str:
    return f"Answers so far:\n{trajectory}\nNext question: {next_question}\nRewritten question:"


REFINE_SHOTS = [
    (refine_user("1. Who directed Psycho (1960)? -> Alfred Hitchcock",
                 "Where was the director from step 1 born?"),
     "Where was Alfred Hitchcock born?"),
]


def refine(trajectory: str, next_question: str) -> list[dict]:
    return chat(REFINE_SYSTEM, REFINE_SHOTS, refine_user(trajectory, next_question))


# -- final answer ------------------------------------------------------------------------------
FINAL_TAG = "Task: give the final answer."
LEADIN = "So the answer is:"
FINAL_SYSTEM = (FINAL_TAG + " Use the reasoning steps to answer the question. Reply with one "
                f"line: {LEADIN} <short answer>. If the steps do not give it, reply: {LEADIN} "
                f"{IDK}.")


def final_user(question: str, trajectory: str) -> str:
    return f"Question: {question}\nSteps:\n{trajectory}\nFinal answer:"


FINAL_SHOTS = [
    (final_user("Where was the director of Psycho (1960) born?",
                "Step 1. Thought: First find the director.\n"
                "Question: Who directed Psycho (1960)?\nAnswer: Alfred Hitchcock\n"
                "Evidence: Alfred Hitchcock directed Psycho, a horror thriller released in 1960.\n"
                "Step 2. Thought: Then find where that person was born.\n"
                "Question: Where was Alfred Hitchcock born?\nAnswer: London\n"
                "Evidence: Alfred Hitchcock was born in London, England in 1899."),
     f"{LEADIN} London"),
]


def final(question: str, trajectory: str) -> list[dict]:
    return chat(FINAL_SYSTEM, FINAL_SHOTS, final_user(question, trajectory))


# -- optional: LLM hop estimate ("llm" complexity estimator) -------------------------------
HOPS_TAG = "Task: count look-up steps."
HOPS_SYSTEM = (HOPS_TAG + " How many separate look-up steps (1 to 4) does answering this "
               "question need? Reply with one digit.")
HOPS_GRAMMAR = 'root ::= [1-4]'


def hops(question: str) -> list[dict]:
    return chat(HOPS_SYSTEM, [("Who directed Psycho (1960)?", "1"),
                              ("Where was the director of Psycho (1960) born?", "2")],
                question)
