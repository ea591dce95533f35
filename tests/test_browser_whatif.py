"""Browser test of the Counterfactual tab (`streamlit run` + headless Chromium), on the toy
plug-in dataset with the scripted backend: a stored run opened on Runs, one evidence item of
step s0 dropped, the counterfactual run; then the side-by-side view of original and
counterfactual, and the leave-one-out heat strip on the original's evidence. Screenshots go
to docs/img/ (counterfactual_side_by_side.png, attribution_heat_strip.png); passages and
model output carry payloads, and nothing may execute."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.test_browser_e2e import (ARTIFACTS, CHROMIUM, ROOT, Server, _assert_inert,  # noqa: F401
                                    _graph_frame, _open_tab, _page, _pick, _settled, browser)

IMG = ROOT / "docs" / "img"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"{CHROMIUM} is absent (install Debian's chromium "
                                       f"package, or run scripts/setup.sh --with-browser)")


def _wait_text(page, text: str, timeout: float = 60.0):
    loc = page.get_by_text(text).first
    try:
        loc.wait_for(timeout=timeout * 1000)
    except Exception:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "e2e_whatif_failure.png"))
        raise
    return loc


def test_counterfactual_side_by_side_and_heat_strip(browser, tmp_path, monkeypatch):
    from tests import test_whatif_view as V
    from workbench.ui import backend
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(V.rules()))
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path))
    monkeypatch.setenv("WORKBENCH_SCRIPTED_TABLE", str(rules))
    rid = V.stored_run(backend.scripted_backend())       # the model the server will load
    (tmp_path / "settings.json").write_text(json.dumps({"dataset": "ui-toy",
                                                        "backend": "scripted"}))
    srv = Server(tmp_path, {"WORKBENCH_UI_PLUGINS": "tests.test_ui_support,tests.test_whatif_view",
                            "WORKBENCH_SCRIPTED_TABLE": str(rules), "WORKBENCH_UI_WARM": "0"})
    page = _page(browser)
    IMG.mkdir(parents=True, exist_ok=True)
    try:
        page.set_viewport_size({"width": 1280, "height": 1500})
        page.goto(srv.url + f"/runs?run={rid}")
        _wait_text(page, "Replay: rebuild the graph", 90)
        _open_tab(page, "Counterfactual", 60)
        _pick(page, "Node to change", "s0 ·")
        page.locator("[data-testid=stCheckbox]").filter(has_text="p1").first.click()
        _settled(page)
        page.get_by_role("button", name="Run counterfactual").click()
        _wait_text(page, "Counterfactual of run", 60)
        _wait_text(page, "Fresh calls", 30)
        _settled(page)
        _graph_frame(page, 60)
        time.sleep(1.5)                                   # let the graphs settle
        assert page.get_by_text(V.WRONG).count() >= 1
        assert page.get_by_text("Dropped evidence p1 from node s0").count() >= 1
        page.screenshot(path=str(IMG / "counterfactual_side_by_side.png"))
        _assert_inert(page)
        # the original again, its Counterfactual tab in front on s0: what does it depend on?
        page.get_by_role("button", name="Open the original run").click()
        page.get_by_text("Counterfactual of run").first.wait_for(state="detached",
                                                                 timeout=60_000)
        _wait_text(page, rid, 60)
        button = page.get_by_role("button", name="Which of these does the answer depend on?").first
        button.wait_for(timeout=60_000)
        _settled(page)
        button.click()
        strip = _wait_text(page, "What the answer depends on", 60)
        _settled(page)
        strip.scroll_into_view_if_needed()
        time.sleep(1.0)
        page.screenshot(path=str(IMG / "attribution_heat_strip.png"))
        cells = page.locator(".wb-attr-cell")
        assert cells.count() == 3, [cells.nth(i).inner_text() for i in range(cells.count())]
        _assert_inert(page)
    finally:
        page.close()
        srv.stop()
