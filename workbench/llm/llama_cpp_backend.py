"""A local GGUF model through llama-cpp-python, with per-token logprobs.

Logprobs are read straight from the context's logits of the position that
produced each token (one vectorised log-softmax per token) instead of
llama-cpp-python's ``logprobs=`` path, which sorts the whole vocabulary per
token and runs 5x-29x slower. ``Llama.generate`` keeps the KV cache of the
longest common prefix with the previous call, and the prefix store
(``prefix_store.py``) keeps copies of recent prompts' KV cells, so a call only
evaluates what follows the longest prefix it shares with any of them: the
instructions and demonstrations of each kind of call are evaluated once, however
the kinds interleave, and the output is what evaluating the whole prompt gives.

``generate_many``/``score_many`` run several requests as sequences of one
llama.cpp batch in the same context (``batch_engine.py``), sharing that cache.
"""
from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from . import batching
from .base import (Completion, ContextOverflowError, GenParams, GenRequest, GrammarError,
                   LLMError, Message, ModelFileError, ModelInfo, ScoredText, ScoreRequest, Token,
                   messages_to_plain)
from .batch_engine import (BatchEngine, SeqSpec, cells_needed, enable_sequences, logits_row,
                           plan_groups)
from .batch_engine import logsoftmax_stats as _logsoftmax_stats
from .gguf import read_header
from .grammar_sampler import DEFAULT_CANDIDATES, CandidateGrammarSampler
from .prefix_store import ALIGN, DEFAULT_SLOTS, PrefixStore, cache_plan
from .repetition import loop_cut


@dataclass
class _Prepared:
    """A request rendered, tokenized and checked, ready to run alone or in a group."""
    prompt: str
    stops: list[str]
    toks: list[int]
    params: GenParams
    grammar: Any


def _llama_class(llama_cpp: Any) -> type:
    class _Llama(llama_cpp.Llama):
        """``Llama`` whose ``generate`` can be handed a ready sampler: ``next_sampler`` is
        used, once, instead of the chain ``generate`` would build."""
        next_sampler: Any = None

        def _init_sampler(self, *args: Any, **kwargs: Any) -> Any:
            s, self.next_sampler = self.next_sampler, None
            return s if s is not None else super()._init_sampler(*args, **kwargs)

        def eval(self, tokens: Sequence[int]) -> None:
            # batches end at multiples of n_batch counted from position 0, where evaluating
            # the whole prompt ends them, whatever was cached before (prefix_store.py)
            first = min(len(tokens), self.n_batch - self.n_tokens % self.n_batch)
            super().eval(tokens[:first])
            if len(tokens) > first:
                super().eval(tokens[first:])

    return _Llama


