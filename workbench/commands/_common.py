"""Options shared by commands that load a model."""
from __future__ import annotations

import argparse

from .. import settings as settings_mod
from ..llm.registry import load_backend


def add_model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument("--model", help="bundled model name or path to a .gguf file")
    g.add_argument("--backend", choices=["llama_cpp", "openai_compat"])
    g.add_argument("--server-url", help="OpenAI-compatible server base URL")
    g.add_argument("--n-gpu-layers", type=int, help="layers on the GPU (0 CPU, -1 all)")
    g.add_argument("--n-ctx", type=int, help="context window in tokens")
    g.add_argument("--threads", type=int, dest="n_threads")


def backend_from_args(args: argparse.Namespace):
    s = settings_mod.load()
    return load_backend(s, backend=args.backend, model=args.model, server_url=args.server_url,
                        n_gpu_layers=args.n_gpu_layers, n_ctx=args.n_ctx, n_threads=args.n_threads)
