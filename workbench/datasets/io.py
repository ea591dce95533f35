"""Reading dataset files record by record, with file:line locations for every problem.

``iter_records(path, problems)`` yields ``(location, record)`` from ``.jsonl``,
``.json`` (a list, or an object holding one under ``data``), or ``.parquet``, any of
them optionally ``.bz2``/``.gz``/``.xz``-compressed. A malformed record is reported to
:class:`Problems`, which either stops the import (``on_error="stop"``, the default) by
raising :class:`ImportProblem`, or counts it and goes on (``"skip"``).
"""
from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
from pathlib import Path
from typing import IO, Any, Iterator

ON_ERROR = ("stop", "skip")


class ImportProblem(ValueError):
    """A problem in an input file that stops the import; the message names file and line."""


class BadRecord(Exception):
    """Raised by record parsers for a record that lacks or garbles a needed field."""


class Problems:
    def __init__(self, on_error: str = "stop", *, keep: int = 50, echo: Any = None):
        if on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {ON_ERROR}, not {on_error!r}")
        self.on_error = on_error
        self.count = 0
        self.messages: list[str] = []
        self.keep = keep
        self.echo = echo          # callable(str) for live reporting (the CLI prints to stderr)

    def report(self, path: str | Path, loc: str, what: str) -> None:
        msg = f"{path}:{loc}: {what}"
        if self.on_error == "stop":
            raise ImportProblem(msg + "  (nothing was written; --on-error skip skips bad "
                                      "records)")
        self.count += 1
        if len(self.messages) < self.keep:
            self.messages.append(msg)
        if self.echo is not None and self.count <= 20:
            self.echo(f"skipped {msg}")

    def summary(self) -> dict[str, Any]:
        return {"skipped": self.count, "problems": list(self.messages)}


def open_text(path: str | Path) -> IO[str]:
    p = str(path)
    if p.endswith(".bz2"):
        return bz2.open(p, "rt", encoding="utf-8")
    if p.endswith(".gz"):
        return gzip.open(p, "rt", encoding="utf-8")
    if p.endswith(".xz"):
        return lzma.open(p, "rt", encoding="utf-8")
    return open(p, encoding="utf-8")


def base_suffix(path: str | Path) -> str:
    """``.jsonl`` for ``x.jsonl.bz2``."""
    sfx = [s.lower() for s in Path(path).suffixes]
    while sfx and sfx[-1] in (".bz2", ".gz", ".xz"):
        sfx.pop()
    return sfx[-1] if sfx else ""


def iter_records(path: str | Path, problems: Problems, *, key: str | None = None
                 ) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(location, record)`` for each record; locations read ``line N`` or ``row N``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    kind = base_suffix(path)
    if kind == ".parquet":
        yield from _iter_parquet(path, problems)
        return
    if kind == ".json":
        yield from _iter_json(path, problems, key=key)
        return
    yield from _iter_jsonl(path, problems)


def _iter_jsonl(path: Path, problems: Problems) -> Iterator[tuple[str, dict[str, Any]]]:
    try:
        with open_text(path) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    problems.report(path, f"{n}", f"not valid JSON ({e.msg} at column {e.colno})")
                    continue
                if not isinstance(rec, dict):
                    problems.report(path, f"{n}", f"expected a JSON object, got "
                                                  f"{type(rec).__name__}")
                    continue
                yield f"{n}", rec
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise ImportProblem(f"{path}: cannot read the file ({e})") from e


def _iter_json(path: Path, problems: Problems, key: str | None
               ) -> Iterator[tuple[str, dict[str, Any]]]:
    """A JSON array read item by item, so each item has its line number."""
    try:
        with open_text(path) as f:
            text = f.read()
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise ImportProblem(f"{path}: cannot read the file ({e})") from e
    dec = json.JSONDecoder()
    pos = _skip_ws(text, 0)
    if pos < len(text) and text[pos] == "{":
        # an object: either {"data": [...]} / {key: [...]}, or a single record
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise ImportProblem(f"{path}:{e.lineno}: not valid JSON ({e.msg} at column "
                                f"{e.colno}); a .json file must parse whole") from e
        for k in ([key] if key else []) + ["data", "questions", "items"]:
            if isinstance(obj.get(k), list):
                for i, rec in enumerate(obj[k]):
                    if isinstance(rec, dict):
                        yield f"item {i}", rec
                    else:
                        problems.report(path, f"item {i}", "expected a JSON object")
                return
        yield "1", obj
        return
    if pos >= len(text) or text[pos] != "[":
        raise ImportProblem(f"{path}:1: expected a JSON array of records")
    pos += 1
    line = 1 + text.count("\n", 0, pos)
    last = pos
    i = 0
    while True:
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == "]":
            return
        line += text.count("\n", last, pos)
        last = pos
        try:
            rec, end = dec.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise ImportProblem(f"{path}:{e.lineno}: not valid JSON ({e.msg} at column "
                                f"{e.colno}); a .json file must parse whole, so the import "
                                f"stops") from e
        if isinstance(rec, dict):
            yield f"{line}", rec
        else:
            problems.report(path, f"{line}", f"item {i}: expected a JSON object, got "
                                             f"{type(rec).__name__}")
        i += 1
        pos = _skip_ws(text, end)
        if pos < len(text) and text[pos] == ",":
            pos += 1
        elif pos < len(text) and text[pos] == "]":
            return
        else:
            ln = 1 + text.count("\n", 0, pos)
            raise ImportProblem(f"{path}:{ln}: not valid JSON (expected ',' or ']' after item "
                                f"{i - 1}); a .json file must parse whole, so the import stops")


def _skip_ws(text: str, pos: int) -> int:
    n = len(text)
    while pos < n and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _iter_parquet(path: Path, problems: Problems) -> Iterator[tuple[str, dict[str, Any]]]:
    import pyarrow.parquet as pq
    try:
        pf = pq.ParquetFile(path)
    except Exception as e:  # pyarrow raises several types for a damaged file
        raise ImportProblem(f"{path}: not a readable parquet file ({e})") from e
    row = 0
    for batch in pf.iter_batches(batch_size=1024):
        for rec in batch.to_pylist():
            row += 1
            yield f"row {row}", rec


def write_jsonl(path: Path, records: Any) -> int:
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False))
            f.write("\n")
            n += 1
    return n


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}:{n}: not valid JSON ({e.msg}); the dataset file "
                                     f"is damaged - re-import it") from e


__all__ = ["ImportProblem", "BadRecord", "Problems", "iter_records", "open_text", "io"]
