"""Importers: public QA / claim datasets -> questions with gold fields + corpus and/or KG.

Each importer is ``fn(path, problems, **opts) -> Imported``. They never write anything;
:func:`workbench.datasets.import_dataset` stores the result atomically.

Kinds and the layouts they read (``.bz2``/``.gz``/``.xz`` compression is fine anywhere):

- ``hotpotqa``: the distractor or fullwiki JSON (a list of ``_id, question, answer, type,
  level, supporting_facts, context``); ``PATH`` may be a folder with ``questions.json``
  and optional ``corpus.json`` (``{title: [sentences]}``), or give ``corpus=``. The
  Hugging Face layout (``context = {title: [...], sentences: [...]}``) works too.
- ``2wiki``: 2WikiMultiHopQA (``dev.json``): as HotpotQA plus ``evidences`` (gold triples,
  kept as ``gold_path``; ``evidence_kg=True`` also builds a KG from them).
- ``musique``: MuSiQue ``.jsonl`` with ``paragraphs`` and the gold ``question_decomposition``.
- ``crag``: CRAG ``.jsonl``/``.jsonl.bz2``; each search result's raw HTML becomes clean text,
  chunked (``chunk_words``, ``chunk_overlap``); keeps domain, question_type,
  static_or_dynamic, query_time.
- ``webqsp`` / ``cwq``: the RoG layout (``id, question, answer, q_entity, a_entity, graph``)
  as ``.jsonl``, ``.json`` or ``.parquet`` (a file or a folder of them); the per-question
  ``graph`` triples are merged into one KG.
- ``fever``: FEVER-style claims (``claim, label, evidence`` or HoVer's
  ``supporting_facts``); optional ``corpus=`` wiki-pages ``.jsonl`` file or folder.
- ``jsonl``: generic; a questions ``.jsonl``, or a folder laid out like ``data/demo``
  (``questions.jsonl``, ``passages.jsonl``, ``entities.jsonl``, ``triples.jsonl``).
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from ..knowledge.text import chunk_text, html_to_text, html_title
from . import splits
from .base import Entity, Passage, Question, Triple
from .io import BadRecord, ImportProblem, Problems, base_suffix, iter_records


@dataclass
class Imported:
    questions: list[Question] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    triples: list[Triple] | None = None
    entities: list[Entity] | None = None
    kg: Any = None                       # a KnowledgeGraph built directly (large graphs)
    info: dict[str, Any] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- shared helpers

def _progress(it: Iterable, enabled: bool, desc: str) -> Iterable:
    if not enabled:
        return it
    from tqdm.auto import tqdm
    return tqdm(it, desc=desc, unit="rec")


class PassagePool:
    """Deduplicates passages by (title, text); ids are the title, or ``title #n``."""

    def __init__(self) -> None:
        self.passages: list[Passage] = []
        self._by_content: dict[str, str] = {}
        self._title_count: dict[str, int] = {}

    def add(self, title: str, text: str, meta: dict[str, Any] | None = None,
            pid: str | None = None) -> str:
        key = hashlib.sha1(f"{title}\x00{text}".encode("utf-8", "surrogatepass")).hexdigest()
        got = self._by_content.get(key)
        if got is not None:
            return got
        if pid is None:
            c = self._title_count.get(title, 0) + 1
            self._title_count[title] = c
            pid = title if c == 1 and title else f"{title or 'passage'} #{c}"
        self._by_content[key] = pid
        self.passages.append(Passage(id=pid, title=title, text=text, meta=meta or {}))
        return pid


class QuestionSet:
    def __init__(self, problems: Problems, path: Path):
        self.questions: list[Question] = []
        self._ids: set[str] = set()
        self.problems = problems
        self.path = path

    def add(self, loc: str, q: Question) -> None:
        if q.id in self._ids:
            self.problems.report(self.path, loc, f"duplicate question id {q.id!r}")
            return
        self._ids.add(q.id)
        if not q.split:
            q.split = splits.from_name(Path(self.path).name)
        self.questions.append(q)


