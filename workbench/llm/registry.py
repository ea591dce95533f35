"""Which models are installed, their metadata and SHA-256, and backend construction."""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .. import paths
from . import bundled
from .base import BackendUnavailableError, LLMBackend, ModelFileError
from .gguf import check_model_file, open_model_file, read_header

DEFAULT_MODEL = bundled.DEFAULT_MODEL
BUNDLED = bundled.MODELS


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
    verified: bool | None = None       # bundled: the file matches its pinned SHA-256
    quality: str = ""                  # bundled: measured tier ("good", "fair", "poor")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def resolve(name_or_path: str, verify: bool = True) -> Path:
    """A bundled model name (its file checked against the pinned SHA-256 first), or a path
    to a .gguf file."""
    if name_or_path in BUNDLED:
        m = BUNDLED[name_or_path]
        p = m.locate()
        if p is None:
            raise ModelFileError(
                f"The bundled model {name_or_path!r} is not installed. Run scripts/setup.sh "
                f"or choose a .gguf path.")
        check_model_file(p)
        if verify and sha256_of(p) != m.sha256:
            raise ModelFileError(
                f"{p} does not match the pinned SHA-256 of {name_or_path} ({m.sha256[:16]}…): "
                f"the file is damaged or was replaced; {bundled.REINSTALL}.")
        return p
    p = Path(name_or_path).expanduser()
    if p.suffix.lower() != ".gguf" and not p.exists():
        raise ModelFileError(
            f"{name_or_path!r} is neither a bundled model ({', '.join(BUNDLED)}) nor an existing "
            f"file. Give a bundled name or the path of a .gguf file.")
    # Before anything hashes or loads it: a regular file with the GGUF magic (a device or
    # a FIFO named x.gguf would otherwise be read forever under the load lock).
    return check_model_file(p)


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
    with open_model_file(path) as f:       # refuses devices, FIFOs and non-GGUF files
        f.seek(0)
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    cache[key] = h.hexdigest()
    tmp = cache_f.with_suffix(".tmp")
    tmp.write_text(json.dumps(cache, indent=1))
    tmp.replace(cache_f)
    return cache[key]


def describe(path: Path, name: str | None = None, bundled_model: bool = False, note: str = "",
             with_sha: bool = True) -> ModelEntry:
    h = read_header(path)
    e = ModelEntry(name=name or path.stem, path=str(path), size_bytes=h.file_size,
                   quantization=h.quantization, context_length=h.context_length,
                   architecture=h.architecture, chat_template=h.has_chat_template,
                   sha256=sha256_of(path) if with_sha else "", bundled=bundled_model, note=note)
    m = BUNDLED.get(name or "")
    if bundled_model and m is not None:
        e.quality = m.quality
        e.verified = (e.sha256 == m.sha256) if with_sha else None
    return e


def list_models(with_sha: bool = True) -> list[ModelEntry]:
    out = []
    for name, m in BUNDLED.items():
        try:
            p = m.locate()
        except ModelFileError as err:
            out.append(ModelEntry(name, "", 0, "?", None, "?", False, "", True,
                                  note=f"unusable: {err}", verified=False, quality=m.quality))
            continue
        if p is not None:
            out.append(describe(p, name, True, m.title, with_sha))
    for p in sorted(paths.sub("models").glob("*.gguf")):
        if not any(Path(e.path) == p for e in out):
            try:
                out.append(describe(p, with_sha=with_sha))
            except ModelFileError as e:
                out.append(ModelEntry(p.stem, str(p), p.stat().st_size, "?", None, "?", False, "",
                                      False, note=f"unusable: {e}"))
    return out


_BACKENDS: dict[tuple, LLMBackend] = {}


def load_backend(settings: Any | None = None, *, shared: bool = True,
                 **overrides: Any) -> LLMBackend:
    """Build the backend the settings name: once per process and configuration, or a
    backend of its own with ``shared=False`` (parallel eval workers each need one)."""
    from .. import settings as settings_mod
    s = settings or settings_mod.load()
    opts = {"backend": s.backend, "model": s.model, "n_gpu_layers": s.n_gpu_layers,
            "n_ctx": s.n_ctx, "n_threads": s.n_threads, "n_batch": s.n_batch, "seed": s.seed,
            "server_url": s.server_url, "server_model": s.server_model,
            "isolate_model": s.isolate_model,
            "prefix_cache_tokens": getattr(s, "prefix_cache_tokens", None)}
    opts.update({k: v for k, v in overrides.items() if v is not None})
    key = tuple(sorted(opts.items()))
    if shared and key in _BACKENDS:
        return _BACKENDS[key]
    if opts["backend"] == "openai_compat":
        from ..host_policy import PolicyError, check_server_url
        from .openai_compat import OpenAICompatBackend
        try:
            url = check_server_url(opts["server_url"])   # the host's allow-list, if it set one
        except PolicyError as e:
            raise BackendUnavailableError(str(e)) from None
        be: LLMBackend = OpenAICompatBackend(url, opts["server_model"] or opts["model"])
    else:
        path = resolve(opts["model"])
        kw = dict(n_gpu_layers=opts["n_gpu_layers"], n_ctx=opts["n_ctx"],
                  n_threads=opts["n_threads"] or None, n_batch=opts["n_batch"],
                  seed=opts["seed"], sha256=sha256_of(path))
        if opts["prefix_cache_tokens"] is not None:
            kw["prefix_cache_tokens"] = opts["prefix_cache_tokens"]
        name = opts["model"] if opts["model"] in BUNDLED else None
        if opts["isolate_model"]:
            from .isolated import IsolatedBackend
            be = IsolatedBackend(path, name=name, **kw)
        else:
            from .llama_cpp_backend import LlamaCppBackend
            be = LlamaCppBackend(path, **kw)
            if name:
                be.info.name = name
    if shared:
        _BACKENDS[key] = be
    return be
