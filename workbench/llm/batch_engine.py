"""Several sequences decoded together in one llama.cpp context, one ``llama_batch`` per step.

llama-cpp-python's ``Llama`` generates one sequence at a time. Token decoding on a CPU
(more so on a GPU) is bound by memory bandwidth: one step that carries a token of each of
N sequences reads the weights once, so it costs far less than N single steps. This module
drives llama.cpp's low-level API for that: ``llama_batch_init``/``llama_decode`` with a
token of every live sequence per step, ``llama_get_logits_ith`` for each sequence's row,
``llama_memory_seq_cp``/``llama_memory_seq_rm`` for the KV cells, and one sampler chain
per sequence (a grammar's parse state belongs to one sequence).

**One context, not two.** The engine runs in the high-level ``Llama``'s own context,
rebuilt once at load time with ``n_seq_max = max_batch + 1`` and a unified KV cache
(:func:`enable_sequences`). Measured at n_ctx 4096 (``/proc/self/status`` around context
creation): a SmolLM2-135M context takes 236 MB of address space (93 MB resident) with
``n_seq_max`` 1 and 1 MB more with 9; Gemma-3-270M 628 MB (76 MB resident), 4 MB more with
9. A second context beside ``Llama``'s would cost all of that again (its own KV cache and
compute buffers), and single-sequence ``generate`` runs as fast in the rebuilt context. The
unified cache also makes a shared prefix free to share: ``llama_memory_seq_cp`` tags the
same cells with more sequence ids, no data moves. And batched and single calls share one
cross-call prefix cache: sequence 0 is ``Llama``'s own sequence, holding the prompt of its
previous call (``Llama.generate`` keeps it to skip re-evaluating a common prefix).

**A group** (the requests that run together) goes like this:

1. Shared prefix: ``P`` = the longest common prefix of the group's prompts, leaving at least
   one token of each prompt to evaluate (its logits give the first new token). Sequence 0
   is given the longest cached prefix of those ``P`` tokens (its own, from the previous
   call, or a prompt the prefix store keeps: ``prefix_store.py``, shared with single
   calls) and extended to all of them through ``Llama.eval``, so ``Llama``'s record of
   what is cached stays true; then its cells are copied to sequences 1..N. The prefix is
   evaluated once per group, and not at all when a cache holds it.
2. Prefill: the rest of each prompt, packed into batches of at most ``n_batch`` tokens,
   logits only at each prompt's last token.
3. Decode: a batch of the last token of every live sequence per step. Each sequence's
   logprob and entropy come from its own row of raw logits (one vectorised log-softmax, as
   ``LlamaCppBackend.generate`` does), sampling from its own chain. A sequence ends at an
   end-of-generation token, a stop string, a loop (``repetition.py``) or ``max_tokens``;
   its cells are freed at once.
4. Sequences 1..N are removed; sequence 0 keeps the shared prefix for the next call, and
   the prefix store a copy of it. The rest of each prompt is not kept: evaluated beside
   other sequences, its cells are not what a call of its own would compute.

Every cell a group can need (prefix, each prompt's rest, each ``max_tokens``) must fit in
``n_ctx`` at once; :func:`plan_groups` splits requests into groups that do.

**Overlap.** Each kept token's log-probability and entropy are computed over the whole
vocabulary in numpy, about 0.5 ms a row for a 152k vocabulary: little beside a CPU decode
step, a share of a GPU one. With ``overlap`` on, a step samples every row and copies the
rows it needs, starts the next decode in a second thread (ctypes lets go of the GIL inside
``llama_decode``) and computes the previous rows' statistics meanwhile. The same batches are
decoded in the same order, so tokens and numbers are those of the plain loop; only the wall
time changes: +4% at 4 sequences and +7% at 8 on an H200, but slower on 2 CPU cores, where
numpy and llama.cpp's threads share the cores (README, "GPU"). Sampling stays in the step;
a greedy row without a grammar takes its token by ``np.argmax`` (0.03 ms against the
sampler chain's 0.41 ms for a 152k vocabulary), the same token.

**Numerics.** Greedy output is not bit-identical across batch sizes: llama.cpp's CPU
kernels switch from a matrix-vector to a matrix-matrix path at a few rows, so the logits of
one sequence differ in the last bits with the number of sequences in the step, and a
near-tie can flip. A group is deterministic given its members and the cache it starts
from, which is why each completion records its group (see ``batching.py``).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from .prefix_store import PrefixStore
from .repetition import loop_cut

# Logit rows one decode may ask for when scoring: llama.cpp keeps an output buffer as
# large as the most rows ever requested (n_vocab floats each: 600 kB for a 152k vocab).
MAX_OUTPUT_ROWS = 32


def logsoftmax_stats(logits: np.ndarray, tok: int) -> tuple[float, float]:
    """(logprob of tok, entropy in nats) of the raw, untempered distribution."""
    m = float(logits.max())
    z = logits - m
    e = np.exp(z)
    s = float(e.sum())
    lse = np.log(s)
    lp = float(z[tok]) - float(lse)
    ent = float(lse) - float(np.dot(e, z)) / s
    return lp, ent


def logits_row(ctx: Any, idx: int, n_vocab: int) -> np.ndarray:
    """Row ``idx`` of a llama.cpp context's logits (-1: the last), without a copy."""
    import llama_cpp
    return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, idx), shape=(n_vocab,))


