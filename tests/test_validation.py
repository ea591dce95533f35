"""Every knob and option is checked before anything runs or is stored, and every user error
at the CLI is one line naming the problem and what to do (issue "Safe to share")."""
import dataclasses
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import config as cfgmod
from workbench.cli import main
from workbench.methods import all_methods
from workbench.execution import run_to_end
from workbench.settings import Settings
from workbench.store import Store, StoreError

from tests.test_execution import _Toy, _ctx

ROOT = Path(__file__).resolve().parents[1]


def _float_knobs():
    out = [(cls.Config, k) for cls in all_methods().values() for k in cfgmod.knobs(cls.Config)
           if k.type == "float"]
    out += [(Settings, k) for k in cfgmod.knobs(Settings) if k.type == "float"]
    return out


@pytest.mark.parametrize("raw", ["nan", "inf", "-inf", float("nan"), float("inf")])
def test_every_float_knob_refuses_nan_and_inf_naming_the_knob_and_range(raw):
    found = _float_knobs()
    assert len(found) >= 10          # the check below must not pass by finding no knobs
    for cfg_cls, spec in found:
        with pytest.raises(cfgmod.ConfigError) as ei:
            cfgmod.build(cfg_cls, {spec.name: raw})
        msg = str(ei.value)
        assert msg.startswith(f"{spec.name}=") and "not a finite number" in msg
        assert cfgmod.range_text(spec.min, spec.max) in msg


def test_crp_rag_records_the_tau_it_used_not_the_shipped_one():
    """A NaN tau (a config built without the knob check) pruned nothing, yet the run said it
    used the shipped, calibrated 1.42."""
    from tests.test_methods_text_crp import DIAMOND, FakeEmbedder, Q, TinyRetriever, make_backend
    from workbench.methods.base import RunContext
    from workbench.methods.crp_rag.method import CrpRag
    m = CrpRag
    shipped = cfgmod.build(m.Config, {})
    nan_cfg = dataclasses.replace(shipped, tau_ppl=float("nan"))
    assert m.fitted_state(nan_cfg) == []
    ctx = RunContext(llm=make_backend(DIAMOND, {}), config=nan_cfg,
                     retrievers={"dense": TinyRetriever()},
                     embedder=FakeEmbedder({"studio": [1, 0, 0, 0, 0, 0, 0, 0]}))
    tr = run_to_end(m(), ctx, Q)
    assert not [e for e in tr.log if e["type"] == "artefact_used"]
    scored = [n for n in tr.nodes.values() if "tau_ppl" in (n.thresholds or {})]
    assert scored and all(math.isnan(n.thresholds["tau_ppl"]) for n in scored)
    # the shipped tau is still recorded, under the value the run used
    rec = m.fitted_state(shipped)
    assert len(rec) == 1 and rec[0].name.startswith(f"tau_ppl={shipped.tau_ppl} ")


@pytest.mark.parametrize("argv,option,valid", [
    (["eval", "--limit", "-1"], "--limit", "[1, inf]"),
    (["eval", "--offset", "-3"], "--offset", "[0, inf]"),
    (["eval", "--workers", "0"], "--workers", "[1, inf]"),
    (["eval", "--items-together", "0"], "--items-together", "[1, inf]"),
    (["eval", "--batch", "0"], "--batch", "[1, inf]"),
    (["eval", "--tau-f1", "nan"], "--tau-f1", "[0, 1]"),
    (["eval", "--worker-cpus", "-1"], "--worker-cpus", "[0, inf]"),
    (["eval", "--seed", "-1"], "--seed", "[0, inf]"),
    (["runs", "--limit", "0"], "--limit", "[1, inf]"),
    (["generate", "x", "--temperature", "nan"], "--temperature", "[0, inf]"),
    (["generate", "x", "--n-ctx", "10"], "--n-ctx", "[256, 131072]"),
    (["ask", "q", "--threads", "-2"], "--threads", "[0, 256]"),
    (["kg", "build", "demo", "--limit", "0"], "--limit", "[1, inf]"),
    (["import", "jsonl", "x", "--chunk-overlap", "-1"], "--chunk-overlap", "[0, inf]"),
    (["frag", "route", "q", "--threshold", "inf"], "--threshold", "[0, 1]"),
])
def test_cli_numbers_out_of_range_are_refused_with_the_valid_range(argv, option, valid, capsys):
    with pytest.raises(SystemExit) as ei:
        main(argv)
    assert ei.value.code == 2
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert f"argument {option}" in last and valid in last and "Traceback" not in err


