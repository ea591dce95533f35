"""Safe to share: local by default, visitors of a shared workbench cannot change the
host's settings (or each other's), untrusted model paths / store paths / server URLs are
refused, and the graph component is served from a folder only this user can write."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import tomllib
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests import test_ui_support as S
from workbench import settings as settings_mod
from workbench.llm.base import LLMError, ModelFileError
from workbench.ui import backend

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "streamlit_app.py")
TOKEN = "correct-horse-battery-staple-42"


def _within(seconds: float, fn, *args):
    """fn(*args) in a thread: its result or exception, or a failure if it is still running
    (a read of /dev/zero or an open of a FIFO never returns)."""
    out: dict = {}

    def go():
        try:
            out["value"] = fn(*args)
        except BaseException as e:      # noqa: BLE001 - handed to the test
            out["error"] = e

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"{getattr(fn, '__name__', fn)} still running after {seconds} s"
    return out


# ------------------------------------------------------------------ 1. local by default

def test_the_app_listens_on_loopback_unless_started_otherwise():
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert cfg["server"]["address"] == "127.0.0.1"


def test_shared_mode_is_on_by_variable_or_by_listening_beyond_loopback(monkeypatch):
    from workbench.ui import access
    monkeypatch.delenv("WORKBENCH_SHARED", raising=False)
    monkeypatch.setattr(access, "_server_address", lambda: "127.0.0.1")
    assert not access.shared()
    monkeypatch.setattr(access, "_server_address", lambda: None)       # no server (CLI, tests)
    assert not access.shared()
    for addr in ("0.0.0.0", "", "192.168.1.20"):                         # "" = every interface
        monkeypatch.setattr(access, "_server_address", lambda a=addr: a)
        assert access.shared(), addr
    monkeypatch.setattr(access, "_server_address", lambda: "127.0.0.1")
    monkeypatch.setenv("WORKBENCH_SHARED", "1")
    assert access.shared()


def test_the_listen_address_is_read_from_the_running_server(monkeypatch):
    from streamlit import config
    from streamlit.runtime import Runtime
    from workbench.ui import access
    monkeypatch.delenv("WORKBENCH_SHARED", raising=False)
    assert access._server_address() is None            # no server in this process
    monkeypatch.setattr(Runtime, "_instance", object(), raising=False)
    monkeypatch.setattr(Runtime, "exists", classmethod(lambda cls: True))
    get = config.get_option
    for opt, want in (("0.0.0.0", True), (None, True), ("127.0.0.1", False)):
        monkeypatch.setattr(config, "get_option",
                            lambda k, o=opt: o if k == "server.address" else get(k))
        assert access.shared() is want, opt


@pytest.fixture
def ui(isolated_home, monkeypatch):
    with S.toy_ui(monkeypatch):
        yield isolated_home


@pytest.fixture
def shared(ui, monkeypatch):
    monkeypatch.setenv("WORKBENCH_SHARED", "1")
    monkeypatch.delenv("WORKBENCH_ADMIN_TOKEN", raising=False)
    return ui


def settings_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("pages/settings.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def keys(at: AppTest) -> set:
    widgets = (list(at.text_input) + list(at.selectbox) + list(at.number_input)
               + list(at.toggle) + list(at.button))
    return {w.key for w in widgets}


def save(at: AppTest) -> AppTest:
    next(b for b in at.button if b.key == "set__save").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


HOST_WIDGETS = {"set__backend", "set__model_path", "set__n_gpu_layers", "set__n_ctx",
                "set__n_threads", "set__n_batch", "set__seed", "set__isolate", "set__url",
                "set__smodel", "set__store"}


def test_a_visitor_sees_host_settings_read_only(shared):
    at = settings_page()
    assert not (keys(at) & HOST_WIDGETS), keys(at) & HOST_WIDGETS
    pick = at.selectbox(key="set__model_pick")
    assert "Other .gguf file…" not in pick.options                    # no path for visitors
    assert any("shared" in i.value for i in at.info)
    table = at.dataframe[0].value
    assert "n_gpu_layers" in set(table["setting"])


def test_a_visitors_choices_stay_in_their_session(shared):
    before = json.loads(settings_mod.settings_file().read_text())
    a = settings_page()
    a.number_input(key="set__k").set_value(9).run()
    a.selectbox(key="set__ret").set_value("bm25").run()
    save(a)
    assert not a.error, [e.value for e in a.error]
    assert json.loads(settings_mod.settings_file().read_text()) == before    # the file: untouched
    a.run()
    assert a.number_input(key="set__k").value == 9                  # this session keeps it
    b = settings_page()                                               # another visitor
    assert b.number_input(key="set__k").value == before["k"]
    assert b.selectbox(key="set__ret").value == before["retriever"]


def test_a_visitor_cannot_set_host_fields_even_by_forging_them(shared):
    """The browser can send any value for any widget id; what a visitor saves is filtered
    on the server, and the session layer refuses host fields and model paths."""
    at = AppTest.from_function(_forge, default_timeout=30)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["refused"] == ["store", "n_gpu_layers", "model", "server_url",
                                           "dataset", "k"]
    assert at.session_state["now"] == settings_mod.load().__dict__


def _forge():
    import streamlit as st
    from workbench import settings as settings_mod
    from workbench.ui import access
    host = settings_mod.load()
    st.session_state["refused"] = access.choose(
        host, {"store": "/tmp/x.duckdb", "n_gpu_layers": -1, "model": "/dev/zero",
               "server_url": "http://127.0.0.1:1/internal-admin", "dataset": "../../etc",
               "k": 10_000})
    st.session_state["_wb_session_settings"]["n_threads"] = 64    # even if it got in somehow
    st.session_state["now"] = access.current().__dict__


def test_the_admin_token_unlocks_host_settings_for_that_session_only(shared, monkeypatch):
    monkeypatch.setenv("WORKBENCH_ADMIN_TOKEN", TOKEN)
    at = settings_page()
    at.text_input(key="set__token").input("wrong-token-wrong-token").run()
    next(b for b in at.button if b.key == "set__unlock").click().run()
    assert any("not the admin token" in e.value for e in at.error)
    assert not (keys(at) & HOST_WIDGETS)
    at.text_input(key="set__token").input(TOKEN).run()
    next(b for b in at.button if b.key == "set__unlock").click().run()
    assert {"set__backend", "set__store", "set__n_ctx"} <= keys(at)
    assert at.session_state["set__token"] == ""                 # not kept in the session
    at.number_input(key="set__n_ctx").set_value(2048).run()
    save(at)
    assert settings_mod.load().n_ctx == 2048                     # the host's file
    assert not (keys(settings_page()) & HOST_WIDGETS)            # another browser: still locked


def test_a_short_admin_token_does_not_unlock(shared, monkeypatch):
    monkeypatch.setenv("WORKBENCH_ADMIN_TOKEN", "1234")
    at = settings_page()
    assert "set__token" not in keys(at)


# ------------------------------------------------------------------ 2. model files

def _fifo(tmp_path: Path) -> Path:
    p = tmp_path / "x.gguf"
    os.mkfifo(p)
    return p


def _bad_model_paths(tmp_path: Path) -> dict[str, Path]:
    txt = tmp_path / "secret.gguf"
    txt.write_text("SECRET-CONTENTS of some file")
    d = tmp_path / "folder.gguf"
    d.mkdir()
    return {"device": Path("/dev/zero"), "pipe": _fifo(tmp_path), "folder": d,
            "not a GGUF": txt}


@pytest.mark.parametrize("what", ["resolve", "sha256_of", "read_header", "load_backend"])
def test_devices_fifos_folders_and_other_files_are_refused_before_reading(tmp_path, what):
    from workbench.llm import gguf, registry
    calls = {"resolve": registry.resolve, "sha256_of": registry.sha256_of,
             "read_header": gguf.read_header,
             "load_backend": lambda p: registry.load_backend(
                 settings_mod.Settings(model=str(p)), shared=False)}
    for kind, p in _bad_model_paths(tmp_path).items():
        out = _within(10, calls[what], p)
        err = out.get("error")
        assert isinstance(err, ModelFileError), (kind, out)
        msg = str(err)
        assert str(p) in msg and "\n" not in msg, msg
        assert "SECRET" not in msg and "\\x00" not in msg, msg
        word = {"device": "device", "pipe": "pipe", "folder": "folder", "not a GGUF": "not a GGUF"}
        assert word[kind] in msg, msg


def test_cli_refuses_dev_zero_and_a_fifo_at_once(tmp_path):
    env = {**os.environ, "WORKBENCH_HOME": str(tmp_path / "home")}
    for p in ("/dev/zero", str(_fifo(tmp_path))):
        try:
            r = subprocess.run([sys.executable, "-m", "workbench", "ask", "Q?", "--model", p],
                               cwd=ROOT, env=env, capture_output=True, text=True, timeout=90)
        except subprocess.TimeoutExpired:
            pytest.fail(f"`workbench ask --model {p}` hung")
        assert r.returncode != 0
        assert p in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_settings_refuses_a_device_or_fifo_as_model(ui, tmp_path):
    backend.clear_override()
    before = settings_mod.load().model
    at = settings_page()
    at.selectbox(key="set__model_pick").set_value("Other .gguf file…").run()
    for p in (_fifo(tmp_path), Path("/dev/zero")):
        at.text_input(key="set__model_path").input(str(p)).run()
        assert any(str(p) in w.value for w in at.warning)
        save(at)
        assert any(str(p) in e.value for e in at.error)
        assert settings_mod.load().model == before


# ------------------------------------------------------------------ 2. store paths

def test_settings_refuses_a_store_outside_the_home(ui, tmp_path):
    at = settings_page()
    outside = tmp_path / "any" / "new" / "dir" / "runs.duckdb"
    at.text_input(key="set__store").input(str(outside)).run()
    save(at)
    assert any("outside the workbench home" in e.value for e in at.error)
    assert settings_mod.load().store == "" and not (tmp_path / "any").exists()
    sneaky = ui / ".." / "escape" / "runs.duckdb"                     # '..' climbs out
    at.text_input(key="set__store").input(str(sneaky)).run()
    save(at)
    assert settings_mod.load().store == ""
    inside = ui / "stores" / "runs.duckdb"
    at.text_input(key="set__store").input(str(inside)).run()
    save(at)
    assert not at.error and settings_mod.load().store == str(inside)


def test_a_host_set_store_outside_the_home_stays_usable(ui, tmp_path):
    s = settings_mod.load()
    s.store = str(tmp_path / "host" / "runs.duckdb")     # the host edited settings.json
    settings_mod.save(s)
    at = settings_page()
    at.number_input(key="set__k").set_value(8).run()
    save(at)
    assert not at.error and settings_mod.load().k == 8 and settings_mod.load().store == s.store


# ------------------------------------------------------------------ 2. server URLs

class _Recorder(BaseHTTPRequestHandler):
    hits: list = []
    mode = "error"

    def log_message(self, *a):
        pass

    def do_POST(self):
        _Recorder.hits.append(self.path)
        if self.path.startswith("/elsewhere"):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"{}")
            return
        if _Recorder.mode == "redirect":
            self.send_response(307)
            self.send_header("Location", "/elsewhere")
            self.end_headers()
            return
        body = b"SECRET-ADMIN-PAGE token=abc123"
        self.send_response(500 if _Recorder.mode == "error" else 200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def recorder():
    srv = HTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    _Recorder.hits = []
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


@pytest.mark.parametrize("mode", ["error", "html"])
def test_server_answers_are_never_echoed(recorder, mode):
    from workbench.llm.openai_compat import OpenAICompatBackend
    _Recorder.mode = mode
    be = OpenAICompatBackend(recorder + "/internal-admin", "m", timeout=5)
    with pytest.raises(LLMError) as e:
        be.generate([{"role": "user", "content": "q"}])
    msg = str(e.value)
    assert "SECRET" not in msg and "abc123" not in msg, msg
    assert ("HTTP 500" if mode == "error" else "HTTP 200") in msg


def test_server_redirects_are_not_followed(recorder):
    from workbench.llm.openai_compat import OpenAICompatBackend
    _Recorder.mode = "redirect"
    with pytest.raises(LLMError):
        OpenAICompatBackend(recorder + "/v1", "m", timeout=5).generate("q")
    assert not any(h.startswith("/elsewhere") for h in _Recorder.hits), _Recorder.hits


def test_only_allow_listed_server_urls_are_called(recorder, monkeypatch):
    from workbench import host_policy
    from workbench.llm import registry
    monkeypatch.setenv("WORKBENCH_SERVER_URLS", "http://127.0.0.1:8080/v1, https://llm.lab/v1/")
    assert host_policy.allowed_server_urls() == ["http://127.0.0.1:8080/v1", "https://llm.lab/v1"]
    assert host_policy.check_server_url("https://llm.lab/v1/") == "https://llm.lab/v1"
    for bad in (recorder + "/internal-admin", "file:///etc/passwd", "http://127.0.0.1:8080/v1/x"):
        with pytest.raises(host_policy.PolicyError):
            host_policy.check_server_url(bad)
    s = settings_mod.Settings(backend="openai_compat", server_url=recorder + "/internal-admin")
    with pytest.raises(LLMError, match="WORKBENCH_SERVER_URLS"):
        registry.load_backend(s, shared=False).generate("q")
    assert _Recorder.hits == []                        # nothing was sent there


def test_settings_offers_only_allow_listed_urls_when_the_host_set_a_list(ui, monkeypatch):
    monkeypatch.setenv("WORKBENCH_SERVER_URLS", "http://127.0.0.1:8080/v1,http://gpu-box:8000/v1")
    at = settings_page()
    at.selectbox(key="set__backend").set_value("openai_compat").run()
    assert at.selectbox(key="set__url").options == ["http://127.0.0.1:8080/v1",
                                                    "http://gpu-box:8000/v1"]


# ------------------------------------------------------------------ 3. the graph component

def _old_predictable_dir() -> Path:
    """Where the component used to live: any local user could create it first."""
    import hashlib
    from workbench.ui.component import _INDEX
    from workbench.viz.graph import GRAPH_CSS, GRAPH_JS, vis_js_path
    html = _INDEX.replace("%(csp)s\n", "") % {"css": GRAPH_CSS, "js": GRAPH_JS}
    digest = hashlib.sha256(html.encode() + str(vis_js_path().stat().st_size).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"workbench-graph-component-{digest}"


def test_a_planted_component_folder_is_never_served(monkeypatch):
    from workbench.ui import component
    monkeypatch.setattr(component, "_DIR", None, raising=False)
    old = _old_predictable_dir()
    old.mkdir(exist_ok=True)
    evil = b"<script>parent.document.title='pwned'</script>"
    for name in ("index.html", "vis-network.min.js"):
        (old / name).write_bytes(evil)
    try:
        d = component.component_dir()
        assert d != old and d.parent == Path(tempfile.gettempdir())
        assert not d.name.startswith("workbench-graph-component-")
        assert (os.stat(d).st_mode & 0o777) == 0o700 and os.stat(d).st_uid == os.getuid()
        assert (d / "index.html").read_bytes() == component._files()["index.html"]
        assert evil not in (d / "vis-network.min.js").read_bytes()
    finally:
        for name in ("index.html", "vis-network.min.js"):
            (old / name).unlink(missing_ok=True)
        old.rmdir()


@pytest.mark.parametrize("tamper", ["content", "extra file", "mode", "symlink", "owner"])
def test_a_tampered_component_folder_is_replaced(monkeypatch, tmp_path, tamper):
    from workbench.ui import component
    monkeypatch.setattr(component, "_DIR", None, raising=False)
    d = component.component_dir()
    if tamper == "content":
        (d / "index.html").write_bytes(b"<script>alert(1)</script>")
    elif tamper == "extra file":
        (d / "evil.js").write_text("alert(1)")
    elif tamper == "mode":
        os.chmod(d, 0o777)
    elif tamper == "symlink":
        (tmp_path / "index.html").write_bytes(component._files()["index.html"])
        (d / "index.html").unlink()
        (d / "index.html").symlink_to(tmp_path / "index.html")
    elif tamper == "owner":
        if os.getuid() != 0:
            pytest.skip("changing a folder's owner needs root")
        os.chown(d, 65534, -1)
    fresh = component.component_dir()
    assert fresh != d
    assert sorted(os.listdir(fresh)) == ["index.html", "vis-network.min.js"]
    assert (fresh / "index.html").read_bytes() == component._files()["index.html"]


def test_the_component_page_allows_only_its_own_scripts():
    """Streamlit's iframe sandbox is fixed (scripts + same-origin); the page's CSP narrows
    what runs in it to the vis-network file and the inline script it was built with."""
    import base64
    import hashlib
    import re
    from workbench.ui import component
    html = component.index_html()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    inline = html.rsplit("<script>", 1)[1].split("</script>", 1)[0]
    digest = base64.b64encode(hashlib.sha256(inline.encode()).digest()).decode()
    rules = dict(r.strip().split(" ", 1) for r in csp.split(";"))
    assert rules["script-src"] == f"'self' 'sha256-{digest}'"
    assert rules["default-src"] == "'none'" and rules["connect-src"] == "'none'"
    assert "unsafe-eval" not in csp and "*" not in csp
