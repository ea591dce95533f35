"""User settings (model, offload, context, retriever defaults), kept as JSON in the home folder."""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from . import paths
from .config import knob
from .llm.bundled import DEFAULT_MODEL
from .llm.repetition import DEFAULT_LOOP_STOP
from .llm.prefix_store import AUTO, DEFAULT_BUDGET_TOKENS


@dataclass
class Settings:
    backend: str = knob("llama_cpp", "LLM backend", choices=["llama_cpp", "openai_compat"])
    model: str = knob(DEFAULT_MODEL, "Bundled model name or a path to any .gguf file")
    n_gpu_layers: int = knob(0, "Layers offloaded to the GPU (0 = CPU only, -1 = all)", min=-1)
    n_ctx: int = knob(4096, "Context window in tokens", min=256, max=131072)
    n_threads: int = knob(0, "CPU threads (0 = all cores)", min=0, max=256)
    n_batch: int = knob(512, "Prompt batch size (rounded down to a multiple of 32)", min=32, max=8192)
    seed: int = knob(0, "Random seed for sampling", min=0)
    # measured on both kinds of machine (llm/prefix_store.py): on a CPU restored prefixes
    # save most of the prompt time and change no output; on a GPU any cached start changes it
    prefix_cache_tokens: int = knob(
        AUTO, "Tokens of recent prompts kept in RAM (about 28 kB a token for the default "
        "model), so each kind of call evaluates its instructions once; on a CPU the output is "
        f"the same either way (-1 = automatic: {DEFAULT_BUDGET_TOKENS} on a CPU, and every "
        "prompt evaluated whole when layers are offloaded, where anything cached changes the "
        "output; 0 = the previous prompt only; -2 = every prompt evaluated whole)",
        min=-2, max=131072)
    loop_stop: int = knob(
        DEFAULT_LOOP_STOP, "Stop a generation whose last tokens are one block repeated three "
        "times in a row, covering at least this many tokens, and keep the block's first turn "
        "(finish 'loop'); 0 = let it run to its token budget. A JSON output its schema bounds "
        "is let finish. Applies to the runs started "
        "afterwards (docs/performance.md#outputs-caught-in-a-loop)", min=0, max=4096)
    isolate_model: bool = knob(True, "Run the model in a worker process of its own, so a crash "
                               "in native code fails the run instead of the whole workbench")
    server_url: str = knob("http://127.0.0.1:8080/v1", "OpenAI-compatible server base URL")
    server_model: str = knob("", "Model name to request from the server")
    retriever: str = knob("hybrid", "Default passage retriever",
                          choices=["bm25", "dense", "hybrid"])
    k: int = knob(5, "Default number of passages retrieved", min=1, max=50)
    dataset: str = knob("demo", "Active dataset")
    store: str = knob("", "DuckDB file of runs, evals and annotations ('' = workbench.duckdb "
                      "in the home folder; WORKBENCH_STORE overrides)")


def settings_file() -> Path:
    return paths.home() / "settings.json"


def load() -> Settings:
    s = Settings()
    f = settings_file()
    if f.exists():
        try:
            data = json.loads(f.read_text())
        except json.JSONDecodeError:
            data = {}          # a damaged settings file falls back to defaults, never crashes
        names = {fl.name for fl in fields(Settings)}
        s = Settings(**{k: v for k, v in data.items() if k in names})
    # Environment overrides for CI and scripted use.
    if os.environ.get("WORKBENCH_MODEL"):
        s.model = os.environ["WORKBENCH_MODEL"]
    if os.environ.get("WORKBENCH_N_GPU_LAYERS"):
        s.n_gpu_layers = int(os.environ["WORKBENCH_N_GPU_LAYERS"])
    if os.environ.get("WORKBENCH_PREFIX_CACHE_TOKENS"):
        s.prefix_cache_tokens = int(os.environ["WORKBENCH_PREFIX_CACHE_TOKENS"])
    if os.environ.get("WORKBENCH_LOOP_STOP"):
        s.loop_stop = int(os.environ["WORKBENCH_LOOP_STOP"])
    if os.environ.get("WORKBENCH_ISOLATE_MODEL"):
        s.isolate_model = os.environ["WORKBENCH_ISOLATE_MODEL"].strip().lower() not in ("0", "false", "no")
    return s


def save(s: Settings) -> None:
    f = settings_file()
    tmp = f.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(s), indent=2))
    tmp.replace(f)


def store_path() -> Path:
    """``WORKBENCH_STORE``, else the Settings ``store`` field, else the home folder's file."""
    env = os.environ.get("WORKBENCH_STORE")
    if env:
        return Path(env).expanduser()
    chosen = load().store
    return Path(chosen).expanduser() if isinstance(chosen, str) and chosen.strip() \
        else paths.home() / "workbench.duckdb"
