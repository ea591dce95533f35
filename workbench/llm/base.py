"""The one interface every LLM backend implements, and its result types."""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from ..scoring import TokenScores, score_tokens
from .repetition import DEFAULT_LOOP_STOP, bounds_output

Message = dict[str, str]   # {"role": "system"|"user"|"assistant", "content": str}


class LLMError(Exception):
    """A backend problem with a message that names the cause and the fix."""


class ModelFileError(LLMError):
    pass


class ContextOverflowError(LLMError):
    def __init__(self, prompt_tokens: int, max_tokens: int, n_ctx: int,
                 request: int | None = None):
        self.prompt_tokens, self.max_tokens, self.n_ctx = prompt_tokens, max_tokens, n_ctx
        self.request = request          # index in a generate_many/score_many call
        where = "" if request is None else f"Request {request} of the batch: "
        super().__init__(
            f"{where}Prompt is {prompt_tokens} tokens and {max_tokens} more were requested, but "
            f"the model context (n_ctx) is {n_ctx}. Raise n_ctx (Settings or --n-ctx), lower "
            f"max_tokens, or retrieve fewer/shorter passages."
        )

    def __reduce__(self):          # crosses the model worker's pipe with its numbers
        return (type(self), (self.prompt_tokens, self.max_tokens, self.n_ctx, self.request))


class ModelCrashedError(LLMError):
    """The model's worker process died (a native crash, or killed); the next call restarts it."""

    def __init__(self, message: str, cause: str = ""):
        super().__init__(message)
        self.cause = cause

    def __reduce__(self):
        return (type(self), (str(self), self.cause))


class BackendUnavailableError(LLMError):
    pass


class GrammarError(LLMError):
    pass


@dataclass
class GenParams:
    max_tokens: int = 128
    temperature: float = 0.0       # 0 = greedy
    top_p: float = 0.95
    top_k: int = 40
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    grammar: str | None = None     # GBNF text
    json_schema: dict[str, Any] | None = None
    chat: bool = True              # apply the model's chat template to messages
    # stop an output whose last tokens are one block repeated 3+ times, covering at least
    # this many tokens, and keep its first copy (finish "loop"; llm/repetition.py); 0 = off
    loop_stop: int = DEFAULT_LOOP_STOP

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def loop_tokens(self) -> int:
        """``loop_stop`` as generation applies it: 0 where the JSON schema bounds the output
        (repetition.py says why)."""
        return 0 if self.json_schema is not None and bounds_output(self.json_schema) \
            else self.loop_stop


@dataclass
class Token:
    id: int
    piece: str
    logprob: float | None
    entropy: float | None = None


@dataclass
class Completion:
    text: str
    tokens: list[Token]
    prompt: str                    # the exact text the model saw
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    finish_reason: str             # "stop" | "length" | "loop" | "grammar_incomplete" | "error"
    model: str
    params: dict[str, Any]
    logprobs_available: bool = True
    prompt_eval_ms: float | None = None
    cached_prompt_tokens: int = 0
    # where those came from: "previous" (the call before), "prefix" (a kept prompt:
    # llm/prefix_store.py), "batch" (a generate_many group's prefix), "none"; None: not known
    cache: str | None = None
    batch: dict[str, Any] | None = None   # set by generate_many: see llm/batching.py
    replayed_from: str | None = None      # a stored call's id: see llm/replay.py
    reused_from: str | None = None        # this run's call it repeats: see llm/memo.py
    call_id: str | None = None            # the id its llm_call event takes, when set before

    @property
    def logprobs(self) -> list[float]:
        return [t.logprob for t in self.tokens if t.logprob is not None]

    def scores(self) -> TokenScores:
        return score_tokens(self.logprobs, [t.entropy for t in self.tokens])

    def json(self) -> Any:
        """Parse the text as JSON (raises ValueError with the text on failure)."""
        try:
            return json.loads(self.text)
        except json.JSONDecodeError as e:
            raise ValueError(f"model output is not valid JSON ({e}): {self.text[:200]!r}") from e

    def to_record(self) -> dict[str, Any]:
        """The payload stored in an ``llm_call`` event."""
        return {
            "prompt": self.prompt, "output": self.text,
            "tokens": [[t.id, t.piece, t.logprob, t.entropy] for t in self.tokens],
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "latency_ms": round(self.latency_ms, 3), "finish_reason": self.finish_reason,
            "model": self.model, "params": self.params,
            "logprobs_available": self.logprobs_available,
            "prompt_eval_ms": self.prompt_eval_ms,
            "cached_prompt_tokens": self.cached_prompt_tokens,
            **({"cache": self.cache} if self.cache is not None else {}),
            "scores": self.scores().to_dict(),
            **({"batch": self.batch} if self.batch is not None else {}),
            **({"replayed_from": self.replayed_from} if self.replayed_from else {}),
            **({"reused_from": self.reused_from} if self.reused_from else {}),
        }


