"""The steps of scripts/gpu_check.sh, run after its build: the app's Ask path, an eval of every
method on the demo world and the LLM benchmarks, each in a process of its own with every layer
offloaded (``--dry-run``: on the CPU, the small model and tiny sizes, to check the plumbing).

Each step's output goes to ``--log-dir``; the last line printed is one JSON object of figures:
``{"ok": ..., "device": {...}, "steps": {name: {"ok", "seconds", "figures" | "error"}}}``.
A step that fails or runs out of time is recorded as such and the others still run.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
STEPS = ("ask", "eval", "batched_decode", "grammar_sampling", "llm_throughput", "prefix_cache")
# Dry-run sizes: enough to go through every code path of a step, small enough for a CPU test.
# The dry run checks the script, not the methods (their real-model tests do): its eval runs
# the two one-call methods; every method on SmolLM2 would add a minute to each test run.
DRY = {"model": "smollm2-135m", "questions": 1, "ask_method": "standard-rag",
       "eval_methods": ["standard-rag", "vanilla"],
       "batched_decode": ["--sizes", "1,2", "--tokens", "8", "--repeats", "1"],
       "grammar_sampling": ["--tokens", "16", "--repeats", "1"],
       "llm_throughput": ["--tokens", "16", "--repeats", "1", "--nodes", "2"],
       "prefix_cache": ["--prefix-tokens", "96", "--rounds", "2"]}
# Arguments every run of a step gets: the prompt cache is compared with itself off, which
# says whether its output is exact on this device, and with every prompt evaluated whole
ALWAYS = {"prefix_cache": ["--compare-off", "--compare-whole"]}


def last_json(text: str) -> dict | None:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def run_step(name: str, cmd: list[str], env: dict[str, str], timeout: float,
             log_dir: Path) -> tuple[dict, str]:
    """Runs one step, its output kept in ``log_dir/NAME.log``; returns its result and stdout."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        stdout, out, rc = p.stdout, p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        stdout = ""
        out = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
                      for x in (e.stdout, e.stderr))
        out += f"\n[gpu_check] {name} ran past its {timeout:.0f} s limit\n"
        rc = None
    (log_dir / f"{name}.log").write_text(f"$ {' '.join(cmd)}\n{out}", encoding="utf-8")
    res: dict = {"ok": rc == 0, "seconds": round(time.perf_counter() - t0, 1)}
    if rc != 0:
        tail = " | ".join(out.strip().splitlines()[-3:])[-400:]
        res["error"] = ("timed out" if rc is None else f"exit {rc}") + ": " + tail
    return res, stdout


# ------------------------------------------------------------------ the Ask step

def ask_step(method: str, timeout: float) -> dict:
    """The Ask page through streamlit.testing, as a visitor runs it: pick the method, click Run,
    time the first node the run stores and the whole run. The browser test draws the same run;
    this needs no browser, which a GPU machine often lacks."""
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=timeout)
    at.run()
    at.switch_page("pages/ask.py")
    at.run()
    at.selectbox(key="ask__m").set_value(method).run()
    t0 = time.perf_counter()
    at.button(key="ask_run").click().run()
    if "ask_batch" not in at.session_state:
        shown = [e.value for e in list(at.exception) + list(at.error) + list(at.warning)]
        raise SystemExit(f"Run started nothing; the page shows: {shown}")
    batch = at.session_state["ask_batch"]
    first = None
    while time.perf_counter() - t0 < timeout:
        if first is None and batch.view(0).nodes:
            first = time.perf_counter() - t0
        if batch.join(0.05):
            break
    total = time.perf_counter() - t0
    at.run()
    js = batch.jobs[0]
    errors = [e.value for e in at.exception] + [e.value for e in at.error]
    if js.status != "finished" or errors:
        raise SystemExit(f"the Ask run ended {js.status!r}: {errors or js.error}")
    from workbench.store import Store
    run = Store().get_run(js.run_id)
    return {"method": method, "status": js.status, "first_node_s": round(first or total, 3),
            "run_s": round(total, 2), "nodes": len(batch.view(0).nodes),
            "llm_calls": run["llm_calls"], "answer": run["answer"], "correct": run["correct"]}


# ------------------------------------------------------------------ the eval step

def eval_figures(store_path: str) -> dict:
    """Per method: mean correct, token F1, LLM calls, tokens and seconds per question."""
    from workbench.eval import queries as Q
    from workbench.store import Store
    st = Store(store_path)
    ev = Q.list_evals(st)[0]
    eid = ev["eval_id"]
    series: dict[str, dict] = {}
    for metric in ("correct", "f1"):
        for r in Q.summary(st, eid, metric):
            series.setdefault(r["series"], {})[metric] = round(r["mean"], 3) if r["mean"] is not None else None
    for r in Q.efficiency(st, eid):
        series.setdefault(r["series"], {}).update(
            {k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items()
             if k not in ("series", "method", "variant")})
    return {"eval_id": eid, "status": ev["status"], "items": f"{ev['n_done']}/{ev['n_planned']}",
            "model": ev.get("model_name"), "series": series}


