"""Options shared by commands that load a model."""
from __future__ import annotations

import argparse
import math
from typing import Callable

from .. import settings as settings_mod
from ..config import ConfigError, coerce, knobs, range_text
from ..llm.registry import load_backend


def number(kind: type, lo: float | None = None, hi: float | None = None) -> Callable[[str], float]:
    """An argparse type: a finite ``kind`` (int or float) in [lo, hi]. A negative --limit
    would otherwise act as a Python slice index, and NaN passes every comparison."""
    what = "an integer" if kind is int else "a number"

    def parse(text: str) -> float:
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not math.isfinite(v) or (lo is not None and v < lo) or (hi is not None and v > hi):
            raise argparse.ArgumentTypeError(f"{text} is out of range; give {what} in "
                                             f"{range_text(lo, hi)}")
        return v
    parse.__name__ = kind.__name__      # argparse names the type in its messages
    return parse


def settings_knob(name: str) -> Callable[[str], object]:
    """An argparse type checked against the Settings knob ``name`` (its type and range), so
    the CLI and the Settings page refuse the same values."""
    spec = next(k for k in knobs(settings_mod.Settings) if k.name == name)

    def parse(text: str) -> object:
        try:
            return coerce(spec, text)
        except ConfigError as e:
            raise argparse.ArgumentTypeError(f"{e} (valid: {range_text(spec.min, spec.max)})") \
                from None
    parse.__name__ = spec.type
    return parse


def add_model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument("--model", help="bundled model name or path to a .gguf file")
    g.add_argument("--backend", choices=["llama_cpp", "openai_compat"])
    g.add_argument("--server-url", help="OpenAI-compatible server base URL")
    g.add_argument("--n-gpu-layers", type=settings_knob("n_gpu_layers"),
                   help="layers on the GPU (0 CPU, -1 all)")
    g.add_argument("--n-ctx", type=settings_knob("n_ctx"), help="context window in tokens")
    g.add_argument("--threads", type=settings_knob("n_threads"), dest="n_threads",
                   help="CPU threads (0 = all cores)")
    g.add_argument("--prefix-cache-tokens", type=settings_knob("prefix_cache_tokens"),
                   help="tokens of recent prompts kept in RAM (-1 = automatic: on a CPU only; "
                        "0 = the previous prompt only)")


def backend_from_args(args: argparse.Namespace):
    s = settings_mod.load()
    return load_backend(s, backend=args.backend, model=args.model, server_url=args.server_url,
                        n_gpu_layers=args.n_gpu_layers, n_ctx=args.n_ctx, n_threads=args.n_threads,
                        prefix_cache_tokens=args.prefix_cache_tokens)