def _req(rec: dict[str, Any], *names: str) -> Any:
    for n in names:
        v = rec.get(n)
        if v not in (None, ""):
            return v
    raise BadRecord(f"missing field {' / '.join(repr(n) for n in names)}")


def _str_list(v: Any) -> list[str]:
    if v is None:
        return []
    if isinstance(v, str):
        s = v.strip()
        if s.startswith("[") and s.endswith("]"):
            try:
                got = json.loads(s)
                if isinstance(got, list):
                    return [str(x) for x in got if x not in (None, "")]
            except json.JSONDecodeError:
                pass
        return [v] if s else []
    if isinstance(v, (list, tuple)):
        return [str(x) for x in v if x not in (None, "")]
    return [str(v)]


def _limited(records: Iterator, limit: int | None) -> Iterator:
    for n, r in enumerate(records):
        if limit is not None and n >= limit:
            return
        yield r


def _find_file(folder: Path, names: Iterable[str], what: str) -> Path:
    for n in names:
        for cand in (folder / n, *(folder / (n + ext) for ext in (".bz2", ".gz", ".xz"))):
            if cand.is_file():
                return cand
    raise FileNotFoundError(f"{folder}: no {what} file (looked for {', '.join(names)})")


# ---------------------------------------------------------------- HotpotQA / 2Wiki

def _context_pairs(ctx: Any) -> list[tuple[str, list[str]]]:
    """[(title, sentences)] from the list layout or the HF dict layout."""
    if isinstance(ctx, dict):
        titles, sents = ctx.get("title"), ctx.get("sentences")
        if not isinstance(titles, list) or not isinstance(sents, list) or len(titles) != len(sents):
            raise BadRecord("context has neither the [[title, sentences]] nor the "
                            "{title, sentences} layout")
        pairs = list(zip(titles, sents))
    elif isinstance(ctx, list):
        pairs = []
        for item in ctx:
            if not isinstance(item, (list, tuple)) or len(item) != 2:
                raise BadRecord("context items must be [title, [sentences]]")
            pairs.append((item[0], item[1]))
    else:
        raise BadRecord("context must be a list of [title, [sentences]]")
    out = []
    for title, sents in pairs:
        if isinstance(sents, str):
            sents = [sents]
        if not isinstance(title, str) or not isinstance(sents, list):
            raise BadRecord("a context paragraph needs a title and a list of sentences")
        out.append((title, [str(s) for s in sents]))
    return out


def _support_pairs(sf: Any) -> list[tuple[str, int]]:
    if sf is None:
        return []
    if isinstance(sf, dict):
        return list(zip(sf.get("title") or [], sf.get("sent_id") or []))
    out = []
    for item in sf:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise BadRecord("supporting_facts items must be [title, sentence index]")
        out.append((str(item[0]), int(item[1])))
    return out


def _paragraph(sents: list[str]) -> tuple[str, list[int]]:
    starts, pos = [], 0
    for s in sents:
        starts.append(pos)
        pos += len(s)
    return "".join(sents).strip(), starts