class LlamaCppBackend:
    def __init__(self, model_path: str | Path, *, n_gpu_layers: int = 0, n_ctx: int = 4096,
                 n_threads: int | None = None, n_batch: int = 512, seed: int = 0,
                 chat_format: str | None = None, sha256: str = "", verbose: bool = False,
                 max_batch: int = batching.DEFAULT_MAX_BATCH, overlap: bool | None = None,
                 grammar_candidates: int = DEFAULT_CANDIDATES,
                 prefix_cache_tokens: int | None = None,
                 prefix_cache_slots: int = DEFAULT_SLOTS):
        path = Path(model_path)
        header = read_header(path)          # clear messages for missing/truncated/non-GGUF files
        try:
            import llama_cpp
        except ImportError as e:  # pragma: no cover - install problem
            raise LLMError("llama-cpp-python is not installed; run scripts/setup.sh") from e
        self._llama_cpp = llama_cpp
        try:
            self.llm = _llama_class(llama_cpp)(
                model_path=str(path), n_gpu_layers=n_gpu_layers, n_ctx=n_ctx,
                # batches (prompts, several sequences) get the same threads as single tokens:
                # Llama would give them every CPU, whatever n_threads says
                n_threads=n_threads or os.cpu_count(), n_threads_batch=n_threads or os.cpu_count(),
                # batches start at multiples of ALIGN, as cached prefixes end (prefix_store.py)
                n_batch=max(ALIGN, n_batch // ALIGN * ALIGN), seed=seed, logits_all=False,
                verbose=verbose)
        except (ValueError, RuntimeError) as e:
            raise ModelFileError(
                f"llama.cpp could not load {path}: {e}. The file may be corrupt or use an "
                f"architecture this llama-cpp-python does not support; try another GGUF file "
                f"or upgrade llama-cpp-python.") from e
        # sequence 0 is Llama's own; 1..max_batch are generate_many's (see batch_engine.py)
        engine_seqs = max_batch if max_batch > 1 else 0
        why_not = self._prefix_cache_unsupported()
        gpu_build = bool(llama_cpp.llama_supports_gpu_offload())
        # a CPU-only build ignores n_gpu_layers: nothing is offloaded there
        offloaded = n_gpu_layers != 0 and gpu_build
        budget, reuse = cache_plan(prefix_cache_tokens, offloaded)
        budget = budget if not why_not else 0
        slots = max(0, int(prefix_cache_slots)) if budget else 0
        budget = budget if slots else 0
        if engine_seqs:
            enable_sequences(self.llm, 1 + engine_seqs)
        self._store = PrefixStore(self.llm, slots, budget, reuse=reuse)
        self._engine: BatchEngine | None = None
        if engine_seqs:
            # statistics beside the next decode (batch_engine.py): by default where a GPU
            # decodes; on a CPU the two would share the cores (see benchmarks/batched_decode.py)
            self._engine = BatchEngine(self.llm, self._store, overlap=offloaded
                                       if overlap is None else overlap, max_seqs=engine_seqs)
        self.max_batch = max(1, max_batch)
        # grammar checks on the likeliest tokens first (grammar_sampler.py); 0 = llama.cpp's
        # check of the whole vocabulary at every step
        self.grammar_candidates = grammar_candidates
        if self._engine is not None:
            self._engine.grammar_sampler = self._grammar_sampler
        self.n_ctx = self.llm.n_ctx()
        self.n_vocab = self.llm.n_vocab()
        self._vocab = self.llm._model.vocab
        self._lock = threading.Lock()       # one llama context: calls are serialised
        self._formatter = None
        tmpl = self.llm.metadata.get("tokenizer.chat_template")
        if tmpl and chat_format is None:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
            eos = self.llm._model.token_get_text(self.llm.token_eos())
            bos = self.llm._model.token_get_text(self.llm.token_bos()) if self.llm.token_bos() >= 0 else ""
            self._formatter = Jinja2ChatFormatter(template=tmpl, eos_token=eos, bos_token=bos,
                                                  stop_token_ids=[self.llm.token_eos()])
        self.info = ModelInfo(
            name=header.name, path=str(path), backend="llama_cpp",
            quantization=header.quantization, n_ctx_train=header.context_length, n_ctx=self.n_ctx,
            size_bytes=header.file_size, sha256=sha256, n_gpu_layers=n_gpu_layers,
            chat_template=self._formatter is not None,
            extra={"architecture": header.architecture, "n_vocab": self.n_vocab,
                   "gpu_offload_supported": gpu_build,
                   "prefix_cache": {"budget_tokens": budget, "slots": slots,
                                    "reuse": reuse,
                                    **({"off": why_not} if why_not else {})}})

    def _prefix_cache_unsupported(self) -> str:
        """Why kept prefixes cannot work with this model ('' when they can)."""
        model = self.llm._model.model
        lc = self._llama_cpp
        if lc.llama_model_is_recurrent(model) or lc.llama_model_is_hybrid(model):
            return "a recurrent model's state cannot be cut at a position"
        if lc.llama_model_n_swa(model) > 0:
            # a sliding-window cache drops a sequence's cells outside the window as it
            # advances, so a kept prompt could not be extended from its start
            return "sliding-window attention"
        return ""

    @property
    def prefix_store(self) -> PrefixStore | None:
        """The kept prompts, or None where none are kept (budget 0)."""
        return self._store if self._store.enabled else None

    # -- prompt rendering --
    def render(self, messages: Sequence[Message] | str, chat: bool = True) -> tuple[str, list[str]]:
        if isinstance(messages, str):
            return messages, []
        if chat and self._formatter is not None:
            r = self._formatter(messages=list(messages))
            stops = r.stop if isinstance(r.stop, list) else ([r.stop] if r.stop else [])
            return r.prompt, stops
        return messages_to_plain(messages), []

    def tokenize(self, text: str) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)

    def count_tokens(self, text: str) -> int:
        return len(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def _grammar(self, params: GenParams):
        from llama_cpp import LlamaGrammar
        try:
            if params.json_schema is not None:
                g = LlamaGrammar.from_json_schema(json.dumps(params.json_schema), verbose=False)
            elif params.grammar:
                g = LlamaGrammar.from_string(params.grammar, verbose=False)
            else:
                return None
        except (ValueError, RuntimeError) as e:
            raise GrammarError(f"the JSON schema could not be turned into a grammar: {e}. Check "
                               f"that it is a valid JSON schema.") from e
        # llama.cpp returns NULL for a grammar it cannot parse, and adding NULL to a sampler
        # chain crashes the process, so parse it once here and fail with a message instead.
        probe = self._llama_cpp.llama_sampler_init_grammar(
            self._vocab, g._grammar.encode("utf-8"), g._root.encode("utf-8"))
        if not probe:
            raise GrammarError(
                "llama.cpp could not parse the grammar (GBNF); check its syntax against "
                "llama.cpp's grammars/README.md. First line: " + g._grammar.splitlines()[0][:120])
        self._llama_cpp.llama_sampler_free(probe)
        return g

    def _grammar_sampler(self, grammar: Any, temperature: float, top_k: int, top_p: float,
                         seed: int) -> CandidateGrammarSampler | None:
        if grammar is None or self.grammar_candidates <= 0:
            return None
        return CandidateGrammarSampler(self._vocab, grammar, self.n_vocab,
                                       temperature=temperature, top_k=top_k, top_p=top_p,
                                       seed=seed, n_candidates=self.grammar_candidates)

    def _logits(self) -> np.ndarray:
        return logits_row(self.llm._ctx.ctx, -1, self.n_vocab)

    def _piece(self, tok: int) -> bytes:
        return self.llm.detokenize([tok], special=False)

    def _is_eog(self, tok: int) -> bool:
        return bool(self._llama_cpp.llama_vocab_is_eog(self._vocab, tok))

    # -- generation --
    def _prepare(self, messages: Sequence[Message] | str, params: GenParams,
                 request: int | None = None) -> _Prepared:
        prompt, tmpl_stops = self.render(messages, params.chat)
        stops = [s for s in list(params.stop) + tmpl_stops if s]
        toks = self.tokenize(prompt)
        if len(toks) + params.max_tokens > self.n_ctx:
            raise ContextOverflowError(len(toks), params.max_tokens, self.n_ctx, request)
        try:
            grammar = self._grammar(params)
        except GrammarError as e:
            if request is None:
                raise
            raise GrammarError(f"Request {request} of the batch: {e}") from e
        return _Prepared(prompt, stops, toks, params, grammar)

    def generate(self, messages: Sequence[Message] | str, params: GenParams | None = None,
                 on_token: Callable[[Token], None] | None = None) -> Completion:
        return self._generate_one(self._prepare(messages, params or GenParams()), on_token)

    def _generate_one(self, prep: _Prepared,
                      on_token: Callable[[Token], None] | None = None) -> Completion:
        params, toks, stops = prep.params, prep.toks, prep.stops
        loop_stop = params.loop_tokens()
        with self._lock:
            if params.seed is not None:
                self.llm.set_seed(int(params.seed))
            t0 = time.perf_counter()
            cached, source = self._store.restore(toks, len(toks) - 1)
            fast = self._grammar_sampler(prep.grammar, params.temperature, params.top_k,
                                         params.top_p, self.llm._seed)
            self.llm.next_sampler = fast
            out: list[Token] = []
            ids: list[int] = []
            raw = bytearray()
            finish = "length"
            t_first = None
            gen = self.llm.generate(toks, top_k=params.top_k, top_p=params.top_p,
                                    min_p=0.0 if params.temperature > 0 else 0.05,
                                    temp=params.temperature, repeat_penalty=1.0, reset=True,
                                    grammar=None if fast is not None else prep.grammar)
            try:
                for tok in gen:
                    if t_first is None:
                        t_first = time.perf_counter()
                    if self._is_eog(tok):
                        finish = "stop"
                        break
                    lp, ent = _logsoftmax_stats(self._logits(), tok)
                    piece = self._piece(tok)
                    raw += piece
                    out.append(Token(int(tok), piece.decode("utf-8", errors="replace"), lp, ent))
                    ids.append(int(tok))
                    if on_token is not None:
                        on_token(out[-1])
                    text = raw.decode("utf-8", errors="ignore")
                    if stops and any(s in text for s in stops):
                        finish = "stop"
                        break
                    if loop_cut(ids, loop_stop) is not None:
                        finish = "loop"
                        break
                    if len(out) >= params.max_tokens:
                        break
            finally:
                gen.close()
                self.llm.next_sampler = None
                if fast is not None:
                    fast.close()
                self._store.settle(toks)    # also after a stop: its output is never reused
            t1 = time.perf_counter()
        return self._completion(prep, out, bytes(raw), finish, (t1 - t0) * 1000.0,
                                ((t_first or t1) - t0) * 1000.0, cached, source)

    def _completion(self, prep: _Prepared, out: list[Token], raw: bytes, finish: str,
                    latency_ms: float, prompt_eval_ms: float, cached: int,
                    cache: str) -> Completion:
        if finish == "loop":
            keep = loop_cut([t.id for t in out], prep.params.loop_tokens()) or len(out)
            raw = raw[:sum(len(self._piece(t.id)) for t in out[:keep])]
            out = out[:keep]
        text = raw.decode("utf-8", errors="replace")
        if prep.stops:
            cut = min((text.index(s) for s in prep.stops if s in text), default=None)
            if cut is not None:
                text = text[:cut]
                out = _trim_tokens(out, len(text.encode("utf-8")))
        if prep.grammar is not None and finish == "length":
            finish = "grammar_incomplete"
        return Completion(
            text=text, tokens=out, prompt=prep.prompt, prompt_tokens=len(prep.toks),
            completion_tokens=len(out), latency_ms=latency_ms, finish_reason=finish,
            model=self.info.name, params=prep.params.to_dict(),
            prompt_eval_ms=prompt_eval_ms, cached_prompt_tokens=cached, cache=cache)

    def generate_many(self, requests: Sequence[GenRequest], *, max_batch: int | None = None,
                      plan: Sequence[Sequence[int]] | None = None) -> list[Completion]:
        """Several requests as sequences of shared llama.cpp batches (``batch_engine.py``).

        Every request is checked (context, grammar) before any runs. Groups of one run as a
        plain :meth:`generate`, so ``max_batch=1`` gives exactly the unbatched results.
        """
        preps = [self._prepare(r.messages, r.params, i)
                 for i, r in enumerate(requests)]
        groups = self._plan([p.toks for p in preps], [p.params.max_tokens for p in preps],
                            max_batch, plan)
        return batching.run_plan(preps, groups, "llama_cpp", self._generate_group)

    def _plan(self, token_lists: list[list[int]], extra: list[int], max_batch: int | None,
              plan: Sequence[Sequence[int]] | None, keep: list[int] | None = None
              ) -> list[list[int]]:
        size = min(max_batch or self.max_batch, self.max_batch)
        if plan is None:
            return plan_groups(token_lists, extra, size, self.n_ctx, keep)
        groups = batching.check_plan(plan, len(token_lists))
        for g in groups:
            if len(g) > self.max_batch:
                raise LLMError(f"The batch plan has a group of {len(g)} requests, but this model "
                               f"was loaded for at most {self.max_batch} together; load it with "
                               f"max_batch >= {len(g)} or re-plan.")
            cells = cells_needed([token_lists[i] for i in g], [extra[i] for i in g],
                                 [keep[i] for i in g] if keep else None)
            if len(g) > 1 and cells > self.n_ctx:
                raise LLMError(f"The batch plan's group {g} needs more KV cells than n_ctx "
                               f"({self.n_ctx}); raise n_ctx to re-run this plan.")
        return groups

    def _generate_group(self, preps: list[_Prepared]) -> list[Completion]:
        if len(preps) == 1:
            c = self._generate_one(preps[0])
            c.batch = {"mode": "single", "shared_prefix_tokens": c.cached_prompt_tokens}
            return [c]
        specs = [SeqSpec(p.toks, p.params.max_tokens, p.params.temperature, p.params.top_k,
                         p.params.top_p, self.llm._seed if p.params.seed is None else int(p.params.seed),
                         p.grammar, p.stops, p.params.loop_tokens()) for p in preps]
        with self._lock:
            results, stats = self._engine.generate(specs)
        comps = []
        for prep, r in zip(preps, results):
            out = [Token(i, b.decode("utf-8", errors="replace"), lp, ent)
                   for i, b, lp, ent in zip(r.ids, r.pieces, r.logprobs, r.entropies)]
            # the group's shared prefix is not evaluated for this request: from a cache
            # ("previous"/"prefix") or, past what a cache held, once for the whole group
            c = self._completion(prep, out, r.raw, r.finish, r.done_s * 1000.0,
                                 r.first_s * 1000.0, stats.prefix_tokens,
                                 stats.prefix_source if stats.prefix_cached else
                                 "batch" if stats.prefix_tokens else "none")
            c.batch = {"shared_prefix_tokens": stats.prefix_tokens,
                       "prefix_from_cache": stats.prefix_cached,
                       "prefix_cache": stats.prefix_source,
                       "prompt_tokens_evaluated": stats.prompt_evaluated,
                       "decode_steps": stats.decode_steps}
            comps.append(c)
        return comps

    def score(self, context: Sequence[Message] | str, continuation: str) -> ScoredText:
        """Teacher-forced logprobs of ``continuation`` after ``context``.

        The continuation is fed one token at a time after the (cached) context,
        reading the logits that predicted each token; this avoids the
        off-by-one of echo=True prompt logprobs for models without BOS.
        """
        prompt, _ = self.render(context, True)
        ctx_toks = self.tokenize(prompt)
        cont = self.llm.tokenize(continuation.encode("utf-8"), add_bos=False, special=False)
        if len(ctx_toks) + len(cont) > self.n_ctx:
            raise ContextOverflowError(len(ctx_toks), len(cont), self.n_ctx)
        with self._lock:
            t0 = time.perf_counter()
            # re-evaluate at least one token for fresh logits
            pre, _ = self._store.restore(ctx_toks, len(ctx_toks) - 1)
            out = []
            try:
                self.llm.eval(ctx_toks[pre:])
                for tok in cont:
                    lp, ent = _logsoftmax_stats(self._logits(), tok)
                    out.append(Token(tok, self._piece(tok).decode("utf-8", errors="replace"),
                                     lp, ent))
                    self.llm.eval([tok])
            finally:
                self._store.settle(ctx_toks)    # the continuation's cells are never reused
            t1 = time.perf_counter()
        return ScoredText(prompt, continuation, out, (t1 - t0) * 1000.0)

    def score_many(self, requests: Sequence[ScoreRequest], *, max_batch: int | None = None,
                   plan: Sequence[Sequence[int]] | None = None) -> list[ScoredText]:
        """:meth:`score` of each request; groups of several share one batch per chunk."""
        items = []
        for i, r in enumerate(requests):
            prompt, _ = self.render(r.context, True)
            ctx_toks = self.tokenize(prompt)
            cont = self.llm.tokenize(r.continuation.encode("utf-8"), add_bos=False, special=False)
            if len(ctx_toks) + len(cont) > self.n_ctx:
                raise ContextOverflowError(len(ctx_toks), len(cont), self.n_ctx, i)
            items.append((r, prompt, ctx_toks, cont))
        fulls = [c + k for _, _, c, k in items]
        keep = [len(k) + 1 for *_, k in items]
        groups = self._plan(fulls, [0] * len(items), max_batch, plan, keep)
        return batching.run_plan(items, groups, "llama_cpp", self._score_group)

    def _score_group(self, items: list[tuple]) -> list[ScoredText]:
        if len(items) == 1:
            r = items[0][0]
            sc = self.score(r.context, r.continuation)
            sc.batch = {"mode": "single"}
            return [sc]
        with self._lock:
            t0 = time.perf_counter()
            stats_per, stats = self._engine.score([(c, k) for _, _, c, k in items])
            ms = (time.perf_counter() - t0) * 1000.0
        out = []
        for (r, prompt, _, cont), st in zip(items, stats_per):
            toks = [Token(t, self._piece(t).decode("utf-8", errors="replace"), lp, ent)
                    for t, (lp, ent) in zip(cont, st)]
            out.append(ScoredText(prompt, r.continuation, toks, ms,
                                  batch={"shared_prefix_tokens": stats.prefix_tokens,
                                         "prefix_from_cache": stats.prefix_cached,
                                         "prompt_tokens_evaluated": stats.prompt_evaluated}))
        return out

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
        self.llm.close()


def _trim_tokens(tokens: list[Token], n_bytes: int) -> list[Token]:
    kept, used = [], 0
    for t in tokens:
        b = len(t.piece.encode("utf-8"))
        if used + b > n_bytes and used >= n_bytes:
            break
        kept.append(t)
        used += b
    return kept