@dataclass
class ScoredText:
    """Log-probabilities of a given continuation under a context."""
    context: str
    continuation: str
    tokens: list[Token]
    latency_ms: float
    batch: dict[str, Any] | None = None   # set by score_many
    replayed_from: str | None = None      # a stored scoring's id: see llm/replay.py

    @property
    def logprobs(self) -> list[float]:
        return [t.logprob for t in self.tokens if t.logprob is not None]

    def scores(self) -> TokenScores:
        return score_tokens(self.logprobs, [t.entropy for t in self.tokens])

    def to_record(self) -> dict[str, Any]:
        """The payload stored in an ``llm_score`` event. The context is stored as its
        SHA-256 only: it is a whole prompt, often already stored in the call it extends,
        and a replay needs no more than to recognise it."""
        return {
            "context_sha256": context_digest(self.context), "continuation": self.continuation,
            "tokens": [[t.id, t.piece, t.logprob, t.entropy] for t in self.tokens],
            "latency_ms": round(self.latency_ms, 3),
            **({"batch": self.batch} if self.batch is not None else {}),
            **({"replayed_from": self.replayed_from} if self.replayed_from else {}),
        }


def context_digest(context: str) -> str:
    return hashlib.sha256(context.encode("utf-8")).hexdigest()


@dataclass
class GenRequest:
    """One generation of a ``generate_many`` call: what ``generate`` takes, as data."""
    messages: list[Message] | str
    params: GenParams = field(default_factory=GenParams)


@dataclass
class ScoreRequest:
    """One teacher-forced scoring of a ``score_many`` call."""
    context: list[Message] | str
    continuation: str


@dataclass
class ModelInfo:
    name: str
    path: str = ""
    backend: str = ""
    quantization: str = ""
    n_ctx_train: int | None = None
    n_ctx: int | None = None
    size_bytes: int | None = None
    sha256: str = ""
    n_gpu_layers: int = 0
    chat_template: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@runtime_checkable
class LLMBackend(Protocol):
    info: ModelInfo

    def generate(self, messages: Sequence[Message] | str, params: GenParams | None = None,
                 on_token: Callable[[Token], None] | None = None) -> Completion:
        """Generate from chat messages (template applied) or a plain prompt string.

        ``on_token`` sees each generated token as it is produced (live display only: the
        returned completion is the record)."""

    def score(self, context: Sequence[Message] | str, continuation: str) -> ScoredText:
        """Log-probabilities of ``continuation`` following ``context`` (teacher-forced)."""

    def generate_many(self, requests: Sequence[GenRequest], *, max_batch: int | None = None,
                      plan: Sequence[Sequence[int]] | None = None) -> list[Completion]:
        """One Completion per request, in request order, each with its ``batch`` record.

        ``plan`` (groups of request indices) forces which requests run together, as
        recorded by an earlier call; otherwise the backend plans groups of at most
        ``max_batch``. Backends without native batching use
        :func:`workbench.llm.batching.sequential_generate_many`.
        """

    def score_many(self, requests: Sequence[ScoreRequest], *, max_batch: int | None = None,
                   plan: Sequence[Sequence[int]] | None = None) -> list[ScoredText]:
        """``score`` of each request, in request order."""

    def count_tokens(self, text: str) -> int:
        ...


def messages_to_plain(messages: Sequence[Message] | str) -> str:
    """Fallback rendering of chat messages for models without a chat template."""
    if isinstance(messages, str):
        return messages
    parts = []
    for m in messages:
        role = m.get("role", "user")
        label = {"system": "", "user": "Question: ", "assistant": "Answer: "}.get(role, "")
        parts.append(f"{label}{m.get('content', '')}".strip())
    return "\n\n".join(parts) + "\nAnswer:"
