"""Several people, one model, in a real browser: three sessions of one shared
`streamlit run` (WORKBENCH_SHARED=1) ask at nearly the same moment; the ones that wait for
the shared model say so, with their place in line, and all three finish. Then one visitor
changes Settings, and the change stays in that visitor's session.

The smallest bundled model (smollm2-135m) keeps this to a minute or two on 2 cores; what
is tested is the waiting, not the answers.
"""
from __future__ import annotations

import json
import os
import re
import time

import pytest

from pathlib import Path

from tests.test_browser_e2e import (ARTIFACTS, CHROMIUM, Server, _nav, _model_available,  # noqa: F401
                                    _nodes_drawn, _pick, _settled, browser)

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"{CHROMIUM} is absent (install Debian's chromium "
                                       f"package, or run scripts/setup.sh --with-browser)")

MODEL = "smollm2-135m"
# One LLM call a run keeps the test short; the three clicks take well under a run's time,
# so the second and third sessions find the model taken.
METHOD = os.environ.get("WORKBENCH_E2E_SHARED_METHOD", "Standard RAG")
PLACE = re.compile(r"Waiting for the model: (\d+)(?:st|nd|rd|th) in line, (\d+) runs? ahead")


def _status(page) -> str:
    """The run's status word on the Ask page ("waiting", "running", "finished", ...)."""
    txt = " ".join(page.locator("[data-testid=stMarkdownContainer]").all_inner_texts())
    m = re.search(r"\b(starting|waiting|running|finished|refused|failed|interrupted)\b · phase",
                  txt)
    return m.group(1) if m else ""


def _retriever_shown(page) -> str:
    _nav(page, "Settings")
    box = page.locator("[data-testid=stSelectbox]").filter(
        has=page.locator("label", has_text="Default retriever")).first
    box.wait_for(timeout=60_000)
    _settled(page)
    # The chosen option is drawn as text in some Streamlit versions, as the value of the
    # select's input in others.
    inputs = box.locator("input")
    return " ".join([box.inner_text()] + [inputs.nth(i).input_value()
                                          for i in range(inputs.count())])


def _settings_stay_in_their_session(visitor, other, settings_file: Path) -> None:
    """A visitor's Save changes that visitor's session, not another's, nor the host's file."""
    assert "bm25" in _retriever_shown(visitor)
    _pick(visitor, "Default retriever", "dense")
    visitor.get_by_role("button", name="Save", exact=True).click()
    visitor.get_by_text("Saved for this browser session").first.wait_for(timeout=30_000)
    _nav(visitor, "Ask")
    assert "dense" in _retriever_shown(visitor)          # kept across pages of the session
    assert "bm25" in _retriever_shown(other)
    assert json.loads(settings_file.read_text())["retriever"] == "bm25"


