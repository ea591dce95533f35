"""Screenshot of Evaluate → Results → node-level calibration for a stored eval.

The README's image comes from a real eval: the browser test's scripted eval checks that the
view works but has too few labelled nodes for any number. The app runs on a copy of the
home, so the store it reads is left as it was.

    .venv/bin/python scripts/screenshot_calibration.py --home DIR --eval EVAL_ID \\
        [--method par-rag] [--out docs/img/evaluate_calibration.png]
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_browser_e2e import (ARGS, CHROMIUM, Server, _calibration_panel,  # noqa: E402
                                    _nav, _open_tab, _page, _pick)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", required=True, help="WORKBENCH_HOME holding the eval")
    ap.add_argument("--eval", required=True, dest="eval_id")
    ap.add_argument("--method", default=None, help="the method whose node signals to show")
    ap.add_argument("--out", default=str(ROOT / "docs" / "img" / "evaluate_calibration.png"))
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright
    with tempfile.TemporaryDirectory(prefix="wb-shot-") as tmp:
        home = Path(tmp) / "home"
        shutil.copytree(args.home, home, ignore=shutil.ignore_patterns("cache"))
        srv = Server(home, {})
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                page = _page(browser)
                page.set_viewport_size({"width": 1280, "height": 1450})
                page.goto(srv.url + "/")
                page.get_by_text("RAG Reasoning Workbench").first.wait_for(timeout=90_000)
                _nav(page, "Evaluate")
                _open_tab(page, "Results", 60)
                _pick(page, re.compile("^Eval$"), args.eval_id)   # not "Eval split" etc.
                _calibration_panel(page, Path(args.out).resolve(), args.method)
                browser.close()
        finally:
            srv.stop()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
