"""Which cached prompt prefix a call starts from, and recent prompts kept for later calls.

``Llama.generate`` reuses the KV cache of the longest common prefix with the *previous*
call only. A method's calls come in kinds (summary, evaluation, proposal, ...) that
interleave, so each kind's instructions and demonstrations were evaluated again at nearly
every call. :class:`PrefixStore` keeps the KV state of recent prompts in RAM (copies of
sequence 0's cells, ``llama_state_seq_get_data``) and, before a call, puts back the longest
cached prefix of its prompt, from the previous call or a kept prompt, so that only the rest
is evaluated.

**A call's output does not depend on what ran before it.** Measured on CPU with the
bundled models: a token's logits depend, in the last bits, on the index of the KV cell it
sits in, on its offset modulo 32 within the ``llama_decode`` batch that evaluated it (the
kernels work on rows in tiles), and on whether that batch had only a few tokens (other
kernels). So

* a restored prefix goes back into cells ``0..n-1`` of an emptied cache, where a fresh
  evaluation puts it (kept prompts are copies, not extra sequences of the context: those
  sit in other cells and change the sums);
* the backend ends evaluation batches at multiples of ``n_batch`` counted from position 0,
  wherever the evaluation starts, and :func:`eval_start` cuts every cached length to a
  multiple of :data:`ALIGN` and leaves the first batch at least ALIGN tokens long, so every
  token is evaluated at the offset and in the kind of batch a fresh evaluation gives it;
* cells a call filled by decoding (its output) are never reused: decoding one token at a
  time is not a batched evaluation.

With these, greedy output and log-probabilities are bit-identical to evaluating the prompt
from scratch, whatever the cache held (``tests/test_prefix_cache.py``), so a replayed or
counterfactual run's fresh calls give what a full re-run would. The cut costs at most 63
tokens of a call's cached prefix.

**Not where layers are offloaded** (:func:`cache_plan`). Measured on an H200 with the
default model (docs/gpu.md, run 5): a 700-token prompt evaluates in 34 ms, while putting
a kept copy back through host memory takes about 62 ms, so the store made later calls
1.06-1.12x slower, an eval of CRP-RAG 1.74x slower, and its output was not identical to
a fresh evaluation there (GPU kernels choose by batch size in other ways). Neither was the
output of a call that carried on from the previous call's prompt (run 6: log-probabilities
by up to 0.15 with the default model, and 4 of 32 greedy tokens with SmolLM2-135M), while
evaluating every prompt whole gave the same output in any order. So with offload, by
default, nothing cached is used: a call's output is a function of its prompt, whatever ran
before it (another visitor's call included), for about 15% more time per 700-token call of
the default model there.

**What it costs.** A kept prompt is a copy of its cells (28 kB a token for the default
model): about 20 ms to copy out and back for a 700-token prompt, against seconds to
evaluate it on a CPU. The budget counts kept tokens; copies of one prefix are not shared.

**Eviction.** Least recently used first, except that a kept prompt most of which a newer
kept prompt repeats (the previous call of the same kind: its instructions are in the newer
one, only its variable text is not) goes first; a kept prompt wholly repeated by a newer one
is dropped at once.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

# Prompts shorter than this are not worth keeping: they evaluate in one batch anyway.
MIN_KEPT_TOKENS = 32
# Budget in tokens, about 235 MB of RAM for qwen2.5-1.5B (28.7 kB a token). Half of it let a
# HotpotQA CRP-RAG run's long summary prompts push out the instructions and demonstrations of
# calls made once a question (answer span, integration), so the next question evaluated them
# again: replayed over 18 stored runs, 8192 evaluated 0.86x the fresh prompt tokens of 4096,
# and 12288 no fewer than 8192 (docs/performance.md#how-large-a-budget).
DEFAULT_BUDGET_TOKENS = 8192
# The setting's automatic value: DEFAULT_BUDGET_TOKENS on a CPU, WHOLE with offload.
AUTO = -1
# The setting's value for "every prompt evaluated whole": nothing cached is used, not even the
# previous call's prompt.
WHOLE = -2
DEFAULT_SLOTS = 16
# Cached lengths are multiples of this (see the module docstring).
ALIGN = 32
_SUPERSEDED = 1 << 40


def cache_plan(tokens: int | None, offloaded: bool) -> tuple[int, bool]:
    """(kept-prompt budget, whether a call may start from cached cells) for a
    ``prefix_cache_tokens`` setting: ``None`` or :data:`AUTO` keep prompts on a CPU and use
    nothing cached where layers are offloaded, where the output would depend on it (module
    docstring); :data:`WHOLE` uses nothing cached anywhere; 0 reuses the previous call's
    prompt only; a positive number is the budget."""
    if tokens is None or tokens == AUTO:
        return (0, False) if offloaded else (DEFAULT_BUDGET_TOKENS, True)
    if tokens < 0:
        return 0, False
    return int(tokens), True


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the common prefix of two token lists."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    x = np.asarray(a[:n], dtype=np.int64)
    y = np.asarray(b[:n], dtype=np.int64)
    diff = np.flatnonzero(x != y)
    return int(diff[0]) if diff.size else n


def aligned(n: int) -> int:
    return n // ALIGN * ALIGN


def eval_start(n: int, total: int, n_batch: int) -> int:
    """Where evaluating a prompt of ``total`` tokens whose first ``n`` are cached starts, for
    every token to be evaluated as evaluating the whole prompt evaluates it: at a multiple
    of ALIGN, and with a first batch (up to the next multiple of ``n_batch``, where the
    backend's ``eval`` ends batches) of at least ALIGN tokens unless a whole evaluation has
    the same batch. Kernels for batches of a few tokens differ from those for more
    (measured: under 8 tokens for Qwen's Q4_K_M, under 2 for SmolLM2's Q4_1)."""
    n = aligned(n)
    if n % n_batch and min(n // n_batch * n_batch + n_batch, total) - n < ALIGN:
        n -= ALIGN
    return n


@dataclass
class _Entry:
    tokens: list[int]
    state: Any                         # ctypes buffer: sequence 0's cells holding ``tokens``
    used: int                          # the store's clock at its last use


@dataclass
class StoreStats:
    hits: int = 0                      # restores from a kept prompt
    tokens_served: int = 0             # prompt tokens those restores supplied
    kept: int = 0                      # prompts kept
    evicted: int = 0


class PrefixStore:
    """Sequence 0's cached prefix and the kept prompts of one context (see the module
    docstring). With a budget of 0 nothing is kept and only the previous call's prompt is
    reused, cut the same way; without ``reuse`` every prompt is evaluated whole. All calls
    are made under the backend's lock: the store and the context have one user at a time."""

    def __init__(self, llm: Any, n_slots: int, budget_tokens: int, reuse: bool = True):
        import llama_cpp
        self._lc = llama_cpp
        self.llm = llm
        self.reuse = bool(reuse)
        self.budget = max(0, int(budget_tokens))
        self.slots = max(0, int(n_slots))
        self._entries: list[_Entry] = []
        self._clock = 0
        self.stats = StoreStats()

    @property
    def enabled(self) -> bool:
        return self.budget > 0 and self.slots > 0

    def _mem(self):
        return self._lc.llama_get_memory(self.llm._ctx.ctx)

    def cells(self) -> int:
        """Tokens the kept prompts hold."""
        return sum(len(e.tokens) for e in self._entries)

    def kept(self) -> list[list[int]]:
        """The kept prompts, most recently used first (for tests and benchmarks)."""
        return [e.tokens for e in sorted(self._entries, key=lambda e: -e.used)]

    def best(self, toks: Sequence[int]) -> tuple[int, _Entry | None]:
        best_n, best_e = 0, None
        for e in self._entries:
            n = common_prefix(e.tokens, toks)
            if n > best_n:
                best_n, best_e = n, e
        return best_n, best_e

    def _cut(self, n: int) -> int:
        """Sequence 0 cut to its first ``n`` tokens (0 where the cache cannot cut it)."""
        llm = self.llm
        n = min(n, llm.n_tokens)
        if not self._lc.llama_memory_seq_rm(self._mem(), 0, n, -1):
            self._lc.llama_memory_clear(self._mem(), False)
            n = 0
        llm.n_tokens = n
        llm._requires_eval = True        # the logits are not those of sequence 0's last token
        return n

    def restore(self, toks: Sequence[int], limit: int) -> tuple[int, str]:
        """Leave in sequence 0 the longest cached prefix of ``toks`` (at most ``limit``
        tokens, cut where :func:`eval_start` lets evaluation begin), from what sequence 0
        holds ("previous") or a kept prompt ("prefix").

        Returns (tokens cached, source); ``Llama``'s record of sequence 0 (``input_ids``,
        ``n_tokens``) is kept true, so ``Llama.generate``/``eval`` carry on from it."""
        llm = self.llm
        if not self.reuse:
            return self._cut(0), "none"
        prev = eval_start(min(common_prefix(llm._input_ids, toks), limit), len(toks), llm.n_batch)
        n, entry = self.best(toks)
        n = eval_start(min(n, limit), len(toks), llm.n_batch)
        if entry is None or n <= prev or not self._load(entry):
            prev = self._cut(prev)
            return prev, ("previous" if prev > 0 else "none")
        llm.input_ids[:len(entry.tokens)] = entry.tokens
        llm.n_tokens = len(entry.tokens)
        n = self._cut(n)
        self._clock += 1
        entry.used = self._clock
        self.stats.hits += 1
        self.stats.tokens_served += n
        return n, "prefix"

    def _load(self, e: _Entry) -> bool:
        """Sequence 0 := the kept prompt, in cells 0.. of an emptied cache."""
        lc, ctx = self._lc, self.llm._ctx.ctx
        lc.llama_memory_clear(self._mem(), False)
        if lc.llama_state_seq_set_data(ctx, e.state, len(e.state), 0) != len(e.state):
            lc.llama_memory_clear(self._mem(), False)
            self.llm.n_tokens = 0
            self._entries.remove(e)
            return False
        return True

    def settle(self, toks: Sequence[int]) -> None:
        """After a call whose prompt ``toks`` sequence 0 holds (and perhaps more): cut it
        to the prompt's first multiple of ALIGN tokens, for the next call, and keep that."""
        n = self._cut(aligned(common_prefix(self.llm._input_ids, toks)) if self.reuse else 0)
        if self.enabled and n >= MIN_KEPT_TOKENS:
            self._keep(list(toks[:n]))

    def _keep(self, toks: list[int]) -> None:
        if len(toks) > self.budget:
            return
        self._clock += 1
        for e in list(self._entries):
            n = common_prefix(e.tokens, toks)
            if n == len(toks):           # already kept, within a longer prompt
                e.used = self._clock
                return
            if n == len(e.tokens):       # wholly repeated by the new one
                self._drop(e)
            elif 2 * n >= len(e.tokens) and e.used >= 0:
                e.used -= _SUPERSEDED    # superseded: goes first, oldest first
        state = self._capture()
        if state is None:
            return
        new = _Entry(toks, state, self._clock)
        self._entries.append(new)
        self.stats.kept += 1
        while len(self._entries) > 1 and (self.cells() > self.budget
                                          or len(self._entries) > self.slots):
            self._drop(min((e for e in self._entries if e is not new), key=lambda e: e.used))

    def _capture(self) -> Any:
        """A copy of sequence 0's cells (None where llama.cpp cannot give one)."""
        lc, ctx = self._lc, self.llm._ctx.ctx
        size = lc.llama_state_seq_get_size(ctx, 0)
        state = (ctypes.c_uint8 * size)()
        return state if lc.llama_state_seq_get_data(ctx, state, size, 0) == size else None

    def _drop(self, e: _Entry) -> None:
        self._entries.remove(e)
        self.stats.evicted += 1

    def summary(self) -> dict[str, Any]:
        return {"budget_tokens": self.budget, "kept": len(self._entries), "cells": self.cells(),
                "bytes": sum(len(e.state) for e in self._entries),
                "hits": self.stats.hits, "tokens_served": self.stats.tokens_served,
                "evicted": self.stats.evicted}