def shared_prefix(token_lists: Sequence[Sequence[int]], keep: Sequence[int] | None = None) -> int:
    """Length of the common prefix of all lists, leaving each list at least ``keep[i]``
    (default 1) tokens past it: those produce the logits the sequence needs."""
    if not token_lists:
        return 0
    keep = keep if keep is not None else [1] * len(token_lists)
    n = min(len(t) - k for t, k in zip(token_lists, keep))
    first = token_lists[0]
    for other in token_lists[1:]:
        i = 0
        while i < n and first[i] == other[i]:
            i += 1
        n = i
    return max(n, 0)


def cells_needed(token_lists: Sequence[Sequence[int]], extra: Sequence[int],
                 keep: Sequence[int] | None = None) -> int:
    """KV cells a group occupies at most: the shared prefix once, each list's rest, and
    each sequence's ``extra`` (tokens it may still add)."""
    p = shared_prefix(token_lists, keep)
    return p + sum(len(t) - p + x for t, x in zip(token_lists, extra))


def plan_groups(token_lists: Sequence[Sequence[int]], extra: Sequence[int], max_batch: int,
                n_ctx: int, keep: Sequence[int] | None = None) -> list[list[int]]:
    """Consecutive groups of at most ``max_batch`` requests whose cells fit in ``n_ctx``."""
    keep = keep if keep is not None else [1] * len(token_lists)
    groups: list[list[int]] = []
    cur: list[int] = []
    for i in range(len(token_lists)):
        trial = cur + [i]
        if cur and (len(trial) > max_batch or cells_needed(
                [token_lists[j] for j in trial], [extra[j] for j in trial],
                [keep[j] for j in trial]) > n_ctx):
            groups.append(cur)
            trial = [i]
        cur = trial
    if cur:
        groups.append(cur)
    return groups


def enable_sequences(llm: Any, n_seq_max: int, n_ctx: int | None = None) -> None:
    """Rebuild ``llm``'s context with ``n_seq_max`` sequences over one unified KV cache
    of ``n_ctx`` cells (default: as many as it has).

    ``Llama`` only asks for several sequences when it embeds, so the context it made is
    replaced, with the same parameters otherwise; the old one is freed first so the two
    never hold memory together. In a unified cache every sequence may use all the cells.
    """
    import llama_cpp
    from llama_cpp import _internals

    params = llama_cpp.llama_context_params.from_buffer_copy(llm.context_params)
    params.n_seq_max = n_seq_max
    params.kv_unified = True
    if n_ctx is not None:
        params.n_ctx = n_ctx
    llm._ctx.close()
    llm._ctx = _internals.LlamaContext(model=llm._model, params=params, verbose=llm.verbose)
    llm.context_params = params
    llm.reset()


