import json

from workbench.cli import main
from workbench.llm.scripted import ScriptedBackend
from workbench.execution import run_to_end
from workbench.store import Store
from tests.test_execution import _Toy, _ctx


def test_models_lists_default(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "qwen2.5-coder-1.5b (default)" in out and "smollm2-135m" in out
    assert out.count("verified") >= 3 and "llama.cpp build:" in out and "AMX_INT8" not in out


def test_generate_prints_text_rate_and_perplexity(capsys):
    assert main(["generate", "Name a film director.", "--max-tokens", "8"]) == 0
    cap = capsys.readouterr()
    assert cap.out.strip()
    assert "tok/s" in cap.err and "perplexity" in cap.err


def test_bad_model_is_one_clear_line(capsys, tmp_path):
    bad = tmp_path / "m.gguf"
    bad.write_text("hello")
    assert main(["generate", "x", "--model", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "not a GGUF" in err and "Traceback" not in err


def test_runs_list_show_export(capsys, tmp_path):
    tr = run_to_end(_Toy(), _ctx(), "Who directed it?", store=Store())
    assert main(["runs", "list"]) == 0
    assert tr.run_id in capsys.readouterr().out
    assert main(["runs", "show", tr.run_id]) == 0
    assert "Who directed it?" in capsys.readouterr().out
    out = tmp_path / "r.json"
    assert main(["runs", "export", tr.run_id, "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["run"]["run_id"] == tr.run_id and data["events"][0]["type"] == "run_started"
    assert main(["runs", "show", "run_missing"]) == 2
