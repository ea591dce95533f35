"""Stand-ins for the eval tests: a tiny dataset and two toy methods, importable by
``module:function`` so process workers can build them too (no tests in this module)."""
from __future__ import annotations

from dataclasses import dataclass

from workbench import trace as T
from workbench.config import knob
from workbench.datasets.base import Passage, Question
from workbench.methods.base import Method

N_QUESTIONS = 12


@dataclass
class ToyRagConfig:
    k: int = knob(2, "passages", min=1, max=10)
    style: str = knob("plain", "answer style", choices=["plain", "verbose"])
    retriever: str = knob("bm25", "passage retriever", choices=["bm25", "dense"])


class ToyRag(Method):
    """Retrieves k passages and asks the LLM; refuses when the LLM says UNKNOWN."""
    name = "toy-rag"
    kind = "text"
    Config = ToyRagConfig
    prompt_version = "toy-1"

    def run(self, ctx, question):
        yield ctx.set_phase("retrieve")
        yield T.node_added("q", "question", question)
        hits = yield from ctx.retrieve("q", question, ctx.config.k, ctx.config.retriever)
        yield ctx.set_phase("answer")
        yield T.node_added("s1", "subquestion", f"What is {question.split()[-1].rstrip('?')}?",
                           parents=["q"])
        ctxt = "\n".join(h.text for h in hits)
        out = yield from ctx.generate("answer", [{"role": "user", "content": f"{ctxt}\nQ: {question}"}],
                                      node_id="s1")
        text = out.text.strip()
        if text == "UNKNOWN":
            yield T.answer("", refused=True, node_id="s1", reason="unknown")
        else:
            yield T.answer(text, node_id="s1")


@dataclass
class ToyLLMConfig:
    temperature: float = knob(0.0, "sampling temperature", min=0.0, max=2.0)


class ToyLLM(Method):
    name = "toy-llm"
    kind = "none"
    Config = ToyLLMConfig

    def run(self, ctx, question):
        yield T.node_added("q", "question", question)
        out = yield from ctx.generate("answer", question, node_id="q")
        yield T.answer(out.text.strip(), node_id="q")


class ToyDataset:
    name = "toy"

    def __init__(self, n: int = N_QUESTIONS):
        self.questions = [
            Question(id=f"q{i:03d}", question=f"What is the colour of item{i}?",
                     answers=[f"colour{i}"], hops=1 + i % 3,
                     type="bridge" if i % 2 else "comparison",
                     decomposition=[{"question": f"What is item{i}?"}],
                     meta={"domain": ["finance", "movie", "music"][i % 3],
                           "question_type": "simple", "static_or_dynamic": "static"} if i % 4 == 0
                     else {})
            for i in range(n)]
        self.passages = [Passage(id=f"p{i}", title=f"Item {i}", text=f"item{i} has colour{i}")
                         for i in range(max(n, 20))]
        self._r = None

    def retriever(self, kind: str = "bm25"):
        if self._r is None:
            from workbench.knowledge.bm25 import BM25Retriever
            self._r = BM25Retriever(self.passages)
        return self._r


def toy_dataset() -> ToyDataset:
    return ToyDataset()


def toy_methods() -> dict:
    return {"toy-rag": ToyRag, "toy-llm": ToyLLM}


def answer_rules() -> list[dict]:
    """item i's colour for even i, a wrong colour for odd i, UNKNOWN for i % 5 == 3."""
    rules = []
    for i in range(N_QUESTIONS):
        text = "UNKNOWN" if i % 5 == 3 else (f"colour{i}" if i % 2 == 0 else "purple")
        rules.append({"match": f"item{i}?", "text": text})
    return rules
