"""scripts/gpu_check.sh: its CPU dry run goes through every step with the small model and
prints one JSON line of figures; without a GPU a real run refuses with a message."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gpu_check.sh"


def _run(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has a GPU")
def test_without_a_gpu_a_real_run_says_what_to_do():
    p = _run("--steps", "ask")
    assert p.returncode == 2
    assert "no NVIDIA GPU" in p.stderr and "--dry-run" in p.stderr


def test_unknown_step_is_refused():
    p = _run("--dry-run", "--steps", "ask,warp-drive")
    assert p.returncode == 2 and "warp-drive" in p.stderr


def test_dry_run_goes_through_every_step(tmp_path):
    from workbench.llm.registry import resolve
    try:
        resolve("smollm2-135m")
    except Exception as e:      # noqa: BLE001
        pytest.skip(f"the small bundled model is not installed: {e}")
    p = _run("--dry-run", "--log-dir", str(tmp_path))
    assert p.stdout.strip(), p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    steps = out["steps"]
    assert list(steps) == ["ask", "eval", "batched_decode", "grammar_sampling", "llm_throughput",
                           "prefix_cache"]
    failed = {k: v.get("error") for k, v in steps.items() if not v["ok"]}
    assert not failed, failed
    assert p.returncode == 0
    assert out["dry_run"] is True and out["n_gpu_layers"] == 0
    assert out["device"]["llama_cpp"]
    ask = steps["ask"]["figures"]
    assert ask["status"] == "finished" and ask["nodes"] >= 2
    assert 0 < ask["first_node_s"] <= ask["run_s"]
    # the dry run's methods ran on the demo question and have figures (a GPU run takes all)
    import importlib.util
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts" / "gpu_check.py")
    gc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gc)
    methods = gc.DRY["eval_methods"]
    ev = steps["eval"]["figures"]
    assert ev["status"] == "finished" and ev["items"] == f"{len(methods)}/{len(methods)}"
    assert set(methods) == {s.split(" ")[0] for s in ev["series"]}
    assert all("correct" in v for v in ev["series"].values())
    assert steps["batched_decode"]["figures"]["n_gpu_layers"] == 0
    assert steps["grammar_sampling"]["figures"]
    assert steps["llm_throughput"]["figures"]["n_gpu_layers"] == 0
    # the prompt cache against itself off: the same output (llm/prefix_store.py)
    assert steps["prefix_cache"]["figures"]["same_output"] is True
    # and against every prompt evaluated whole: on a CPU neither cache changes a bit
    pc = steps["prefix_cache"]["figures"]
    assert pc["whole_repeatable"] is True
    assert pc["same_as_whole"] == {"previous_prompt": True, "kept_prompts": True}
    for name in steps:      # each step's whole output is kept
        assert (tmp_path / f"{name}.log").read_text().startswith("$ ")