def test_an_eval_spec_with_a_negative_limit_or_offset_or_a_nan_cut_off_is_refused():
    """A sweep file's or the library's limit/offset must not act as slice indices."""
    from tests.test_eval_helpers import ToyDataset, toy_methods
    from workbench.eval.runner import EvalRunner, EvalSpec
    from workbench.llm.scripted import ScriptedBackend
    for kw, why in (({"limit": -1}, "limit of at least 1"), ({"limit": 0}, "limit of at least 1"),
                    ({"offset": -3}, "offset of at least 0"),
                    ({"tau_f1": float("nan")}, r"in \[0, 1\]")):
        with pytest.raises(ValueError, match=why):
            EvalRunner.new(Store(), EvalSpec("toy", ["toy-llm"], judge="off", **kw),
                           backend=ScriptedBackend(default="x"), dataset=ToyDataset(),
                           method_classes=toy_methods())
    assert Store().query("SELECT count(*) AS n FROM eval_batches")[0]["n"] == 0


def test_a_blank_question_is_refused_and_nothing_is_stored(capsys):
    st = Store()
    with pytest.raises(ValueError, match="question is blank"):
        run_to_end(_Toy(), _ctx(), " \t\n", store=st)
    assert st.list_runs() == []
    # the CLI says so before loading a model
    assert main(["ask", "   ", "--model", "/nonexistent/never-loaded.gguf"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the question is blank") and err.count("\n") == 1
    assert st.list_runs() == []


def test_unknown_run_and_eval_ids_are_errors_naming_the_id(capsys):
    assert main(["runs", "delete", "nosuchrun"]) == 2
    cap = capsys.readouterr()
    assert "deleted" not in cap.out and "'nosuchrun'" in cap.err
    for argv in (["runs", "show", "nosuchrun"], ["runs", "export", "nosuchrun"],
                 ["eval", "show", "ev_nosuch"], ["eval", "export", "ev_nosuch"],
                 ["eval", "--resume", "ev_nosuch"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert argv[-1] in err and err.startswith("error:") and "Traceback" not in err, argv


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_os_errors_at_the_cli_are_one_line_naming_the_path_and_the_fix(tmp_path, capsys,
                                                                         monkeypatch):
    tr = run_to_end(_Toy(), _ctx(), "Who directed it?", store=Store())
    capsys.readouterr()
    folder = tmp_path / "a_folder"
    folder.mkdir()
    assert main(["runs", "export", tr.run_id, "--out", str(folder)]) == 2
    err = _one_line_error(capsys)
    assert str(folder) in err and "give a file path, not a folder" in err
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    assert main(["runs", "export", tr.run_id, "--out", str(a_file / "r.json")]) == 2
    err = _one_line_error(capsys)
    assert str(a_file / "r.json") in err and "move it aside or choose another path" in err
    # a model path that is a folder
    assert main(["generate", "x", "--model", str(folder)]) == 2
    assert str(folder) in _one_line_error(capsys)
    # WORKBENCH_HOME a file
    monkeypatch.setenv("WORKBENCH_HOME", str(a_file))
    assert main(["runs", "list"]) == 2
    err = _one_line_error(capsys)
    assert str(a_file) in err and "point WORKBENCH_HOME at a folder" in err


def test_a_read_only_store_says_so_and_a_damaged_one_says_move_it_aside(tmp_path):
    damaged = tmp_path / "damaged.duckdb"
    damaged.write_bytes(b"this is not a DuckDB file" * 100)
    with pytest.raises(StoreError, match="move it aside"):
        Store(damaged)
    # a healthy store its user cannot write: root ignores file modes, so make it immutable
    path = tmp_path / "s.duckdb"
    Store(path)
    if os.geteuid() == 0:
        made = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
        if made.returncode:
            pytest.skip(f"cannot make a file read-only for root here: {made.stderr!r}")
    else:
        os.chmod(path, 0o444)
    try:
        with pytest.raises(StoreError) as ei:
            Store(path, lock_timeout=0.5)
        msg = str(ei.value)
        assert "read-only" in msg and "make it writable" in msg and "another store" in msg
        assert "damaged" not in msg and "move it aside" not in msg
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(path)])
        os.chmod(path, 0o644)
