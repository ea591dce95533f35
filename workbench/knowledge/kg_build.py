"""A knowledge graph for a text-only dataset, extracted passage by passage by the LLM.

OpenIE-style: one schema-constrained call per passage returns up to ``max_triples``
``[subject, relation, object]`` triples; every triple keeps its source passage id.
Entities are keyed by their normalised name (``e:<normalised name>``) and named by
their most frequent surface form; relations are lower-cased phrases.

Builds are cached per corpus and model under
``paths.sub("kg", "<dataset>-<corpus hash>-<model sha>")``:

- ``checkpoint.jsonl``: one line per finished passage (triples, raw output, token counts),
  appended and flushed as each passage finishes, so an interrupted build resumes where it
  stopped (finished passages are skipped on restart);
- ``kg/``: the assembled :class:`~workbench.knowledge.kg.KnowledgeGraph` (``save`` format),
  rewritten at the end of every build;
- ``meta.json``: dataset, model, counts, parse failures, timings.

:mod:`~workbench.knowledge.built_kgs` finds and loads stored builds (``Dataset.kg()`` falls
back to them for a dataset that ships no KG) without importing this module.
"""
from __future__ import annotations

import json
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from ..datasets.base import Entity, Passage, Triple
from ..llm import batching
from ..llm.base import ContextOverflowError, GenParams, GenRequest
from .built_kgs import build_dir
from .text import normalize_name

PROMPT_VERSION = "kgb-1"
SYSTEM = ("You extract facts from text as knowledge-graph triples. Each triple is "
          "[subject, relation, object]: subject and object are short entity names as written "
          "in the text (people, places, organisations, works, dates, numbers), the relation is "
          "a short verb phrase. Use the passage title for the passage's main subject.")


def schema(max_triples: int = 8, max_len: int = 60) -> dict[str, Any]:
    item = {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": max_len},
            "minItems": 3, "maxItems": 3}
    return {"type": "object", "properties": {
        "triples": {"type": "array", "items": item, "maxItems": max_triples}},
        "required": ["triples"]}


def entity_id(name: str) -> str:
    return "e:" + (normalize_name(name) or name.strip().lower())


def clean_relation(rel: str) -> str:
    return " ".join(re.sub(r"[_\s]+", " ", rel).strip().lower().split())


@dataclass
class BuildResult:
    dir: Path
    dataset: str
    model: str
    model_sha: str
    passages_total: int
    passages_done: int
    newly_done: int
    parse_failures: int
    n_entities: int
    n_triples: int
    seconds: float
    complete: bool
    meta: dict[str, Any] = field(default_factory=dict)


def _messages(p: Passage, max_chars: int) -> list[dict[str, str]]:
    text = p.text if len(p.text) <= max_chars else p.text[:max_chars].rsplit(" ", 1)[0] + " ..."
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Title: {p.title}\nPassage: {text}\n\nTriples as JSON:"}]


def _valid(obj: Any) -> list[list[str]]:
    out = []
    for t in obj["triples"]:
        if isinstance(t, list) and len(t) == 3 and all(isinstance(x, str) and x.strip() for x in t):
            out.append([" ".join(x.split()) for x in t])
    return out


def _new_record(p: Passage) -> dict[str, Any]:
    return {"pid": p.id, "title": p.title, "ok": False, "triples": [], "calls": 0,
            "prompt_tokens": 0, "completion_tokens": 0, "latency_ms": 0.0, "errors": []}


def _params(sch: dict[str, Any], max_tokens: int, attempt: int) -> GenParams:
    return GenParams(max_tokens=max_tokens if attempt == 0 else int(max_tokens * 1.5),
                     temperature=0.0, json_schema=sch)


def _absorb(rec: dict[str, Any], comp: Any) -> bool:
    """Count one completion into ``rec``; True when its triples parsed."""
    rec["calls"] += 1
    rec["prompt_tokens"] += comp.prompt_tokens
    rec["completion_tokens"] += comp.completion_tokens
    rec["latency_ms"] += round(comp.latency_ms, 2)
    rec["raw"] = comp.text[:2000]
    try:
        rec["triples"] = _valid(json.loads(comp.text))
        rec["ok"] = True
    except (ValueError, TypeError, KeyError) as e:
        rec["errors"].append(f"{type(e).__name__}: {e}"[:200])
    return rec["ok"]