@dataclass
class SeqSpec:
    """One sequence to generate: its prompt tokens and how to sample."""
    tokens: list[int]
    max_tokens: int
    temperature: float = 0.0
    top_k: int = 40
    top_p: float = 0.95
    seed: int = 0
    grammar: Any = None              # llama_cpp.LlamaGrammar, already checked to parse
    stops: list[str] = field(default_factory=list)
    loop_stop: int = 0               # see repetition.loop_cut


@dataclass
class SeqResult:
    ids: list[int] = field(default_factory=list)
    pieces: list[bytes] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    entropies: list[float] = field(default_factory=list)
    finish: str = "length"
    done: bool = False
    first_s: float = 0.0              # seconds from the group's start to its first token
    done_s: float = 0.0

    @property
    def raw(self) -> bytes:
        return b"".join(self.pieces)


@dataclass
class GroupStats:
    prefix_tokens: int = 0            # shared prefix of the group
    prefix_cached: int = 0            # ... of which a cache held before the group
    prefix_source: str = "none"       # which: "previous" call, a kept "prefix", "none"
    prompt_evaluated: int = 0         # prompt tokens this group evaluated, prefix included
    decode_steps: int = 0


class BatchEngine:
    """Runs groups of sequences in ``llm``'s context (see the module docstring)."""

    def __init__(self, llm: Any, store: PrefixStore, overlap: bool = False,
                 max_seqs: int | None = None):
        import llama_cpp
        self.overlap = overlap
        self.greedy_argmax = True
        # (grammar, temperature, top_k, top_p, seed) -> a sampler, or None for llama.cpp's
        # own chain; the backend sets it (grammar_sampler.py)
        self.grammar_sampler = lambda *args: None
        self._lc = llama_cpp
        self.llm = llm
        self.n_vocab = llm.n_vocab()
        self.n_batch = llm.n_batch
        self.max_seqs = max_seqs or llama_cpp.llama_n_seq_max(llm._ctx.ctx) - 1
        self.store = store               # shared with single calls
        self._batch = llama_cpp.llama_batch_init(self.n_batch, 0, 1)

    def close(self) -> None:
        if self._batch is not None:
            self._lc.llama_batch_free(self._batch)
            self._batch = None

    # -- low-level helpers --
    @property
    def _ctx(self):
        return self.llm._ctx.ctx

    def _mem(self):
        return self._lc.llama_get_memory(self._ctx)

    def _decode(self, entries: Sequence[tuple[int, int, int, bool]]) -> None:
        """Decode ``(seq_id, token, pos, wants_logits)`` entries as one batch."""
        b = self._batch
        for j, (sid, tok, pos, out) in enumerate(entries):
            b.token[j] = tok
            b.pos[j] = pos
            b.n_seq_id[j] = 1
            b.seq_id[j][0] = sid
            b.logits[j] = out
        b.n_tokens = len(entries)
        rc = self._lc.llama_decode(self._ctx, b)
        if rc != 0:
            why = ("no free KV cells: raise n_ctx or run fewer requests together" if rc == 1
                   else "see llama.cpp's log above")
            from .base import LLMError
            raise LLMError(f"llama_decode failed ({rc}) on a batch of {len(entries)} tokens: {why}.")

    def _decode_while(self, entries: Sequence[tuple[int, int, int, bool]], work) -> None:
        """``_decode(entries)`` in a second thread while ``work()`` runs in this one."""
        failed: list[BaseException] = []

        def run() -> None:
            try:
                self._decode(entries)
            except BaseException as e:      # re-raised below, in the caller's thread
                failed.append(e)

        th = threading.Thread(target=run, name="llama-decode")
        th.start()
        try:
            work()
        finally:
            th.join()
        if failed:
            raise failed[0]

    def _row(self, idx: int) -> np.ndarray:
        return logits_row(self._ctx, idx, self.n_vocab)

    def _load_prefix(self, prefix: list[int]) -> tuple[int, str]:
        """Make sequence 0 hold exactly ``prefix``; returns how many tokens were cached and
        where they came from ("previous" call, a kept "prefix", "none")."""
        cached, source = self.store.restore(prefix, len(prefix))
        if len(prefix) > cached:
            self.llm.eval(prefix[cached:])
        return cached, source

    def _run_group(self, token_lists: Sequence[Sequence[int]], keep: Sequence[int] | None,
                   body) -> GroupStats:
        """Shared prefix into sequence 0, copied to 1..N; ``body(P, stats)`` does the rest."""
        if len(token_lists) > self.max_seqs:
            from .base import LLMError
            raise LLMError(f"{len(token_lists)} sequences in one group, but the context was "
                           f"made for {self.max_seqs}; raise max_batch when loading the model.")
        p = shared_prefix(token_lists, keep)
        stats = GroupStats(prefix_tokens=p)
        mem = self._mem()
        prefix = list(token_lists[0][:p])
        try:
            stats.prefix_cached, stats.prefix_source = self._load_prefix(prefix)
            stats.prompt_evaluated = p - stats.prefix_cached
            for i in range(len(token_lists)):
                self._lc.llama_memory_seq_cp(mem, 0, i + 1, -1, -1)
            body(p, stats)
        finally:
            for i in range(len(token_lists)):
                self._lc.llama_memory_seq_rm(mem, i + 1, -1, -1)
            self.store.settle(prefix)
        return stats

    def _packed(self, entries: list[tuple[int, int, int, bool]], max_outputs: int):
        """Split entries into decode batches of at most n_batch tokens and max_outputs rows."""
        start = 0
        while start < len(entries):
            end, outs = start, 0
            while end < len(entries) and end - start < self.n_batch:
                if entries[end][3]:
                    if outs == max_outputs:
                        break
                    outs += 1
                end += 1
            yield entries[start:end]
            start = end

    # -- generation --
    def _sampler(self, spec: SeqSpec):
        from llama_cpp import _internals
        fast = self.grammar_sampler(spec.grammar, spec.temperature, spec.top_k, spec.top_p,
                                    spec.seed)
        if fast is not None:
            return fast
        s = _internals.LlamaSampler()
        if spec.grammar is not None:
            s.add_grammar(self.llm._model, spec.grammar)
        # the chain Llama.generate builds, less its stages that are no-ops at the
        # workbench's settings (penalties of 1.0, typical_p 1.0, min_p 0)
        if spec.temperature == 0.0:
            s.add_greedy()
        elif spec.temperature < 0.0:
            s.add_dist(spec.seed)
        else:
            s.add_top_k(spec.top_k)
            s.add_top_p(spec.top_p, 1)
            s.add_temp(spec.temperature)
            s.add_dist(spec.seed)
        return s

    def generate(self, specs: Sequence[SeqSpec]) -> tuple[list[SeqResult], GroupStats]:
        results = [SeqResult() for _ in specs]
        samplers = [self._sampler(s) for s in specs]
        # a greedy chain without a grammar keeps no state and picks the first largest logit,
        # as np.argmax does, in a tenth of the time over a 152k vocabulary
        argmax = [self.greedy_argmax and s.temperature == 0.0 and s.grammar is None
                  for s in specs]
        t0 = time.perf_counter()
        vocab = self.llm._model.vocab
        mem = self._mem()

        def record(i: int, tok: int) -> bool:
            """Sequence i's sampled token, all but its statistics; False at end of text."""
            spec, r = specs[i], results[i]
            kept = not self._lc.llama_vocab_is_eog(vocab, tok)
            if not kept:
                r.finish, r.done = "stop", True
            else:
                r.ids.append(int(tok))
                r.pieces.append(self.llm.detokenize([tok], special=False))
                if spec.stops:
                    text = r.raw.decode("utf-8", errors="ignore")
                    if any(s in text for s in spec.stops):
                        r.finish, r.done = "stop", True
                if not r.done and loop_cut(r.ids, spec.loop_stop) is not None:
                    r.finish, r.done = "loop", True
                if len(r.ids) >= spec.max_tokens:
                    r.done = True
            now = time.perf_counter() - t0
            if len(r.ids) <= 1 and not r.first_s:
                r.first_s = now
            if r.done:
                r.done_s = now
                self._lc.llama_memory_seq_rm(mem, i + 1, -1, -1)
            return kept

        def add_stats(owed: list[tuple[int, int, np.ndarray]]) -> None:
            for i, tok, row in owed:
                lp, ent = logsoftmax_stats(row, tok)
                results[i].logprobs.append(lp)
                results[i].entropies.append(ent)

        def take(rows: Sequence[tuple[int, int]], copy: bool) -> list[tuple[int, int, np.ndarray]]:
            """Sample each (sequence, batch position)'s token from the last batch and record
            it; the statistics are added at once, or returned to add later (``copy``: the
            rows are copied, since the next decode overwrites them)."""
            logits = [self._row(idx) for _, idx in rows]
            toks = [int(np.argmax(row)) if argmax[i] else samplers[i].sample(self.llm._ctx, idx)
                    for (i, idx), row in zip(rows, logits)]
            owed = [(i, tok, np.array(row) if copy else row)
                    for (i, _), row, tok in zip(rows, logits, toks) if record(i, tok)]
            if copy:
                return owed
            add_stats(owed)
            return []

        def body(p: int, stats: GroupStats) -> None:
            prefill = [(i + 1, tok, pos, pos == len(s.tokens) - 1)
                       for i, s in enumerate(specs) for pos, tok in enumerate(s.tokens) if pos >= p]
            stats.prompt_evaluated += len(prefill)
            for chunk in self._packed(prefill, len(specs)):
                self._decode(chunk)
                take([(sid - 1, idx) for idx, (sid, _, _, out) in enumerate(chunk) if out],
                     copy=False)
            owed: list[tuple[int, int, np.ndarray]] = []
            while True:
                live = [i for i, r in enumerate(results) if not r.done]
                if not live:
                    break
                entries = [(i + 1, results[i].ids[-1],
                            len(specs[i].tokens) + len(results[i].ids) - 1, True) for i in live]
                if owed:
                    self._decode_while(entries, lambda: add_stats(owed))
                else:
                    self._decode(entries)
                stats.decode_steps += 1
                owed = take([(i, idx) for idx, i in enumerate(live)], copy=self.overlap)
            add_stats(owed)

        try:
            stats = self._run_group([s.tokens for s in specs], None, body)
        finally:
            for s in samplers:
                s.close()
        return results, stats

    # -- teacher-forced scoring --
    def score(self, pairs: Sequence[tuple[list[int], list[int]]]
              ) -> tuple[list[list[tuple[float, float]]], GroupStats]:
        """(logprob, entropy) of each continuation token after its context."""
        out: list[list[tuple[float, float]]] = [[] for _ in pairs]
        fulls = [c + k for c, k in pairs]

        def body(p: int, stats: GroupStats) -> None:
            # position pos predicts full[pos + 1]; only the continuation's are wanted
            entries = [(i + 1, full[pos], pos, pos >= len(c) - 1)
                       for i, ((c, k), full) in enumerate(zip(pairs, fulls)) if k
                       for pos in range(p, len(full) - 1)]
            stats.prompt_evaluated += len(entries)
            for chunk in self._packed(entries, MAX_OUTPUT_ROWS):
                self._decode(chunk)
                for idx, (sid, _, pos, wanted) in enumerate(chunk):
                    if wanted:
                        out[sid - 1].append(logsoftmax_stats(self._row(idx), fulls[sid - 1][pos + 1]))

        # each context keeps its last token out of the prefix (its logits score the first
        # continuation token), so the prefix never reaches into a continuation
        keep = [len(full) - len(c) + 1 for (c, _), full in zip(pairs, fulls)]
        stats = self._run_group(fulls, keep, body)
        return out, stats