def _wiki_multihop(path: Path, problems: Problems, kind: str, *, corpus: str | None = None,
                   limit: int | None = None, progress: bool = False,
                   evidence_kg: bool = False) -> Imported:
    path = Path(path)
    qfile = path
    if path.is_dir():
        qfile = _find_file(path, ["questions.json", "dev.json", "train.json",
                                  "hotpot_dev_distractor_v1.json", "hotpot_dev_fullwiki_v1.json",
                                  "questions.jsonl", "dev.jsonl"], "questions")
        if corpus is None:
            for c in ("corpus.json", "corpus.jsonl"):
                if (path / c).is_file():
                    corpus = str(path / c)
    pool = PassagePool()
    out = Imported(sources=[str(qfile)])
    if corpus:
        _read_title_corpus(Path(corpus), pool, problems)
        out.sources.append(str(corpus))
    qs = QuestionSet(problems, qfile)
    triples: list[Triple] = []
    for loc, rec in _progress(_limited(iter_records(qfile, problems), limit), progress, kind):
        try:
            qid = str(_req(rec, "_id", "id"))
            text = str(_req(rec, "question"))
            ctx = _context_pairs(rec.get("context") or [])
            support = _support_pairs(rec.get("supporting_facts"))
            context_ids = []
            for title, sents in ctx:
                para, starts = _paragraph(sents)
                context_ids.append(pool.add(title, para, {"sentence_starts": starts}))
            gold_titles = list(dict.fromkeys(t for t, _ in support))
            title_to_id = {t: i for (t, _), i in zip(ctx, context_ids)}
            meta: dict[str, Any] = {
                "supporting_facts": [[t, i] for t, i in support],
                "context_ids": context_ids,
                "gold_passage_ids": [title_to_id.get(t, t) for t in gold_titles],
            }
            if "level" in rec:
                meta["level"] = rec["level"]
            gold_path: list[list[str]] = []
            if kind == "2wiki":
                ev = rec.get("evidences") or []
                for e in ev:
                    if not isinstance(e, (list, tuple)) or len(e) != 3:
                        raise BadRecord("evidences items must be [subject, relation, object]")
                    gold_path.append([str(x) for x in e])
                    if evidence_kg:
                        triples.append(Triple(str(e[0]), str(e[1]), str(e[2]), source=qid))
                if rec.get("entity_ids"):
                    meta["entity_ids"] = rec["entity_ids"]
            answer = rec.get("answer")
            answers = _str_list(answer)
            hops = len(gold_path) if gold_path else (len(gold_titles) or None)
            if kind == "hotpotqa":
                hops = 2
            qs.add(loc, Question(id=qid, question=text, answers=answers, hops=hops,
                                 type=str(rec.get("type") or ""), gold_titles=gold_titles,
                                 gold_path=gold_path, meta=meta))
        except BadRecord as e:
            problems.report(qfile, loc, str(e))
    out.questions = qs.questions
    out.passages = pool.passages
    if evidence_kg and triples:
        out.triples = triples
        out.info["kg_source"] = "the questions' gold evidences (contains the gold paths)"
    return out


