"""Limits the person who started the workbench sets, and the UI may not widen.

Two things a browser must not be able to aim anywhere it likes:

* the model server: the backend POSTs prompts to the server URL, so a URL typed in the
  UI could point the host at its own internal services (127.0.0.1 included: that is
  the target, not a safe default). ``WORKBENCH_SERVER_URLS`` (comma-separated base URLs)
  is the host's allow-list; when it is set, no other URL is used, by the UI or the CLI.
* the store file: DuckDB creates the file and its folders, so a store path chosen in the
  UI must lie under the workbench home. A store elsewhere is the host's decision:
  ``WORKBENCH_STORE`` or the ``store`` entry of settings.json.
"""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from . import paths

SERVER_URLS_ENV = "WORKBENCH_SERVER_URLS"


class PolicyError(ValueError):
    """A choice the host's limits do not allow; the message says what to do instead."""


def _norm(url: str) -> str:
    return url.strip().rstrip("/")


def allowed_server_urls() -> list[str] | None:
    """The host's allow-list of server base URLs, or None when the host set none."""
    urls = [_norm(u) for u in os.environ.get(SERVER_URLS_ENV, "").split(",") if u.strip()]
    return urls or None


def check_server_url(url: str) -> str:
    """The URL, normalised, when it is an http(s) URL the host allows; PolicyError otherwise."""
    u = _norm(url)
    parts = urlsplit(u)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PolicyError(f"Server URL {u!r} is not an http(s) URL; give the server's base URL, "
                          f"e.g. http://127.0.0.1:8080/v1.")
    allowed = allowed_server_urls()
    if allowed is not None and u not in allowed:
        raise PolicyError(f"Server URL {u} is not in the host's {SERVER_URLS_ENV} list; choose "
                          f"one of {', '.join(allowed)} (the host adds others there).")
    return u


def check_ui_store_path(chosen: str) -> Path:
    """A store file named in the UI: a path under the workbench home (resolved the way the
    store resolves it, so '..' and symbolic links cannot climb out)."""
    home = paths.home().resolve()
    p = Path(chosen).expanduser()
    resolved = p.resolve()
    if not resolved.is_relative_to(home):
        raise PolicyError(f"Store file {p} is outside the workbench home {home}; choose a file "
                          f"under it (a store elsewhere is set by the host with WORKBENCH_STORE "
                          f"or in settings.json).")
    return p