class _Tokens:
    """What :class:`PolicyReplay` needs of a ``Llama``: sequence 0's tokens."""

    def __init__(self, n_batch: int):
        self.n_batch = n_batch
        self.input_ids = np.zeros(0, dtype=np.intc)
        self.n_tokens = 0

    @property
    def _input_ids(self):
        return self.input_ids[:self.n_tokens]

    def hold(self, toks: Sequence[int]) -> None:
        if len(toks) > len(self.input_ids):
            self.input_ids = np.zeros(2 * len(toks), dtype=np.intc)
        self.input_ids[:len(toks)] = toks
        self.n_tokens = len(toks)


class PolicyReplay(PrefixStore):
    """The store's choices without a model: which prefix each prompt would start from and what
    is kept or evicted, for prompts given as token lists in the order a backend got them
    (``benchmarks/prefix_budget.py`` sizes the budget from stored runs this way). Cells are
    not copied; only the bookkeeping of :class:`PrefixStore` runs, unchanged."""

    def __init__(self, budget_tokens: int, n_slots: int = DEFAULT_SLOTS, n_batch: int = 512):
        super().__init__(_Tokens(n_batch), n_slots, budget_tokens)

    def call(self, toks: Sequence[int]) -> tuple[int, str]:
        """A single call with prompt ``toks``, as ``LlamaCppBackend`` makes it: (prompt tokens
        served from a cache, source)."""
        cached, source = self.restore(toks, len(toks) - 1)
        self.llm.hold(toks)               # the prompt evaluated; output cells are never kept
        self.settle(toks)
        return cached, source

    def _cut(self, n: int) -> int:
        self.llm.n_tokens = n = min(n, self.llm.n_tokens)
        return n

    def _load(self, e: _Entry) -> bool:
        return True                       # restore() then puts e.tokens in sequence 0

    def _capture(self) -> Any:
        return b""
