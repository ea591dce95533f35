"""Grammar-constrained sampling that asks the grammar about the likeliest tokens first.

llama.cpp's grammar sampler checks every token of the vocabulary against the grammar at every
step. For Qwen2.5's 152k-token vocabulary that took about 30 ms a token on 2 CPU cores, half
as much again as the decode step itself, and many times a GPU's decode step
(``benchmarks/grammar_sampling.py``). Yet the token taken is nearly always among the few
likeliest, so :class:`CandidateGrammarSampler` checks those first:

- greedy: the argmax alone, then the ``n_candidates`` highest logits. The highest one the
  grammar allows is the token the full check would give, since every token outside has a
  lower logit (ties go to the lower token id, as llama.cpp's greedy sampler does);
- top-k sampling: if at least ``top_k`` of the candidates are allowed, the ``top_k`` highest
  of them are the very tokens top-k keeps after a full check, and top-p, temperature and the
  random draw then run over them as before (same chain, same random stream);
- top-k sampling where fewer candidates are allowed (inside JSON's fixed keys and
  punctuation the grammar allows a handful of tokens): the allowed tokens outside the
  candidates are unknown, but each has a lower logit than every candidate, so their share of
  the probability is bounded. If top-p keeps the same candidates whatever that share is (the
  usual case: one token holds nearly all of it), sampling over the allowed candidates alone
  keeps the same tokens, with the same probabilities after top-p, as the full check;
- otherwise (or no candidate is allowed) the whole vocabulary is checked, as llama.cpp does.

Either way the grammar then accepts the token, so its parse state is the full check's. Only
the order of exactly equal logits can differ from llama.cpp's chain, which sorts without a
tie rule.
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .base import GrammarError
from .batch_engine import logits_row

# Candidates checked before the whole vocabulary: enough to hold top-k's 40 allowed tokens
# inside a JSON string, where nearly every token is allowed (benchmarks/grammar_sampling.py)
DEFAULT_CANDIDATES = 128

_TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])


class CandidateGrammarSampler:
    """A sampler with ``sample(ctx, idx)`` as llama-cpp-python's ``LlamaSampler`` has."""

    def __init__(self, vocab: Any, grammar: Any, n_vocab: int, *, temperature: float,
                 top_k: int = 40, top_p: float = 0.95, seed: int = 0,
                 n_candidates: int = DEFAULT_CANDIDATES):
        import llama_cpp
        from llama_cpp import _internals
        self._lc = llama_cpp
        self.n_vocab = n_vocab
        self.n_candidates = max(1, min(n_candidates, n_vocab - 1))
        self.greedy = temperature == 0.0
        # temperature < 0 samples from every allowed token: no candidate set is enough
        self.top_k = top_k if temperature > 0.0 and 0 < top_k <= self.n_candidates else 0
        self.top_p = top_p
        self._grammar = llama_cpp.llama_sampler_init_grammar(
            vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8"))
        if not self._grammar:
            raise GrammarError("llama.cpp could not parse the grammar (GBNF).")
        # what follows the grammar in Llama.generate's chain, less its no-op stages
        self._chain = _internals.LlamaSampler()
        if self.greedy:
            self._chain.add_greedy()
        elif temperature < 0.0:
            self._chain.add_dist(seed)
        else:
            self._chain.add_top_k(top_k)
            self._chain.add_top_p(top_p, 1)
            self._chain.add_temp(temperature)
            self._chain.add_dist(seed)
        self._buf = (llama_cpp.llama_token_data * n_vocab)()
        self._data = np.frombuffer(self._buf, dtype=_TOKEN_DATA)
        self._array = llama_cpp.llama_token_data_array(
            data=ctypes.cast(self._buf, llama_cpp.llama_token_data_p), size=0, selected=-1,
            sorted=False)
        self.steps = 0
        self.full_checks = 0            # steps that checked the whole vocabulary

    def close(self) -> None:
        if self._grammar:
            self._lc.llama_sampler_free(self._grammar)
            self._grammar = None
        self._chain.close()

    def __del__(self) -> None:
        self.close()

    def _apply(self, sampler: Any, ids: np.ndarray, logits: np.ndarray, sorted_: bool) -> None:
        n = len(ids)
        self._data["id"][:n] = ids
        self._data["logit"][:n] = logits
        self._data["p"][:n] = 0.0
        self._array.size = n
        self._array.selected = -1
        self._array.sorted = sorted_
        self._lc.llama_sampler_apply(sampler, ctypes.byref(self._array))

    def _allowed(self, ids: np.ndarray, logits: np.ndarray) -> np.ndarray:
        """The ids (in the order given) that the grammar allows next."""
        self._apply(self._grammar, ids, logits[ids], True)
        return ids[np.isfinite(self._data["logit"][:len(ids)])]

    def _pick(self, logits: np.ndarray) -> int:
        if self.greedy:
            best = int(np.argmax(logits))
            if len(self._allowed(np.array([best], dtype=np.int32), logits)):
                return best
        if self.greedy or self.top_k:
            m = self.n_candidates
            top = np.argpartition(logits, -m)[-m:]
            order = top[np.lexsort((top, -logits[top]))].astype(np.int32)
            allowed = self._allowed(order, logits)
            if self.greedy and len(allowed):
                return int(allowed[0])
            if self.top_k and (len(allowed) >= self.top_k or self._top_p_settled(
                    logits[allowed], self.top_k - len(allowed), float(logits[order[-1]]))):
                keep = allowed[:self.top_k]
                self._apply(self._chain.sampler, keep, logits[keep], True)
                return int(self._data["id"][self._array.selected])
        # the whole vocabulary, as llama.cpp's chain does it
        self.full_checks += 1
        self._apply(self._grammar, np.arange(self.n_vocab, dtype=np.int32), logits, False)
        if not np.isfinite(self._data["logit"]).any():
            # llama.cpp would take a forbidden token and abort the process on accepting it
            raise GrammarError("The grammar allows no token here: the output cannot continue "
                               "under this JSON schema or grammar; check that it can end.")
        self._lc.llama_sampler_apply(self._chain.sampler, ctypes.byref(self._array))
        return int(self._data["id"][self._array.selected])

    def _top_p_settled(self, allowed: np.ndarray, n_unseen: int, below: float) -> bool:
        """Whether top-p keeps the same leading tokens of ``allowed`` (logits, descending)
        with none, or with up to ``n_unseen`` more allowed tokens of logit <= ``below``
        beside them (they would join top-k's set but must not survive top-p)."""
        if not len(allowed) or self.top_p >= 1.0:
            return False
        e = np.exp(allowed.astype(np.float64) - float(allowed[0]))
        cum = np.cumsum(e)
        z0 = cum[-1]
        z1 = z0 + n_unseen * np.exp(below - float(allowed[0]))
        # llama.cpp sums float32 probabilities: a margin keeps rounding from deciding
        cut0 = int(np.argmax(cum >= self.top_p * z0 * (1 + 1e-4)))
        if cum[-1] < self.top_p * z1 * (1 + 1e-4):
            return False                    # the unseen tokens could be needed to reach p
        cut1 = int(np.argmax(cum >= self.top_p * z1 * (1 + 1e-4)))
        prev_ok = cut0 == 0 or cum[cut0 - 1] < self.top_p * z0 * (1 - 1e-4)
        return cut0 == cut1 and prev_ok

    def sample(self, ctx: Any, idx: int = -1) -> int:
        """Pick the next token from row ``idx`` of ``ctx``'s logits and advance the grammar."""
        self.steps += 1
        tok = self._pick(logits_row(ctx.ctx, idx, self.n_vocab))
        self._lc.llama_sampler_accept(self._grammar, tok)
        self._chain.accept(tok)
        return tok