def test_three_sessions_share_the_model_in_turn(browser, tmp_path):
    if not _model_available(MODEL):
        pytest.skip(f"the bundled model {MODEL} or llama-cpp-python is not installed")
    from workbench.datasets import list_datasets
    if not any(d.get("name") == "demo" for d in list_datasets()):
        pytest.skip("the demo world (data/demo/*.jsonl) is not built")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    # one llama.cpp thread: beside a server and three pages on 2 cores, two threads wait on
    # each other (see test_browser_walk.py)
    (tmp_path / "settings.json").write_text(json.dumps({"retriever": "bm25", "model": MODEL,
                                                        "n_threads": 1}))
    srv = Server(tmp_path, {"WORKBENCH_SHARED": "1"})
    ctx = [browser.new_context(viewport={"width": 1280, "height": 800}) for _ in range(3)]
    pages = [c.new_page() for c in ctx]
    try:
        # Load the model once, in the first session (what "Load model now" is for).
        pages[0].goto(srv.url + "/")
        pages[0].get_by_text("RAG Reasoning Workbench").first.wait_for(timeout=90_000)
        _nav(pages[0], "Settings")
        pages[0].get_by_role("button", name="Load model now").click(timeout=60_000)
        pages[0].get_by_text("Model loaded in").wait_for(timeout=180_000)
        pages[0].get_by_text("Warm-up:").wait_for(timeout=300_000)
        for p in pages:
            p.goto(srv.url + "/ask")
            p.get_by_role("button", name="Run", exact=True).wait_for(timeout=60_000)
            _pick(p, "Method", METHOD)
            _settled(p)
        # All three, one click after another. The first finds the model free: how soon its
        # first node appears is what a person alone sees.
        clicked = []
        for p in pages:
            p.get_by_role("button", name="Run", exact=True).click(no_wait_after=True)
            clicked.append(time.perf_counter())
        started = clicked[0]
        first_node: dict[int, float] = {}
        places: dict[int, set[int]] = {i: set() for i in range(3)}
        cancels: set[int] = set()
        done: dict[int, float] = {}
        active: set[int] = set()      # a page shows its run's status only once it started
        deadline = time.time() + 240
        while len(done) < 3 and time.time() < deadline:
            for i, p in enumerate(pages):
                if i in done:
                    continue
                for txt in p.locator("[data-testid=stAlertContentInfo]").all_inner_texts():
                    m = PLACE.search(txt)
                    if m:
                        place, ahead = int(m.group(1)), int(m.group(2))
                        assert place == ahead + 1, txt
                        places[i].add(place)
                        if p.get_by_role("button", name="Cancel", exact=True).count():
                            cancels.add(i)
                if i not in first_node and _nodes_drawn(p)[0] > 0:
                    first_node[i] = time.perf_counter() - clicked[i]
                status = _status(p)
                if status in ("starting", "waiting", "running"):
                    active.add(i)
                elif i in active and status in ("finished", "refused", "failed", "interrupted"):
                    done[i] = time.perf_counter() - started
            pages[0].wait_for_timeout(100)
        # a page on a loaded machine may show "finished" before its graph frame has drawn
        # (the run itself was quick): give each such page its graph, timed from its click
        for i, p in enumerate(pages):
            until = time.time() + 60
            while i not in first_node and time.time() < until:
                if _nodes_drawn(p)[0] > 0:
                    first_node[i] = time.perf_counter() - clicked[i]
                else:
                    p.wait_for_timeout(200)
        for i, p in enumerate(pages):
            p.screenshot(path=str(ARTIFACTS / f"e2e_shared_{i}.png"))
        statuses = [_status(p) for p in pages]
        if len(done) < 3:
            # a page that stopped redrawing, or a run that hangs: the server's frames say which
            ours = srv.dump_stacks("e2e_shared_stacks.txt")
            raise AssertionError(f"not all three finished in 240 s: {statuses}; the server's "
                                 f"threads in workbench code (whole dump in "
                                 f"tests/artifacts/e2e_shared_stacks.txt):\n{ours}")
        assert set(statuses) <= {"finished", "refused"}, statuses
        waited = [i for i in range(3) if places[i]]
        assert len(waited) >= 2, f"the sessions behind the first never showed a place: {places}"
        assert any(2 in places[i] for i in waited), places
        assert any(3 in places[i] for i in waited), places
        assert set(waited) <= cancels, "a waiting session had no Cancel button"
        alone = [i for i in range(3) if not places[i]]
        assert len(alone) == 1 and alone[0] in first_node, (places, first_node)
        # No bound and no order on the first nodes here: with three Chromium pages redrawing
        # on 2 cores a page has taken 36-52 s to show a node, a waiting one sooner than the
        # one that ran first. How soon a run that does not wait stores its first node is
        # timed by tests/test_model_queue.py; this test records what the pages showed.
        _settings_stay_in_their_session(pages[1], pages[2], tmp_path / "settings.json")
        (ARTIFACTS / "e2e_shared_timing.json").write_text(json.dumps(
            {"method": METHOD, "model": MODEL,
             "first_node_s": {str(i): round(s, 2) for i, s in sorted(first_node.items())},
             "together_s": {str(i): round(s, 2) for i, s in sorted(done.items())},
             "places_seen": {str(i): sorted(v) for i, v in places.items()}}, indent=1))
        print(f"first node (s) {first_node}; finished after (s) {done}; places seen {places}")
    finally:
        for c in ctx:
            c.close()
        srv.stop()