def extract_passage(llm: Any, p: Passage, *, max_triples: int = 8, max_tokens: int = 320,
                    max_chars: int = 1500, rec: dict[str, Any] | None = None,
                    first_attempt: int = 0) -> dict[str, Any]:
    """One passage's record for the checkpoint (one call, one greedy retry on bad JSON).

    ``rec``/``first_attempt`` continue a record whose first attempt ran elsewhere
    (:func:`extract_passages`)."""
    sch = schema(max_triples)
    msgs = _messages(p, max_chars)
    rec = rec if rec is not None else _new_record(p)
    for attempt in range(first_attempt, 2):
        try:
            comp = llm.generate(msgs, _params(sch, max_tokens, attempt))
        except ContextOverflowError:
            msgs = _messages(p, max_chars // 2)
            rec["errors"].append("context overflow: passage truncated")
            continue
        if _absorb(rec, comp):
            break
    return rec


def extract_passages(llm: Any, ps: list[Passage], *, max_triples: int = 8,
                     max_tokens: int = 320, max_chars: int = 1500) -> list[dict[str, Any]]:
    """Records of several passages whose first attempts decode together (``generate_many``).

    A passage whose output does not parse retries alone, as in :func:`extract_passage`;
    a group with a passage too long for the context runs one by one, so that passage is
    truncated and retried there."""
    if len(ps) == 1:
        return [extract_passage(llm, ps[0], max_triples=max_triples, max_tokens=max_tokens,
                                max_chars=max_chars)]
    sch = schema(max_triples)
    reqs = [GenRequest(_messages(p, max_chars), _params(sch, max_tokens, 0)) for p in ps]
    try:
        comps = batching.generate_many(llm, reqs)
    except ContextOverflowError:
        return [extract_passage(llm, p, max_triples=max_triples, max_tokens=max_tokens,
                                max_chars=max_chars) for p in ps]
    out = []
    for p, comp in zip(ps, comps):
        rec = _new_record(p)
        if not _absorb(rec, comp):
            extract_passage(llm, p, max_triples=max_triples, max_tokens=max_tokens,
                            max_chars=max_chars, rec=rec, first_attempt=1)
        out.append(rec)
    return out


def read_checkpoint(path: Path) -> dict[str, dict[str, Any]]:
    """Finished passages by id; a torn last line (crash mid-write) is ignored."""
    done: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return done
    with path.open(encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
                done[rec["pid"]] = rec
            except (ValueError, KeyError):
                continue
    return done


def assemble(records: Iterable[dict[str, Any]]):
    """The KnowledgeGraph of checkpoint records (entities merged by normalised name)."""
    from .kg import KnowledgeGraph
    surface: dict[str, Counter] = defaultdict(Counter)
    triples: list[Triple] = []
    for rec in records:
        for s, r, o in rec.get("triples", []):
            rel = clean_relation(r)
            hs, ts = entity_id(s), entity_id(o)
            if not rel or hs == "e:" or ts == "e:" or hs == ts:
                continue
            surface[hs][s] += 1
            surface[ts][o] += 1
            triples.append(Triple(hs, rel, ts, source=rec["pid"]))
    ents = []
    for eid, c in surface.items():
        forms = c.most_common()
        ents.append(Entity(id=eid, name=forms[0][0],
                           aliases=[f for f, _ in forms[1:6] if f != forms[0][0]]))
    return KnowledgeGraph.from_triples(triples, ents)


def build_kg(dataset: Any, llm: Any, *, limit: int | None = None, max_triples: int = 8,
             max_tokens: int = 320, max_chars: int = 1500, batch: int = 1,
             progress: bool = True, restart: bool = False,
             passage_ids: Iterable[str] | None = None, selection: str | None = None,
             echo: Callable[[str], None] | None = None) -> BuildResult:
    """Extract (or resume extracting) the KG of ``dataset``'s first ``limit`` passages.

    ``passage_ids`` narrows the corpus to those passages first (kept in corpus order), so
    a KG holds what a set of questions needs; ``selection`` says in words which, for the
    build's meta.

    ``dataset`` is an object with ``name``, ``passages`` and ``corpus_hash`` (a
    :class:`~workbench.datasets.Dataset`; the caller loads it, so this module never
    imports the dataset registry, which imports it back for built KGs). ``batch``
    passages decode together; a group is checkpointed when all of it is done.
    """
    ds = dataset
    passages = list(ds.passages)
    if not passages:
        raise LookupError(f"dataset {ds.name!r} has no passages to build a KG from")
    total_all = len(passages)
    if passage_ids is not None:
        want = set(passage_ids)
        passages = [p for p in passages if p.id in want]
        if not passages:
            raise LookupError(f"none of the selected passages is in dataset {ds.name!r}")
    if limit is not None:
        passages = passages[:max(0, int(limit))]
    info = getattr(llm, "info", None)
    model = getattr(info, "name", "") or "model"
    sha = getattr(info, "sha256", "") or "unknown"
    d = build_dir(ds.name, ds.corpus_hash, sha)
    d.mkdir(parents=True, exist_ok=True)
    ckpt = d / "checkpoint.jsonl"
    if restart and ckpt.exists():
        ckpt.unlink()
    done = read_checkpoint(ckpt)
    todo = [p for p in passages if p.id not in done]
    if echo:
        echo(f"{ds.name}: {len(passages)} passages selected ({total_all} in the corpus), "
             f"{len(passages) - len(todo)} already done, {len(todo)} to extract -> {d}")
    t0 = time.perf_counter()
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=len(passages), initial=len(passages) - len(todo), unit="passage",
                   desc=f"kg build {ds.name}")
    newly = 0
    try:
        with ckpt.open("a", encoding="utf-8") as f:
            step = max(1, int(batch))
            for i in range(0, len(todo), step):
                group = todo[i:i + step]
                for p, rec in zip(group, extract_passages(
                        llm, group, max_triples=max_triples, max_tokens=max_tokens,
                        max_chars=max_chars)):
                    rec["prompt_version"] = PROMPT_VERSION
                    f.write(json.dumps(rec, ensure_ascii=False) + "\n")
                    done[p.id] = rec
                    newly += 1
                f.flush()
                if bar is not None:
                    bar.update(len(group))
                    bar.set_postfix(triples=sum(len(r["triples"]) for r in done.values()))
    finally:
        if bar is not None:
            bar.close()
        # the graph and meta are written even after an interruption, for what is done
        # every finished passage counts (a later --limit never shrinks an earlier build)
        recs = list(done.values())
        kg = assemble(recs)
        kg.save(d / "kg")
        failures = sum(1 for r in recs if not r.get("ok"))
        complete = all(p.id in done for p in passages)
        corpus_complete = len(recs) >= total_all
        meta = {"dataset": ds.name, "corpus_hash": ds.corpus_hash, "model": model,
                "model_sha256": sha, "prompt_version": PROMPT_VERSION,
                "limit": limit, "passages_total": total_all, "passages_selected": len(passages),
                # only while the graph holds exactly those questions' passages (a KG grows
                # across builds, and --limit keeps only some of them)
                "selection": selection if limit is None and complete
                and len(recs) == len(passages) else None,
                "passages_done": len(recs), "complete": complete,
                "corpus_complete": corpus_complete, "parse_failures": failures,
                "entities": kg.n_entities, "triples": kg.n_triples,
                "relations": len(kg.relations), "max_triples": max_triples, "batch": batch,
                "llm_calls": sum(int(r.get("calls", 0)) for r in recs),
                "prompt_tokens": sum(int(r.get("prompt_tokens", 0)) for r in recs),
                "completion_tokens": sum(int(r.get("completion_tokens", 0)) for r in recs),
                "updated": time.time(), "updated_iso": time.strftime("%Y-%m-%dT%H:%M:%S")}
        tmp = d / "meta.json.tmp"
        tmp.write_text(json.dumps(meta, indent=1))
        tmp.replace(d / "meta.json")
    return BuildResult(d, ds.name, model, sha, len(passages), len(recs), newly, failures,
                       kg.n_entities, kg.n_triples, time.perf_counter() - t0, complete, meta)
