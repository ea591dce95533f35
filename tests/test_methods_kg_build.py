"""LLM-built KGs for text-only datasets: extraction, provenance, resume, cache, CLI."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from workbench.datasets.base import Passage
from workbench.knowledge import built_kgs, kg_build
from workbench.llm.scripted import ScriptedBackend


@dataclass
class FakeDS:
    name: str = "tiny"
    corpus_hash: str = "abc123def456"
    passages: list = field(default_factory=lambda: [
        Passage("p1", "Glass Harbor", "Glass Harbor is a film directed by Ilse Varga."),
        Passage("p2", "Ilse Varga", "Ilse Varga was born in Port Amsel."),
        Passage("p3", "Port Amsel", "Port Amsel is a town in Norvania."),
        Passage("p4", "Norvania", "Tessaly is the capital of Norvania."),
    ])


def _backend():
    be = ScriptedBackend()
    be.add("Title: Glass Harbor", {"triples": [["Glass Harbor", "directed by", "Ilse Varga"]]})
    be.add("Title: Ilse Varga", {"triples": [["Ilse Varga", "born in", "Port Amsel"]]})
    be.add("Title: Port Amsel", {"triples": [["Port Amsel", "located in", "Norvania"],
                                             ["port amsel", "is a", "town"]]})
    be.add("Title: Norvania", "this is not json")
    return be


def test_build_extracts_triples_with_source_passages():
    be = _backend()
    res = kg_build.build_kg(FakeDS(), be, progress=False)
    assert res.complete and res.passages_done == 4 and res.parse_failures == 1
    kg = built_kgs.load_built_kg("tiny")
    assert kg is not None and kg.n_triples == 4
    assert kg.source("e:glass harbor", "directed by", "e:ilse varga") == "p1"
    assert kg.name("e:port amsel") == "Port Amsel"          # most frequent surface form
    assert kg.has_triple("e:ilse varga", "born in", "e:port amsel")
    # schema-constrained calls; the failed passage was retried once
    assert all(c["params"]["json_schema"] for c in be.calls)
    assert sum("Title: Norvania" in c["prompt"] for c in be.calls) == 2
    meta = json.loads((res.dir / "meta.json").read_text())
    assert meta["dataset"] == "tiny" and meta["model_sha256"] == "scripted"


def test_build_resumes_after_interruption_and_is_cached_per_model():
    class Boom(ScriptedBackend):
        def generate(self, messages, params=None):
            if len(self.calls) >= 2:
                raise KeyboardInterrupt
            return super().generate(messages, params)
    be = Boom(rules=_backend().rules)
    with pytest.raises(KeyboardInterrupt):
        kg_build.build_kg(FakeDS(), be, progress=False)
    d = built_kgs.build_dir("tiny", FakeDS.corpus_hash, "scripted")
    assert len((d / "checkpoint.jsonl").read_text().splitlines()) == 2
    meta = json.loads((d / "meta.json").read_text())
    assert meta["complete"] is False and meta["passages_done"] == 2   # partial KG is saved
    be2 = _backend()
    res = kg_build.build_kg(FakeDS(), be2, progress=False)
    assert res.newly_done == 2 and res.complete
    assert not any("Title: Glass Harbor" in c["prompt"] for c in be2.calls)   # skipped
    # a different model gets its own build
    be3 = _backend()
    be3.info.sha256 = "othermodel"
    r3 = kg_build.build_kg(FakeDS(), be3, progress=False, limit=1)
    assert r3.dir != res.dir and r3.passages_done == 1
    assert built_kgs.load_built_kg("tiny", "scripted").n_triples == 4
    assert built_kgs.load_built_kg("tiny", "othermodel").n_triples == 1
    assert built_kgs.load_built_kg("nope") is None


class Grouping(ScriptedBackend):
    """Records the size of every generate_many call."""
    def __init__(self, **kw):
        super().__init__(**kw)
        self.groups = []

    def generate_many(self, requests, **kw):
        self.groups.append(len(requests))
        return super().generate_many(requests, **kw)


def test_a_batched_build_gives_the_same_graph_and_retries_a_bad_output_alone():
    one = kg_build.build_kg(FakeDS(), _backend(), progress=False)
    triples_one = sorted(map(tuple, built_kgs.load_built_kg("tiny").triples()))
    be = Grouping(rules=_backend().rules)
    res = kg_build.build_kg(FakeDS(), be, progress=False, batch=3, restart=True)
    assert res.complete and res.parse_failures == one.parse_failures == 1
    assert be.groups == [3]                      # p1-p3 together; p4 is a group of one
    assert sorted(map(tuple, built_kgs.load_built_kg("tiny").triples())) == triples_one
    # the unparsable first output of a batched passage gets exactly one more try, alone
    assert sum("Title: Norvania" in c["prompt"] for c in be.calls) == 2
    assert [c["params"]["max_tokens"] for c in be.calls if "Title: Norvania" in c["prompt"]] \
        == [320, 480]
    assert json.loads((res.dir / "meta.json").read_text())["batch"] == 3


def test_batched_extraction_with_the_real_model_parses_every_passage(default_llm):
    """Schema-constrained outputs decoded together stay valid JSON, one record per passage."""
    class Spy:
        modes: list = []

        def generate_many(self, reqs, **kw):
            comps = default_llm.generate_many(reqs, **kw)
            self.modes += [c.batch["mode"] for c in comps]
            return comps

        def generate(self, *a, **kw):
            return default_llm.generate(*a, **kw)

    ps, spy = FakeDS().passages, Spy()
    recs = kg_build.extract_passages(spy, ps)
    assert spy.modes == ["llama_cpp"] * 4
    assert [r["pid"] for r in recs] == [p.id for p in ps]
    assert all(r["ok"] for r in recs), [r["errors"] for r in recs]
    assert any(r["triples"] for r in recs)


def test_a_kg_built_from_part_of_the_corpus_is_flagged_on_every_kg_run():
    kg_build.build_kg(FakeDS(), _backend(), progress=False, limit=2)
    kg = built_kgs.load_built_kg("tiny")
    note = built_kgs.partial_note(kg)
    assert "from 2 of the 4 passages of tiny" in note and "kg build tiny" in note
    from workbench.methods.base import RunContext
    from workbench.methods.coggrag.method import CogConfig, CogGRAG
    from workbench.methods.frag.method import Frag, FragConfig
    from workbench.execution import run_to_end
    for method, cfg in ((CogGRAG(), CogConfig()), (Frag(), FragConfig())):
        tr = run_to_end(method, RunContext(llm=ScriptedBackend(default="x"), config=cfg, kg=kg),
                        "Where was Ilse Varga born?")
        assert [e["data"]["note"] for e in tr.log if e["type"] == "kg_partial"] == [note]
    # the whole corpus extracted: nothing to say
    kg_build.build_kg(FakeDS(), _backend(), progress=False)
    assert built_kgs.partial_note(built_kgs.load_built_kg("tiny")) is None


def test_torn_checkpoint_line_is_ignored(tmp_path):
    f = tmp_path / "c.jsonl"
    f.write_text('{"pid": "p1", "triples": []}\n{"pid": "p2", "tri')
    assert list(kg_build.read_checkpoint(f)) == ["p1"]


def test_cli_build_and_info(monkeypatch, capsys):
    from workbench import cli
    from workbench.commands import kg as kgcmd
    monkeypatch.setattr(kgcmd, "backend_from_args", lambda a: _backend())
    import workbench.datasets as dsmod
    monkeypatch.setattr(dsmod, "load_dataset", lambda name: FakeDS())
    assert cli.main(["kg", "build", "tiny", "--limit", "2", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "2 selected passages complete; 2/4 corpus passages" in out
    assert cli.main(["kg", "info", "tiny"]) == 0
    assert "2/4 passages (partial)" in capsys.readouterr().out


def test_cli_builds_only_the_passages_of_the_questions_asked(monkeypatch, capsys):
    from types import SimpleNamespace as Q
    from workbench import cli
    from workbench.commands import kg as kgcmd
    ds = FakeDS()
    ds.questions = [Q(split="train", meta={"context_ids": ["p1", "p2"]}),
                    Q(split="dev", meta={"context_ids": ["p4", "p2"]}),
                    Q(split="test", meta={"context_ids": ["p3"]})]
    be = _backend()
    monkeypatch.setattr(kgcmd, "backend_from_args", lambda a: be)
    import workbench.datasets as dsmod
    monkeypatch.setattr(dsmod, "load_dataset", lambda name: ds)
    assert cli.main(["kg", "build", "tiny", "--first", "2", "--split", "dev,test",
                     "--no-progress"]) == 0
    assert "2 selected passages complete; 2/4 corpus passages" in capsys.readouterr().out
    # the dev question's passages, in corpus order; nothing of the train or third question
    assert [c["prompt"].split("Title: ")[1].split("\n")[0] for c in be.calls] == [
        "Ilse Varga", "Norvania", "Norvania"]           # Norvania's bad output, retried
    info = built_kgs.built_kgs("tiny")[0]
    assert info["selection"] == "1 question (first 2, split dev,test)"
    assert cli.main(["kg", "info", "tiny"]) == 0
    assert "passages of 1 question (first 2, split dev,test)" in capsys.readouterr().out
    assert "(those that came with 1 question (first 2, split dev,test))" in \
        built_kgs.partial_note(built_kgs.load_built_kg("tiny"))
    # with --limit the graph holds only some of those questions' passages: not named
    assert cli.main(["kg", "build", "tiny", "--split", "dev", "--limit", "1", "--restart",
                     "--no-progress"]) == 0
    capsys.readouterr()
    assert built_kgs.built_kgs("tiny")[0]["selection"] is None
    # a split the dataset does not have is named as such, not as questions without passages
    assert cli.main(["kg", "build", "tiny", "--split", "tset", "--no-progress"]) == 2
    assert "no questions in split 'tset'" in capsys.readouterr().err
    # a later build that adds passages: the graph no longer holds just those questions
    kg_build.build_kg(ds, _backend(), progress=False, limit=3)
    assert built_kgs.built_kgs("tiny")[0]["selection"] is None
    # questions without passages of their own: a clear refusal, no model loaded
    for q in ds.questions:
        q.meta = {}
    assert cli.main(["kg", "build", "tiny", "--split", "dev", "--no-progress"]) == 2
    assert "came with no passages of their own" in capsys.readouterr().err


def test_kg_methods_explain_how_to_build_a_missing_kg():
    from workbench.methods.base import RunContext
    from workbench.methods.coggrag.method import CogConfig, CogGRAG
    from workbench.execution import run_to_end
    tr = run_to_end(CogGRAG(), RunContext(llm=ScriptedBackend(default="x"), config=CogConfig()),
                    "Who?")
    assert tr.status == "failed" and "python -m workbench kg build" in tr.errors[0]["message"]