def _read_title_corpus(path: Path, pool: PassagePool, problems: Problems) -> None:
    """``{title: [sentences]}`` JSON, or JSONL of ``{title, text|sentences}``."""
    if base_suffix(path) == ".json":
        from .io import open_text
        try:
            with open_text(path) as f:
                obj = json.load(f)
        except json.JSONDecodeError as e:
            raise ImportProblem(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from e
        if isinstance(obj, dict):
            for title, sents in obj.items():
                sents = [sents] if isinstance(sents, str) else list(sents or [])
                para, starts = _paragraph([str(s) for s in sents])
                pool.add(str(title), para, {"sentence_starts": starts})
            return
    for loc, rec in iter_records(path, problems):
        try:
            title = str(rec.get("title") or "")
            if "sentences" in rec:
                para, starts = _paragraph([str(s) for s in rec["sentences"]])
                meta = {"sentence_starts": starts}
            else:
                para, meta = str(_req(rec, "text", "paragraph_text", "contents")), {}
            pool.add(title, para, meta, pid=str(rec["id"]) if rec.get("id") else None)
        except BadRecord as e:
            problems.report(path, loc, str(e))


def import_hotpotqa(path: Path, problems: Problems, **opts: Any) -> Imported:
    return _wiki_multihop(path, problems, "hotpotqa", **opts)


def import_2wiki(path: Path, problems: Problems, **opts: Any) -> Imported:
    return _wiki_multihop(path, problems, "2wiki", **opts)


# ---------------------------------------------------------------- MuSiQue

def import_musique(path: Path, problems: Problems, *, limit: int | None = None,
                   progress: bool = False) -> Imported:
    path = Path(path)
    if path.is_dir():
        path = _find_file(path, ["musique_ans_v1.0_dev.jsonl", "musique_full_v1.0_dev.jsonl",
                                 "dev.jsonl", "questions.jsonl"], "MuSiQue .jsonl")
    pool = PassagePool()
    qs = QuestionSet(problems, path)
    for loc, rec in _progress(_limited(iter_records(path, problems), limit), progress,
                              "musique"):
        try:
            qid = str(_req(rec, "id"))
            text = str(_req(rec, "question"))
            paras = rec.get("paragraphs") or []
            if not isinstance(paras, list):
                raise BadRecord("paragraphs must be a list")
            by_idx: dict[int, str] = {}
            titles: dict[int, str] = {}
            context_ids, support_ids, support_titles = [], [], []
            for n, p in enumerate(paras):
                if not isinstance(p, dict) or "paragraph_text" not in p:
                    raise BadRecord(f"paragraph {n} lacks paragraph_text")
                title = str(p.get("title") or "")
                pid = pool.add(title, str(p["paragraph_text"]).strip())
                i = int(p.get("idx", n))
                by_idx[i], titles[i] = pid, title
                context_ids.append(pid)
                if p.get("is_supporting"):
                    support_ids.append(pid)
                    support_titles.append(title)
            decomp = []
            raw = rec.get("question_decomposition") or []
            if not isinstance(raw, list):
                raise BadRecord("question_decomposition must be a list")
            for step in raw:
                if not isinstance(step, dict) or "question" not in step:
                    raise BadRecord("each question_decomposition step needs a question")
                d = dict(step)
                si = step.get("paragraph_support_idx")
                if si is not None and int(si) in by_idx:
                    d["passage_id"] = by_idx[int(si)]
                    d["title"] = titles[int(si)]
                decomp.append(d)
            # gold titles in reasoning order where the decomposition says so
            ordered = [d["title"] for d in decomp if d.get("title")]
            gold_titles = list(dict.fromkeys(ordered + support_titles))
            m = re.match(r"(\d+hop\d*)", qid)
            qs.add(loc, Question(
                id=qid, question=text, answers=_str_list(rec.get("answer")),
                aliases=_str_list(rec.get("answer_aliases")), hops=len(decomp) or None,
                type=m.group(1) if m else "", answerable=bool(rec.get("answerable", True)),
                decomposition=decomp, gold_titles=gold_titles,
                meta={"context_ids": context_ids, "gold_passage_ids": list(dict.fromkeys(
                    [d["passage_id"] for d in decomp if d.get("passage_id")] + support_ids))}))
        except (BadRecord, ValueError, TypeError) as e:
            problems.report(path, loc, str(e))
    return Imported(questions=qs.questions, passages=pool.passages, sources=[str(path)])


# ---------------------------------------------------------------- CRAG

def import_crag(path: Path, problems: Problems, *, limit: int | None = None,
                progress: bool = False, chunk_words: int = 150, chunk_overlap: int = 30
                ) -> Imported:
    path = Path(path)
    if path.is_dir():
        path = _find_file(path, ["dev_data.jsonl", "crag_task_1_dev_v4_release.jsonl",
                                 "questions.jsonl"], "CRAG .jsonl")
    pool = PassagePool()
    qs = QuestionSet(problems, path)
    n_pages = 0
    for loc, rec in _progress(_limited(iter_records(path, problems), limit), progress, "crag"):
        try:
            qid = str(_req(rec, "interaction_id", "id"))
            text = str(_req(rec, "query", "question"))
            answers = _str_list(rec.get("answer"))
            results = rec.get("search_results") or []
            if not isinstance(results, list):
                raise BadRecord("search_results must be a list")
            ctx_ids: list[str] = []
            for rank, res in enumerate(results):
                if not isinstance(res, dict):
                    raise BadRecord(f"search result {rank} is not an object")
                html = res.get("page_result") or ""
                body = html_to_text(html) if html else ""
                if len(body.split()) < 5:
                    body = str(res.get("page_snippet") or "").strip()
                title = str(res.get("page_name") or "").strip() or html_title(html) or \
                    str(res.get("page_url") or "")
                n_pages += 1
                for c, chunk in enumerate(chunk_text(body, max_words=chunk_words,
                                                     overlap_words=chunk_overlap)):
                    ctx_ids.append(pool.add(title, chunk, {
                        "url": res.get("page_url", ""), "question_id": qid, "page_rank": rank,
                        "chunk": c, "last_modified": res.get("page_last_modified", "")},
                        pid=f"{qid[:8]}-p{rank}-c{c}"))
            meta = {k: rec.get(k) for k in ("domain", "question_type", "static_or_dynamic",
                                            "query_time", "split") if k in rec}
            meta["context_ids"] = list(dict.fromkeys(ctx_ids))
            qtype = str(rec.get("question_type") or "")
            qs.add(loc, Question(id=qid, question=text, answers=answers,
                                 aliases=_str_list(rec.get("alternative_answers")),
                                 type=qtype, meta=meta,
                                 hops=2 if qtype in ("multi-hop", "comparison") else None))
        except BadRecord as e:
            problems.report(path, loc, str(e))
    return Imported(questions=qs.questions, passages=pool.passages, sources=[str(path)],
                    info={"pages": n_pages, "chunk_words": chunk_words,
                          "chunk_overlap": chunk_overlap})


# ---------------------------------------------------------------- WebQSP / CWQ (RoG layout)

def _rog_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    files = sorted(p for p in path.rglob("*") if p.is_file() and base_suffix(p) in
                   (".jsonl", ".json", ".parquet"))
    if not files:
        raise FileNotFoundError(f"{path}: no .jsonl, .json or .parquet files")
    return files


class _Interner:
    def __init__(self) -> None:
        self.idx: dict[str, int] = {}
        self.items: list[str] = []

    def __call__(self, s: str) -> int:
        i = self.idx.get(s)
        if i is None:
            i = self.idx[s] = len(self.items)
            self.items.append(s)
        return i


def import_rog(path: Path, problems: Problems, *, kind: str = "webqsp",
               limit: int | None = None, progress: bool = False) -> Imported:
    from ..knowledge.kg import KnowledgeGraph, _first_unique
    path = Path(path)
    ents, rels = _Interner(), _Interner()
    H: list[np.ndarray] = []
    R: list[np.ndarray] = []
    T: list[np.ndarray] = []
    qs_all: list[Question] = []
    seen: set[str] = set()
    n = 0
    for f in _rog_files(path):
        qs = QuestionSet(problems, f)
        qs._ids = seen
        if base_suffix(f) == ".parquet":
            recs = _rog_parquet(f, problems, ents, rels, H, R, T,
                                None if limit is None else limit - n)
        else:
            recs = iter_records(f, problems)
        for loc, rec in _progress(recs, progress, kind):
            if limit is not None and n >= limit:
                break
            try:
                qid = str(_req(rec, "id", "ID", "QuestionId"))
                text = str(_req(rec, "question", "RawQuestion", "ProcessedQuestion"))
                graph = rec.get("graph")
                if graph is not None and not isinstance(graph, list):
                    raise BadRecord("graph must be a list of [head, relation, tail]")
                if graph:
                    for j, tr in enumerate(graph):      # validate before interning anything
                        if not isinstance(tr, (list, tuple)) or len(tr) != 3 or \
                                any(x in (None, "") for x in tr):
                            raise BadRecord(f"graph triple {j} is not [head, relation, tail]")
                    hs, rs, ts = [], [], []
                    for tr in graph:
                        hs.append(ents(str(tr[0])))
                        rs.append(rels(str(tr[1])))
                        ts.append(ents(str(tr[2])))
                    H.append(np.asarray(hs, np.int32))
                    R.append(np.asarray(rs, np.int32))
                    T.append(np.asarray(ts, np.int32))
                q = Question(id=qid, question=text, answers=_str_list(rec.get("answer")),
                             type=kind, topic_entities=_str_list(rec.get("q_entity")),
                             answer_entities=_str_list(rec.get("a_entity")),
                             meta={k: rec[k] for k in ("choices",) if rec.get(k)})
                before = len(qs.questions)
                qs.add(loc, q)
                if len(qs.questions) > before:
                    n += 1
            except BadRecord as e:
                problems.report(f, loc, str(e))
        qs_all.extend(qs.questions)
    h = np.concatenate(H) if H else np.zeros(0, np.int32)
    r = np.concatenate(R) if R else np.zeros(0, np.int32)
    t = np.concatenate(T) if T else np.zeros(0, np.int32)
    raw = len(h)
    if raw:
        keep = _first_unique(h, r, t)
        h, r, t = h[keep], r[keep], t[keep]
    kg = KnowledgeGraph.from_arrays(ents.items, rels.items, h, r, t) if raw else None
    return Imported(questions=qs_all, kg=kg, sources=[str(path)],
                    info={"graph_triples_read": int(raw)})


def _rog_parquet(f: Path, problems: Problems, ents: _Interner, rels: _Interner,
                 H: list, R: list, T: list, limit: int | None = None
                 ) -> Iterator[tuple[str, dict[str, Any]]]:
    """Rows without their graph (read column-wise into H/R/T, no Python object per edge)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    try:
        pf = pq.ParquetFile(f)
    except Exception as e:
        raise ImportProblem(f"{f}: not a readable parquet file ({e})") from e
    row = 0
    for batch in pf.iter_batches(batch_size=1024):
        if "graph" not in batch.schema.names:
            for rec in batch.to_pylist():
                row += 1
                yield f"row {row}", rec
            continue
        g = batch.column("graph")
        inner = pc.list_flatten(g)                                 # one item per triple
        lens = pc.list_value_length(inner).fill_null(0).to_numpy(zero_copy_only=False)
        owners = pc.list_parent_indices(g).to_numpy()
        bad_rows = np.unique(owners[lens != 3])
        flat = pc.list_flatten(inner)
        ok = np.repeat(lens == 3, np.maximum(lens, 0))
        if not ok.all():
            flat = flat.filter(pa.array(ok))
        words: list = []
        codes = np.zeros((0, 3), np.int64)
        tri_owner = owners[lens == 3]
        if len(flat):
            # intern each distinct string of the batch once; edges stay integer columns
            enc = flat.dictionary_encode()
            codes = enc.indices.to_numpy(zero_copy_only=False).reshape(-1, 3).astype(np.int64)
            words = enc.dictionary.to_pylist()
            empty = [i for i, w in enumerate(words) if w in (None, "")]
            if empty:
                bad_rows = np.union1d(bad_rows, tri_owner[np.isin(codes, empty).any(axis=1)])
        allowed = len(batch) if limit is None else max(0, min(len(batch), limit - row))
        keep = ~np.isin(tri_owner, bad_rows) & (tri_owner < allowed)
        codes = codes[keep]
        if len(codes):
            emap = np.full(len(words), -1, np.int64)
            for i in np.unique(codes[:, [0, 2]]).tolist():
                emap[i] = ents(str(words[i]))
            rmap = np.full(len(words), -1, np.int64)
            for i in np.unique(codes[:, 1]).tolist():
                rmap[i] = rels(str(words[i]))
            H.append(emap[codes[:, 0]].astype(np.int32))
            R.append(rmap[codes[:, 1]].astype(np.int32))
            T.append(emap[codes[:, 2]].astype(np.int32))
        bad = set(bad_rows.tolist())
        for j, rec in enumerate(batch.drop_columns(["graph"]).to_pylist()):
            row += 1
            if j in bad:
                problems.report(f, f"row {row}", "a graph triple is not [head, relation, tail]")
                continue
            yield f"row {row}", rec


def import_webqsp(path: Path, problems: Problems, **opts: Any) -> Imported:
    return import_rog(path, problems, kind="webqsp", **opts)


def import_cwq(path: Path, problems: Problems, **opts: Any) -> Imported:
    return import_rog(path, problems, kind="cwq", **opts)


# ---------------------------------------------------------------- FEVER-style claims

_FEVER_ESC = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{",
              "-RCB-": "}", "-COLON-": ":"}


def fever_title(page_id: str) -> str:
    s = page_id
    for k, v in _FEVER_ESC.items():
        s = s.replace(k, v)
    return s.replace("_", " ")


def import_fever(path: Path, problems: Problems, *, corpus: str | None = None,
                 limit: int | None = None, progress: bool = False) -> Imported:
    path = Path(path)
    pool = PassagePool()
    out = Imported(sources=[str(path)])
    if corpus:
        cpath = Path(corpus)
        files = sorted(cpath.glob("*.jsonl*")) if cpath.is_dir() else [cpath]
        for cf in files:
            for loc, rec in iter_records(cf, problems):
                pid = str(rec.get("id") or "")
                text = str(rec.get("text") or "").strip()
                if not pid or not text:
                    continue          # FEVER's wiki dump has empty pages; not an error
                pool.add(fever_title(pid), text, {"page_id": pid}, pid=fever_title(pid))
            out.sources.append(str(cf))
    qs = QuestionSet(problems, path)
    for loc, rec in _progress(_limited(iter_records(path, problems), limit), progress, "fever"):
        try:
            qid = str(_req(rec, "id", "uid", "_id"))
            claim = str(_req(rec, "claim", "question"))
            label = rec.get("label")
            titles: list[str] = []
            sents: list[list[Any]] = []
            for ev_set in rec.get("evidence") or []:
                for ev in ev_set if isinstance(ev_set, list) else []:
                    if isinstance(ev, (list, tuple)) and len(ev) >= 4 and ev[2]:
                        titles.append(fever_title(str(ev[2])))
                        sents.append([fever_title(str(ev[2])), ev[3]])
            for sf in rec.get("supporting_facts") or []:
                if isinstance(sf, (list, tuple)) and len(sf) >= 1:
                    titles.append(str(sf[0]))
                    sents.append([str(sf[0]), sf[1] if len(sf) > 1 else None])
            meta = {"label": label, "evidence_sentences": sents}
            if "verifiable" in rec:
                meta["verifiable"] = rec["verifiable"]
            hops = rec.get("num_hops")
            qs.add(loc, Question(id=qid, question=claim, answers=_str_list(label),
                                 type="claim", gold_titles=list(dict.fromkeys(titles)),
                                 hops=int(hops) if hops else None, meta=meta))
        except BadRecord as e:
            problems.report(path, loc, str(e))
    out.questions = qs.questions
    out.passages = pool.passages
    return out


# ---------------------------------------------------------------- generic JSONL / demo layout

def question_from_record(rec: dict[str, Any], loc: str) -> Question:
    d = dict(rec)
    text = d.pop("question", None) or d.pop("query", None) or d.pop("claim", None)
    if not text:
        raise BadRecord("missing field 'question'")
    qid = d.pop("id", None) or d.pop("_id", None) or d.pop("qid", None) or f"q{loc}"
    if "answers" not in d and "answer" in d:
        d["answers"] = d.pop("answer")
    d["answers"] = _str_list(d.get("answers"))
    for k in ("aliases", "topic_entities", "gold_titles", "answer_entities"):
        if k in d:
            d[k] = _str_list(d[k])
    if d.get("hops") is not None:
        try:
            d["hops"] = int(d["hops"])
        except (TypeError, ValueError) as e:
            raise BadRecord(f"hops must be an integer, got {d['hops']!r}") from e
    for k in ("decomposition", "gold_path"):
        if k in d and not isinstance(d[k], list):
            raise BadRecord(f"{k} must be a list")
    if "meta" in d and not isinstance(d["meta"], dict):
        raise BadRecord("meta must be an object")
    d["id"], d["question"] = str(qid), str(text)
    return Question.from_dict(d)


def read_generic(folder_or_file: Path, problems: Problems, *, limit: int | None = None,
                 progress: bool = False) -> Imported:
    p = Path(folder_or_file)
    out = Imported(sources=[str(p)])
    if p.is_dir():
        files = {k: _maybe(p, k) for k in ("questions", "passages", "entities", "triples")}
        if not any(files.values()):
            raise FileNotFoundError(f"{p}: none of questions.jsonl, passages.jsonl, "
                                    f"entities.jsonl, triples.jsonl")
    else:
        files = {"questions": p, "passages": None, "entities": None, "triples": None}
    if files["questions"]:
        qs = QuestionSet(problems, files["questions"])
        for loc, rec in _progress(_limited(iter_records(files["questions"], problems), limit),
                                  progress, "questions"):
            try:
                qs.add(loc, question_from_record(rec, loc))
            except BadRecord as e:
                problems.report(files["questions"], loc, str(e))
        out.questions = qs.questions
    if files["passages"]:
        seen: set[str] = set()
        for loc, rec in iter_records(files["passages"], problems):
            try:
                text = _req(rec, "text", "contents", "paragraph_text")
                pid = str(rec.get("id") or f"p{loc}")
                if pid in seen:
                    raise BadRecord(f"duplicate passage id {pid!r}")
                seen.add(pid)
                meta = {k: v for k, v in rec.items() if k not in ("id", "title", "text", "meta")}
                meta.update(rec.get("meta") or {})
                out.passages.append(Passage(id=pid, title=str(rec.get("title") or ""),
                                            text=str(text), meta=meta))
            except BadRecord as e:
                problems.report(files["passages"], loc, str(e))
    if files["entities"]:
        out.entities = []
        for loc, rec in iter_records(files["entities"], problems):
            try:
                eid = str(_req(rec, "id"))
                out.entities.append(Entity(id=eid, name=str(rec.get("name") or eid),
                                           aliases=_str_list(rec.get("aliases")),
                                           type=str(rec.get("type") or "")))
            except BadRecord as e:
                problems.report(files["entities"], loc, str(e))
    if files["triples"]:
        out.triples = []
        for loc, rec in iter_records(files["triples"], problems):
            try:
                h, r, t = (str(_req(rec, "head", "h", "subject")),
                           str(_req(rec, "relation", "r", "predicate")),
                           str(_req(rec, "tail", "t", "object")))
                out.triples.append(Triple(h, r, t, source=rec.get("source")))
            except BadRecord as e:
                problems.report(files["triples"], loc, str(e))
    return out


def _maybe(folder: Path, stem: str) -> Path | None:
    for ext in (".jsonl", ".jsonl.bz2", ".jsonl.gz", ".json", ".parquet"):
        f = folder / f"{stem}{ext}"
        if f.is_file():
            return f
    return None


def import_jsonl(path: Path, problems: Problems, *, corpus: str | None = None,
                 limit: int | None = None, progress: bool = False) -> Imported:
    out = read_generic(Path(path), problems, limit=limit, progress=progress)
    if corpus:
        extra = read_generic(Path(corpus), problems) if Path(corpus).is_dir() else None
        if extra is None:
            pool = PassagePool()
            _read_title_corpus(Path(corpus), pool, problems)
            out.passages.extend(pool.passages)
        else:
            out.passages.extend(extra.passages)
        out.sources.append(str(corpus))
    return out


IMPORTERS: dict[str, Callable[..., Imported]] = {
    "hotpotqa": import_hotpotqa,
    "2wiki": import_2wiki,
    "musique": import_musique,
    "crag": import_crag,
    "webqsp": import_webqsp,
    "cwq": import_cwq,
    "fever": import_fever,
    "jsonl": import_jsonl,
}
KIND_ALIASES = {"hotpot": "hotpotqa", "2wikimultihopqa": "2wiki", "twowiki": "2wiki",
                "rog": "webqsp", "hover": "fever", "generic": "jsonl"}
