"""Recent prompts' KV cells kept as extra sequences of the model's one llama.cpp context.

``Llama.generate`` reuses the KV cache of the longest common prefix with the *previous*
call only. A method's calls come in kinds (summary, evaluation, proposal, ...) that
interleave, so each kind's instructions and demonstrations were evaluated again at nearly
every call. :class:`PrefixStore` keeps the prompts of recent calls in sequences of their own
(``first_seq``, ``first_seq + 1``, ...) of the same context, so that before a call the
longest cached prefix of its prompt, from whichever kept sequence holds it, is copied into
the working sequence 0 and only the rest is evaluated.

**Why sequences, not saved states.** In a unified KV cache (``kv_unified``, see
``batch_engine.enable_sequences``) ``llama_memory_seq_cp`` tags the same cells with one more
sequence id; no data moves, so keeping a prompt and restoring it cost next to nothing. A
``Llama.save_state``/``load_state`` round trip of a 721-token prefix of the default model
takes 2.6 s (20.7 MB through Python) against 12.2 s to evaluate it on 2 cores.

**What it costs.** Kept cells are real KV memory (the context is made larger by the budget,
so kept prefixes never take room from a call) and attention runs over every used cell, the
other sequences' masked out, so a full store makes each decode step a little slower
(``benchmarks/prefix_cache.py`` measures both). The budget counts distinct cells: prompts
that share a prefix share its cells (a prompt restored from a kept one and then kept itself
shares the cells it was restored from), so the count is the size of the token trie of the
kept prompts.

**Eviction.** Least recently used first, except that a kept prompt most of which a newer
kept prompt repeats (the previous call of the same kind: its instructions are in the newer
one, only its variable text is not) goes first; a kept prompt wholly repeated by a newer one
is dropped at once.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

# Prompts shorter than this are not worth a sequence: they evaluate in one batch anyway.
MIN_KEPT_TOKENS = 32
# Budget in KV cells (tokens) to use when the store is turned on (it is off by default): four of the default model's ~1k-token prompts, about
# 115 MB of KV memory for qwen2.5-1.5B (28 kB a cell); see benchmarks/prefix_cache.py.
DEFAULT_BUDGET_TOKENS = 4096
DEFAULT_SLOTS = 16
# Restored and kept lengths are multiples of this. llama.cpp's CPU attention sums over KV
# cells in SIMD lanes by cell index, so a token's result depends, in the last bits, on its
# cell's index modulo the lane count; prompts that start at a multiple of it keep the lane
# of every position that a fresh evaluation gives it, wherever the free cells are.
ALIGN = 32
_SUPERSEDED = 1 << 40


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the common prefix of two token lists."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    x = np.asarray(a[:n], dtype=np.int64)
    y = np.asarray(b[:n], dtype=np.int64)
    diff = np.flatnonzero(x != y)
    return int(diff[0]) if diff.size else n


def trie_size(token_lists: Sequence[Sequence[int]]) -> int:
    """Distinct prefixes of the lists: the KV cells they occupy when shared prefixes share
    cells."""
    ordered = sorted(tuple(t) for t in token_lists)
    total, prev = 0, ()
    for t in ordered:
        total += len(t) - common_prefix(prev, t)
        prev = t
    return total


@dataclass
class _Entry:
    seq: int
    tokens: list[int]
    used: int                          # the store's clock at its last use


@dataclass
class StoreStats:
    hits: int = 0                      # restores from a kept sequence
    tokens_served: int = 0             # prompt tokens those restores supplied
    kept: int = 0                      # prompts kept
    evicted: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class PrefixStore:
    """Kept prompts of one context (see the module docstring). All calls are made under the
    backend's lock: the store and the context have one user at a time."""

    def __init__(self, llm: Any, first_seq: int, n_slots: int, budget_tokens: int):
        import llama_cpp
        self._lc = llama_cpp
        self.llm = llm
        self.budget = max(0, int(budget_tokens))
        self._free = list(range(first_seq, first_seq + max(0, n_slots)))
        self._entries: dict[int, _Entry] = {}
        self._clock = 0
        self.stats = StoreStats()

    @property
    def enabled(self) -> bool:
        return self.budget > 0 and bool(self._free or self._entries)

    def _mem(self):
        return self._lc.llama_get_memory(self.llm._ctx.ctx)

    def cells(self) -> int:
        """KV cells the kept prompts occupy (their token trie)."""
        return trie_size([e.tokens for e in self._entries.values()])

    def kept(self) -> list[list[int]]:
        """The kept prompts, most recently used first (for tests and benchmarks)."""
        return [e.tokens for e in sorted(self._entries.values(), key=lambda e: -e.used)]

    def best(self, toks: Sequence[int]) -> tuple[int, _Entry | None]:
        best_n, best_e = 0, None
        for e in self._entries.values():
            n = common_prefix(e.tokens, toks)
            if n > best_n:
                best_n, best_e = n, e
        return best_n, best_e

    def restore(self, toks: Sequence[int], limit: int) -> tuple[int, str]:
        """Leave in sequence 0 the longest cached prefix of ``toks`` (at most ``limit``
        tokens), from what sequence 0 holds ("previous") or a kept prompt ("prefix").

        Returns (tokens cached, source); ``Llama``'s record of sequence 0 (``input_ids``,
        ``n_tokens``) is kept true, so ``Llama.generate``/``eval`` carry on from it."""
        llm = self.llm
        prev = min(common_prefix(llm._input_ids, toks), limit)
        n, entry = self.best(toks) if self.enabled else (0, None)
        n = min(n, limit) // ALIGN * ALIGN
        if entry is None or n <= prev:
            return prev, ("previous" if prev > 0 else "none")
        mem = self._mem()
        self._lc.llama_memory_seq_rm(mem, 0, -1, -1)
        self._lc.llama_memory_seq_cp(mem, entry.seq, 0, 0, n)
        llm.input_ids[:n] = toks[:n]
        llm.n_tokens = n
        llm._requires_eval = True        # the logits are not those of sequence 0's last token
        self._clock += 1
        entry.used = self._clock
        self.stats.hits += 1
        self.stats.tokens_served += n
        return n, "prefix"

    def keep(self, src_seq: int, toks: Sequence[int]) -> bool:
        """Keep positions ``[0, len(toks))`` of sequence ``src_seq``, which hold ``toks``."""
        toks = list(toks[:len(toks) // ALIGN * ALIGN])
        if not self.enabled or len(toks) < MIN_KEPT_TOKENS or len(toks) > self.budget:
            return False
        self._clock += 1
        for e in list(self._entries.values()):
            n = common_prefix(e.tokens, toks)
            if n == len(toks):           # already kept, within a longer prompt
                e.used = self._clock
                return False
            if n == len(e.tokens):       # wholly repeated by the new one
                self._drop(e)
            elif 2 * n >= len(e.tokens) and e.used >= 0:
                e.used -= _SUPERSEDED    # superseded: goes first, oldest first
        if not self._free:
            self._drop(min(self._entries.values(), key=lambda e: e.used))
        seq = self._free.pop()
        mem = self._mem()
        self._lc.llama_memory_seq_rm(mem, seq, -1, -1)
        self._lc.llama_memory_seq_cp(mem, src_seq, seq, 0, len(toks))
        self._entries[seq] = _Entry(seq, toks, self._clock)
        self.stats.kept += 1
        while self.cells() > self.budget and len(self._entries) > 1:
            self._drop(min((e for e in self._entries.values() if e.seq != seq),
                           key=lambda e: e.used))
        return True

    def _drop(self, e: _Entry) -> None:
        self._lc.llama_memory_seq_rm(self._mem(), e.seq, -1, -1)
        del self._entries[e.seq]
        self._free.append(e.seq)
        self.stats.evicted += 1

    def forget(self) -> None:
        """After the context's memory was cleared: nothing is kept any more."""
        for e in list(self._entries.values()):
            self._drop(e)

    def summary(self) -> dict[str, Any]:
        return {"budget_tokens": self.budget, "kept": len(self._entries), "cells": self.cells(),
                "hits": self.stats.hits, "tokens_served": self.stats.tokens_served,
                "evicted": self.stats.evicted}
