"""Who may change what in the UI: one local user, or visitors of a shared workbench.

Local (the default: ``.streamlit/config.toml`` listens on 127.0.0.1 only) the person at
the browser is the person who started the app, and Settings are one file, as they
always were.

Shared (``WORKBENCH_SHARED=1``, or a server that listens beyond loopback whatever the
environment says) every browser is a visitor:

* host-level settings (backend, model file, server, GPU layers, threads, context, batch,
  seed, process isolation, store: the host's files, network and machine) are read-only;
  the host changes them in settings.json or with environment variables, or in a browser
  session unlocked with the token in ``WORKBENCH_ADMIN_TOKEN``;
* per-session choices (a bundled model that is installed, retriever, k, dataset) live in
  that browser session's ``st.session_state`` and are never written to the file, so one
  visitor's choice never changes another's;
* host-level actions on the other pages (deleting runs or annotations, starting or
  resuming an eval, building a retrieval index, restarting the model) are the host's
  too: :func:`host_only` says whether this session may do one, and what a visitor sees
  instead. Asking, comparing, browsing and annotating stay open to every visitor.

Every page gets its settings from :func:`current` (through ``widgets.setup_page``).
"""
from __future__ import annotations

import dataclasses
import hmac
import os
from typing import Any

import streamlit as st

from .. import config as cfgmod
from .. import settings as settings_mod

SHARED_ENV = "WORKBENCH_SHARED"
TOKEN_ENV = "WORKBENCH_ADMIN_TOKEN"
MIN_TOKEN_LEN = 16          # shorter tokens are guessable; the unlock is then off

SESSION_FIELDS = ("model", "retriever", "k", "dataset")
_SESSION_KEY = "_wb_session_settings"
_ADMIN_KEY = "_wb_admin"
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _truthy(v: str | None) -> bool:
    return (v or "").strip().lower() in ("1", "true", "yes", "on")


def _server_address() -> str | None:
    """The address the Streamlit server listens on ("" = every interface); None when no
    server runs in this process (AppTest, the library used on its own)."""
    try:
        from streamlit import config
        from streamlit.runtime import Runtime
        if not Runtime.exists() or type(Runtime._instance).__name__ in ("MagicMock", "Mock"):
            return None
        return str(config.get_option("server.address") or "")
    except Exception:      # noqa: BLE001 - no server, no address
        return None


def shared() -> bool:
    """Whether browsers here are visitors. Listening beyond loopback counts as shared even
    without the variable: started with --server.address 0.0.0.0 by mistake, the app must
    not hand the host's settings to the room."""
    if _truthy(os.environ.get(SHARED_ENV)):
        return True
    addr = _server_address()
    return addr is not None and addr not in _LOOPBACK


def admin_token() -> str | None:
    token = os.environ.get(TOKEN_ENV, "")
    return token if len(token) >= MIN_TOKEN_LEN else None


def unlock(entered: str) -> bool:
    """Unlock host settings for this browser session when ``entered`` is the admin token."""
    token = admin_token()
    ok = token is not None and hmac.compare_digest(entered.encode(), token.encode())
    if ok:
        st.session_state[_ADMIN_KEY] = True
    return ok


def lock() -> None:
    st.session_state.pop(_ADMIN_KEY, None)


def is_admin() -> bool:
    return st.session_state.get(_ADMIN_KEY) is True


def can_edit_host() -> bool:
    """Whether this browser session may change host-level settings (and write the file)."""
    return not shared() or is_admin()


HOST_ONLY_NOTE = "host only in shared mode: unlock on Settings"


def host_only(label: str, *, note: bool = True) -> bool:
    """Whether this browser session may do the host-level action ``label`` ("Deleting
    runs", "Starting an eval"): always in local mode; in shared mode only in a session
    unlocked with the admin token. When it may not, a caption in place says
    ``label: host only in shared mode: unlock on Settings`` (``note=False``: nothing).

    Call it once where the control is drawn, disable (or leave out) the control when it
    says False, and require the same answer where the action runs: a browser can send a
    click for a disabled button, so a widget value alone never deletes or starts anything.
    """
    if can_edit_host():
        return True
    if note:
        st.caption(f":material/lock: {label}: {HOST_ONLY_NOTE}")
    return False


def session_models(host: Any) -> list[str]:
    """The models a visitor may pick: the host's own choice and the installed bundled ones
    (never a path: a path is the host's decision)."""
    from ..llm.registry import BUNDLED
    out = [host.model]
    out += [n for n, m in BUNDLED.items() if n != host.model and m.installed]
    return out


def _valid(name: str, value: Any, host: Any) -> bool:
    spec = {k.name: k for k in cfgmod.knobs(settings_mod.Settings)}.get(name)
    if name == "model":
        return value in session_models(host)
    if name == "dataset":              # a listed one: the name becomes a path when loaded
        from . import data as uidata
        return isinstance(value, str) and value in uidata.dataset_names(host.dataset)
    if spec is not None and spec.choices:
        return value in spec.choices
    if name == "k":
        return isinstance(value, int) and spec.min <= value <= spec.max
    return False


def choose(host: Any, values: dict[str, Any]) -> list[str]:
    """Keep per-session choices for this browser session; returns the fields refused (a
    host-level field, or a value outside what a visitor may pick)."""
    mine = dict(st.session_state.get(_SESSION_KEY) or {})
    refused = []
    for k, v in values.items():
        if k in SESSION_FIELDS and _valid(k, v, host):
            if v == getattr(host, k):
                mine.pop(k, None)          # the host's value: follow it if the host changes it
            else:
                mine[k] = v
        else:
            refused.append(k)
    st.session_state[_SESSION_KEY] = mine
    return refused


def forget_session_choices() -> None:
    st.session_state.pop(_SESSION_KEY, None)


def current() -> Any:
    """The settings this browser session runs with: the host's file, and in shared mode
    this session's own choices on top (checked again: the host may have changed)."""
    host = settings_mod.load()
    if not shared():
        return host
    mine = st.session_state.get(_SESSION_KEY) or {}
    ok = {k: v for k, v in mine.items() if k in SESSION_FIELDS and _valid(k, v, host)}
    return dataclasses.replace(host, **ok) if ok else host