# ------------------------------------------------------------------ orchestration

def device_facts(py: str) -> dict:
    facts = {"cpus": os.cpu_count(), "machine": platform.machine()}
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        facts["gpu"] = q.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        facts["gpu"] = None
    probe = ("import llama_cpp, json; print(json.dumps({'llama_cpp': llama_cpp.__version__, "
             "'offload': bool(llama_cpp.llama_supports_gpu_offload())}))")
    q = subprocess.run([py, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    facts.update(last_json(q.stdout) or {"llama_cpp_error": q.stderr.strip()[-300:]})
    return facts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dry-run", action="store_true",
                    help="CPU, no offload, the small model, tiny sizes: checks the script itself")
    ap.add_argument("--steps", default=",".join(STEPS), help=f"comma-separated, of {', '.join(STEPS)}")
    ap.add_argument("--questions", type=int, default=10, help="eval: demo questions per method")
    ap.add_argument("--model", default=None, help="bundled name or .gguf path (default: the default model)")
    ap.add_argument("--step-timeout", type=float, default=900.0, help="seconds per step")
    ap.add_argument("--log-dir", default=None, help="where each step's output goes")
    ap.add_argument("--build-seconds", type=float, default=None, help="(from gpu_check.sh)")
    ap.add_argument("--ask", metavar="METHOD", help=argparse.SUPPRESS)   # the Ask step's own process
    args = ap.parse_args()
    if args.ask:
        print(json.dumps(ask_step(args.ask, args.step_timeout)))
        return 0
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    unknown = sorted(set(steps) - set(STEPS))
    if unknown:
        ap.error(f"unknown step(s) {', '.join(unknown)}; choose from {', '.join(STEPS)}")
    if args.questions < 1:
        ap.error("--questions must be at least 1")
    py = sys.executable
    ngl = "0" if args.dry_run else "-1"
    model = args.model or (DRY["model"] if args.dry_run else None)
    log_dir = Path(args.log_dir or tempfile.mkdtemp(prefix="gpu-check-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    store = str(log_dir / "gpu_check.duckdb")
    env = {**os.environ, "WORKBENCH_N_GPU_LAYERS": ngl, "WORKBENCH_STORE": store,
           "WORKBENCH_UI_WARM": "0", "PYTHONUNBUFFERED": "1",
           "STREAMLIT_LOGGER_LEVEL": "warning"}
    if model:
        env["WORKBENCH_MODEL"] = model
    model_args = ["--model", model] if model else []
    questions = DRY["questions"] if args.dry_run else args.questions
    out: dict = {"dry_run": args.dry_run, "n_gpu_layers": int(ngl), "model": model or "default",
                 "device": device_facts(py), "build_s": args.build_seconds, "steps": {}}
    for name in steps:
        print(f"[gpu_check] {name} …", file=sys.stderr, flush=True)
        if name == "ask":
            method = DRY["ask_method"] if args.dry_run else "crp-rag"
            cmd = [py, str(Path(__file__)), "--ask", method, "--step-timeout", str(args.step_timeout)]
        elif name == "eval":
            from workbench.methods import all_methods
            methods = DRY["eval_methods"] if args.dry_run else sorted(all_methods())
            cmd = [py, "-m", "workbench", "eval", "--dataset", "demo", "--split", "test",
                   "--limit", str(questions), "--methods", ",".join(methods), "--judge", "off",
                   "--no-progress",
                   "--label", "gpu_check", "--n-gpu-layers", ngl, *model_args]
        else:
            cmd = [py, str(ROOT / "benchmarks" / f"{name}.py"), "--n-gpu-layers", ngl, *model_args,
                   *ALWAYS.get(name, []), *(DRY[name] if args.dry_run else [])]
        res, stdout = run_step(name, cmd, env, args.step_timeout, log_dir)
        try:     # the eval prints a table: its figures come from the store it wrote
            figures = eval_figures(store) if name == "eval" else last_json(stdout)
        except Exception as e:     # noqa: BLE001  (a failed eval may leave nothing to read)
            figures, res["figures_error"] = None, str(e)[:300]
        if figures is not None:
            res["figures"] = figures
        elif res["ok"]:
            res["ok"], res["error"] = False, "finished without printing its figures"
        out["steps"][name] = res
        print(f"[gpu_check] {name}: {'ok' if res['ok'] else 'FAILED'} in {res['seconds']} s",
              file=sys.stderr, flush=True)
    out["ok"] = all(r["ok"] for r in out["steps"].values())
    out["log_dir"] = str(log_dir)
    print(json.dumps(out, default=str))
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
