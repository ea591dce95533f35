"""The method benchmarks' tables: paired differences to standard RAG (benchmarks/_paired.py)
against every standard RAG series an eval ran (one per retriever, say), not only a lone
default; and the share of prompt tokens the prefix cache served beside each wall time."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str) -> object:
    """A benchmark script as a module, importing its siblings (``_paired``) as a script run
    would."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod          # its dataclasses look their module up
    sys.path.insert(0, str(BENCH))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(BENCH))
    return mod


paired = _load("_paired")
methods_text = _load("methods_text")

F1_HYBRID = [1.0, 1.0, 0.0, 1.0, 0.5, 1.0]
F1_DENSE = [1.0, 0.0, 0.0, 1.0, 0.5, 0.0]
F1_CRP = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]


def _series(f1: list[float], retrieval: str) -> tuple[dict, dict]:
    return {"retrieval": retrieval}, {"accuracy": [float(v == 1.0) for v in f1], "token_f1": f1}


def test_a_method_is_read_against_each_standard_rag_series(capsys):
    named = {"standard-rag [retriever=hybrid]": _series(F1_HYBRID, "hybrid"),
             "standard-rag [retriever=dense]": _series(F1_DENSE, "dense"),
             "crp-rag": _series(F1_CRP, "dense")}
    figures = {k: v[0] for k, v in named.items()}
    per_q = {k: v[1] for k, v in named.items()}
    paired.paired_differences(figures, per_q)
    out = capsys.readouterr().out
    crp = figures["crp-rag"]
    assert crp["vs_standard-rag [retriever=hybrid]"]["token_f1"][0] == round(
        (sum(F1_CRP) - sum(F1_HYBRID)) / 6, 3)
    assert crp["vs_standard-rag [retriever=dense]"]["token_f1"][0] == round(
        (sum(F1_CRP) - sum(F1_DENSE)) / 6, 3)
    # the two baselines are compared once (the retriever's own effect), not both ways
    assert "vs_standard-rag [retriever=hybrid]" in figures["standard-rag [retriever=dense]"]
    assert not any(k.startswith("vs_") for k in figures["standard-rag [retriever=hybrid]"])
    assert "(retrieved differently: dense vs hybrid)" in out
    assert "(same retriever: dense)" in out


def test_a_lone_standard_rag_keeps_its_plain_key(capsys):
    figures = {"standard-rag": {"retrieval": "hybrid"}, "crp-rag": {"retrieval": "dense"},
               "vanilla": {"retrieval": "none"}}
    per_q = {"standard-rag": _series(F1_HYBRID, "")[1], "crp-rag": _series(F1_CRP, "")[1],
             "vanilla": _series(F1_DENSE, "")[1]}
    paired.paired_differences(figures, per_q)
    out = capsys.readouterr().out
    assert set(figures["crp-rag"]) == {"retrieval", "vs_standard-rag"}
    assert "vs_standard-rag" in figures["vanilla"]
    assert out.count("paired difference against") == 1
    vanilla_line = next(ln for ln in out.splitlines() if ln.strip().startswith("vanilla"))
    assert "retriev" not in vanilla_line and "same retriever" not in vanilla_line


def test_no_standard_rag_means_no_paired_lines(capsys):
    figures = {"crp-rag": {"retrieval": "dense"}}
    paired.paired_differences(figures, {"crp-rag": _series(F1_CRP, "")[1]})
    assert capsys.readouterr().out == ""
    assert figures == {"crp-rag": {"retrieval": "dense"}}


def test_a_series_wall_time_comes_with_its_cached_prompt_share(capsys):
    """Two series whose wall times differ because one ran after a like prompt: the table
    says how much of each one's prompts the cache served, over the timed runs only."""
    def row(q: str, wall: float | None, cached: int) -> object:
        return methods_text.Row(q, 1, 500, wall, 1.0, 1.0, 1.0, False, False, cached, 400)
    table = methods_text.Table()
    table.add("standard-rag [retriever=hybrid]", [row("a", 11.0, 0), row("b", 10.0, 8)], "hybrid")
    table.add("standard-rag [retriever=dense]",
              [row("a", 6.0, 200), row("b", 5.0, 180), row("c", None, 400)], "dense")
    assert table.figures["standard-rag [retriever=hybrid]"]["cached_prompt_share"] == 0.01
    # the untimed run (its calls replayed) is left out, as it is from the wall time
    assert table.figures["standard-rag [retriever=dense]"]["cached_prompt_share"] == 0.475
    assert "48%" in capsys.readouterr().out


def test_a_span_read_as_unknown_counts_as_an_unknown_answer_not_a_refusal(capsys):
    """CogGRAG's root answered "craft" and the span call read it as unknown: the method did
    not refuse, yet the answer is "I don't know"; the table gives both rates."""
    from types import SimpleNamespace as NS
    q = NS(id="q", gold_answers=["early twentieth century"])
    def tr(answer: dict) -> object:
        return NS(summary={"totals": {"llm_calls": 3}}, answer=answer, log=[], status="finished")
    rows = [methods_text.row_of(q, tr({"text": "I don't know", "idk": True}), 1.0),
            methods_text.row_of(q, tr({"text": "I don't know", "refused": True}), 1.0),
            methods_text.row_of(q, tr({"text": "1920s"}), 1.0)]
    assert [(r.refused, r.unknown) for r in rows] == [(False, True), (True, True),
                                                      (False, False)]
    table = methods_text.Table()
    table.add("coggrag", rows, "kg")
    f = table.figures["coggrag"]
    assert (f["refusal_rate"], f["unknown_answer_rate"]) == (0.333, 0.667)
    assert 'answered "I don\'t know" 0.67' in capsys.readouterr().out


def test_a_series_with_no_timed_run_has_no_cached_share(capsys):
    table = methods_text.Table()
    table.add("crp-rag", [methods_text.Row("a", 9, 900, None, 1.0, 1.0, 1.0, False, False,
                                           600, 800)], "dense")
    assert table.figures["crp-rag"]["cached_prompt_share"] is None
    row = next(line for line in capsys.readouterr().out.splitlines() if "wall over" in line)
    assert "%" not in row and "(wall over 0 runs)" in row


def test_old_vs_new_sides_name_knobs_the_methods_take():
    """A renamed knob or value would make `--old-vs-new` fail after an hour of the old side."""
    from workbench import config
    from workbench.methods import get_method
    from dataclasses import fields
    from workbench.settings import Settings
    backend_opts = {f.name for f in fields(Settings)}    # what load_backend's overrides set
    for name, (method, sides) in methods_text.OLD_VS_NEW.items():
        cls = get_method(method).Config
        built = [config.build(cls, knobs) for _, knobs, _, _ in sides]
        # the two sides differ in a knob, the memo or the backend, or there is nothing to
        # compare
        assert (built[0] != built[1] or sides[0][2] != sides[1][2]
                or sides[0][3] != sides[1][3]), name
        for *_, bo in sides:
            assert set(bo) <= backend_opts, (name, bo)


def test_old_vs_new_sides_never_share_a_backend():
    """A shared backend hands the second side the first side's prompts of the same question
    from its kept prefixes; each side gets its own, the shared one going to at most one."""
    be = object()
    for name, (_, sides) in methods_text.OLD_VS_NEW.items():
        loaded: list[dict] = []
        llms = methods_text.side_backends(sides, be, lambda bo: loaded.append(bo) or object())
        assert len({id(b) for b in llms.values()}) == len(sides), name
        assert len(loaded) == len(sides) - (be in llms.values()), name
        for label, _, _, bo in sides:          # backend options only on a loaded backend
            options = {k: v for k, v in bo.items() if k not in methods_text.RUN_SETTINGS}
            assert not options or llms[label] is not be, (name, label)
        # run settings go to the side's runs, never to a backend
        assert not any(set(o) & set(methods_text.RUN_SETTINGS) for o in loaded), name


def test_a_side_without_the_loop_check_builds_its_runs_with_it_off(isolated_home):
    """The old side of crp-rag (and crp-rag-loop's first) runs with Settings.loop_stop 0,
    which every generation of a run then carries (tests/test_llm_repetition.py)."""
    from workbench.llm.repetition import DEFAULT_LOOP_STOP
    for name in ("crp-rag", "crp-rag-loop"):
        old, new = methods_text.OLD_VS_NEW[name][1]
        assert methods_text.side_settings(old[3]).loop_stop == 0, name
        assert methods_text.side_settings(new[3]).loop_stop == DEFAULT_LOOP_STOP, name
    # backend options stay out of the runs' Settings (the side's own backend has them)
    from workbench import settings as settings_mod
    assert methods_text.side_settings({"prefix_cache_tokens": 0}) == settings_mod.load()


def test_a_split_the_dataset_lacks_stops_before_a_model_loads(isolated_home, monkeypatch):
    def no_model(**_):
        raise AssertionError("a model was loaded for questions that do not exist")
    monkeypatch.setattr(methods_text, "load_backend", no_model)
    monkeypatch.setattr(sys, "argv", ["methods_text.py", "--dataset", "demo", "--split",
                                      "dev,tset"])
    with pytest.raises(SystemExit) as e:
        methods_text.main()
    msg = str(e.value.code)
    assert msg.startswith("--split: no questions in split 'tset'") and "test" in msg


def test_the_new_side_of_a_method_pair_is_todays_defaults():
    """`--old-vs-new crp-rag` (and coggrag) report today's defaults against the first
    measured ones: a default changed without the pair would report another setting."""
    from workbench import config
    from workbench.methods import get_method
    for name in ("crp-rag", "coggrag"):
        method, (_, new) = methods_text.OLD_VS_NEW[name]
        cls = get_method(method).Config
        assert config.build(cls, new[1]) == config.build(cls, {}), name
