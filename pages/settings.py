"""Settings: model file, offload, context, threads, seed, retrieval defaults, dataset, store."""
from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import streamlit as st

from workbench import config as cfgmod
from workbench import host_policy, paths
from workbench import settings as settings_mod
from workbench.llm.base import LLMError, ModelFileError
from workbench.llm.gguf import check_model_file
from workbench.llm.prefix_store import AUTO, DEFAULT_BUDGET_TOKENS, WHOLE
from workbench.llm.registry import BUNDLED
from workbench.ui import access, backend, warm
from workbench.ui import data as D
from workbench.ui import model_status as MS
from workbench.ui import widgets as W

K = "set"
ss = st.session_state
s = W.setup_page()                 # this browser session's settings
host = settings_mod.load()         # the host's (the file and environment)
st.title("Settings")

MODEL_KEYS = ("backend", "model", "n_gpu_layers", "n_ctx", "n_threads", "n_batch", "seed",
              "server_url", "server_model", "isolate_model", "prefix_cache_tokens")
SHOWN = set(MODEL_KEYS) | {"retriever", "k", "dataset", "store"}
specs = {k.name: k for k in cfgmod.knobs(settings_mod.Settings)}
new: dict = {}
edit_host = access.can_edit_host()


def _unlock() -> None:
    ok = access.unlock(ss.get(f"{K}__token", ""))
    ss[f"{K}__token"] = ""          # the token does not stay in the session's widget state
    ss[f"{K}__unlock_failed"] = not ok
    if not ok:
        time.sleep(1.0)             # slows guessing; a right token is 16+ random characters


if access.shared():
    if access.is_admin():
        c = st.columns([5, 1], vertical_alignment="center")
        c[0].success("Host settings are unlocked in this browser session: saving here writes "
                     "settings.json for every visitor.", icon=":material/lock_open:")
        c[1].button("Lock", key=f"{K}__lock", on_click=access.lock)
    else:
        st.info("This workbench is shared. The model file, backend, server, store and machine "
                "settings are the host's and read-only here; the model (among the installed "
                "ones), retriever, k and dataset you choose apply to this browser session "
                "only.", icon=":material/group:")
        if access.admin_token():
            with st.expander("Host: unlock settings"):
                st.text_input("Admin token", type="password", key=f"{K}__token",
                              help=f"The value of {access.TOKEN_ENV} the app was started with.")
                st.button("Unlock", key=f"{K}__unlock", on_click=_unlock)
                if ss.get(f"{K}__unlock_failed"):
                    W.error("That is not the admin token; copy it from where the app was "
                            "started.")

st.subheader("Model")
card = backend.model_card(s)
MS.model_panel(card)
if card.get("path") and not card.get("error"):
    st.caption(f"File: `{card['path']}` · {card.get('size_mb', '?')} MB · "
               f"trained context {card.get('context_length') or '?'} · {card.get('architecture')}")


def _model_label(m: str) -> str:
    if m in BUNDLED:
        return (f"{m} — {BUNDLED[m].title} ({BUNDLED[m].quality})"
                + ("" if BUNDLED[m].installed else " — not installed"))
    return m


def _host_fields() -> None:
    """Host-level settings, for a visitor: shown, not editable (no widget to tamper with)."""
    rows = [{"setting": k, "value": str(getattr(host, k))}
            for k in ("backend", "n_gpu_layers", "n_ctx", "n_threads", "n_batch", "seed",
                      "prefix_cache_tokens", "loop_stop", "isolate_model")]
    if host.backend == "openai_compat":
        rows += [{"setting": "server_url", "value": host.server_url},
                 {"setting": "server_model", "value": host.server_model}]
    st.caption("Host settings (read-only: the host changes them in settings.json or the "
               "environment)")
    st.dataframe(rows, hide_index=True, width="stretch")


if not edit_host:
    models = access.session_models(host)
    new["model"] = st.selectbox("Model", models, index=models.index(s.model)
                                if s.model in models else 0, key=f"{K}__model_pick",
                                format_func=_model_label,
                                help="Applies to this browser session; loading another model "
                                "makes visitors using the current one wait for it.")
    _host_fields()


def _model_path_problem(path: str) -> str | None:
    """Why a typed model path cannot be used (a device, a FIFO, a folder, not GGUF), or
    None. A path with nothing there yet is allowed: the file may be copied in later."""
    if not path or not os.path.lexists(Path(path).expanduser()):
        return None
    try:
        check_model_file(Path(path).expanduser())      # stat and four bytes, never more
    except ModelFileError as e:
        return str(e)
    return None


if edit_host:
    backends = list(specs["backend"].choices or []) + ["scripted"]
    new["backend"] = st.selectbox("Backend", backends, index=backends.index(s.backend)
                                  if s.backend in backends else 0, key=f"{K}__backend",
                                  help=specs["backend"].description + " · 'scripted' = no "
                                  "model (demo/tests: canned answers)")
    choices = list(BUNDLED) + ["Other .gguf file…"]
    is_path = s.model not in BUNDLED
    mc = st.columns([2, 3])
    pick = mc[0].selectbox("Model", choices, index=len(choices) - 1 if is_path else
                           choices.index(s.model), key=f"{K}__model_pick",
                           format_func=_model_label)
    if pick in BUNDLED:
        new["model"] = pick
    else:
        path = mc[1].text_input("Path to a .gguf file", value=s.model if is_path else "",
                                key=f"{K}__model_path",
                                placeholder="/models/qwen2.5-7b-instruct-q4_k_m.gguf")
        new["model"] = path.strip()
        problem = _model_path_problem(new["model"])
        if problem:
            st.warning(problem)
        elif new["model"] and not Path(new["model"]).expanduser().exists():
            st.warning("No file at that path yet.")

    cols = st.columns(5)
    for col, name in zip(cols, ("n_gpu_layers", "n_ctx", "n_threads", "n_batch", "seed")):
        sp = specs[name]
        with col:
            new[name] = int(st.number_input(
                name, value=int(getattr(s, name)), step=1,
                min_value=int(sp.min) if sp.min is not None else None,
                max_value=int(sp.max) if sp.max is not None else None,
                help=sp.description, key=f"{K}__{name}"))
    # -2, -1 and 0 are modes, not sizes: a bare number input stepping from -1 lands on 511
    pc = specs["prefix_cache_tokens"]
    cur = int(s.prefix_cache_tokens)
    modes = {"automatic": AUTO, "previous prompt only": 0, "every prompt whole": WHOLE,
             "fixed budget": None}
    pcc = st.columns(2)
    names = list(modes)
    mode = pcc[0].selectbox("Prompt cache", names,
                            index=names.index(next((m for m, v in modes.items() if v == cur),
                                                   "fixed budget")),
                            help=pc.description, key=f"{K}__prefix_cache_mode")
    if mode == "fixed budget":
        new["prefix_cache_tokens"] = int(pcc[1].number_input(
            "Prompt cache budget (tokens)", value=cur if cur > 0 else DEFAULT_BUDGET_TOKENS,
            step=512, min_value=1, max_value=int(pc.max), key=f"{K}__prefix_cache"))
    else:
        new["prefix_cache_tokens"] = modes[mode]
    new["isolate_model"] = st.toggle("Run the model in its own process", s.isolate_model,
                                     key=f"{K}__isolate", help=specs["isolate_model"].description)
    if new["backend"] == "openai_compat":
        sc = st.columns(2)
        allowed = host_policy.allowed_server_urls()
        if allowed:        # the host's allow-list: pick, do not type
            opts = allowed + ([] if s.server_url.rstrip("/") in allowed else [s.server_url])
            new["server_url"] = sc[0].selectbox(
                "Server URL", opts, index=opts.index(s.server_url.rstrip("/"))
                if s.server_url.rstrip("/") in opts else len(opts) - 1, key=f"{K}__url",
                help=f"The host's {host_policy.SERVER_URLS_ENV} list")
        else:
            new["server_url"] = sc[0].text_input("Server URL", s.server_url, key=f"{K}__url")
        new["server_model"] = sc[1].text_input("Server model", s.server_model, key=f"{K}__smodel")
if new.get("model") in BUNDLED and not BUNDLED[new["model"]].installed:
    st.warning(f"{new['model']} is not installed: {BUNDLED[new['model']].source}. The README's "
               f"model table says how to install it; then restart the workbench.")

st.subheader("Retrieval and data")
rc = st.columns(3)
rs = specs["retriever"]
new["retriever"] = rc[0].selectbox("Default retriever", rs.choices,
                                   index=rs.choices.index(s.retriever) if s.retriever in rs.choices
                                   else 0, key=f"{K}__ret", help=rs.description)
new["k"] = int(rc[1].number_input("Default k", int(specs["k"].min), int(specs["k"].max), int(s.k),
                                  key=f"{K}__k", help=specs["k"].description))
names = D.dataset_names(s.dataset)
new["dataset"] = rc[2].selectbox("Active dataset", names, index=names.index(s.dataset)
                                 if s.dataset in names else 0, key=f"{K}__ds")

# Any further knobs a later Settings version adds are rendered generically; not knowing
# what they touch, a visitor of a shared workbench does not get them.
rest = [k for k in specs if k not in SHOWN]
if rest and edit_host:
    st.subheader("Other")
    for name in rest:
        sp = specs[name]
        raw = st.text_input(name, str(getattr(s, name)), help=sp.description, key=f"{K}__{name}")
        try:
            new[name] = cfgmod.coerce(sp, raw)
        except cfgmod.ConfigError as e:
            st.caption(f":material/warning: {e}")

st.subheader("Storage")
if edit_host:
    new["store"] = st.text_input(
        "Store file", s.store, key=f"{K}__store", placeholder=str(paths.home() / "workbench.duckdb"),
        help=specs["store"].description + " A file chosen here must lie under the home folder.")\
        .strip()
    if new["store"] and Path(new["store"]).expanduser().is_dir():
        st.warning("That is a folder; give a file name such as runs.duckdb inside it.")
st.markdown(f"In use: `{settings_mod.store_path()}`  \nHome (settings, indexes, caches): "
            f"`{paths.home()}`")
st.caption("WORKBENCH_HOME moves everything; WORKBENCH_STORE, when set, overrides the store "
           "file chosen here.")
if not edit_host:
    new = {k: v for k, v in new.items() if k in access.SESSION_FIELDS}   # never the host's


def _problems(new: dict) -> list[str]:
    """Why these host-level values cannot be saved, one line each."""
    bad = [] if new["model"] else ["model: choose a bundled model or give a .gguf path"]
    problem = _model_path_problem(new["model"]) if new["model"] not in BUNDLED else None
    if problem:
        bad.append(f"model: {problem}")
    if new["store"] and Path(new["store"]).expanduser().is_dir():
        bad.append(f"store: {new['store']} is a folder; name a .duckdb file")
    elif new["store"] and new["store"] != host.store:
        try:
            host_policy.check_ui_store_path(new["store"])
        except host_policy.PolicyError as e:
            bad.append(f"store: {e}")
    if new["backend"] == "openai_compat" and new.get("server_url", host.server_url) != host.server_url:
        try:
            host_policy.check_server_url(new["server_url"])
        except host_policy.PolicyError as e:
            bad.append(f"server URL: {e}")
    return bad


def _load_now(updated) -> None:
    backend.unload()
    t0 = time.perf_counter()
    try:
        with st.spinner(f"Loading {updated.model}…"):
            backend.get_llm(updated)
        st.success(f"Model loaded in {time.perf_counter() - t0:.1f} s.")
    except LLMError as e:
        W.error(f"The new model could not be loaded: {e}",
                "The settings are saved; fix the model or path and save again.")


changed = {k: v for k, v in new.items() if getattr(s, k, None) != v}
b = st.columns([1, 1, 4])
if b[0].button("Save", type="primary", disabled=not changed, key=f"{K}__save",
               help=None if edit_host else "For this browser session only"):
    if not edit_host:
        refused = access.choose(host, new)
        if refused:
            W.error("Not changed: " + ", ".join(refused) + " (not a choice a visitor can make "
                    "here).")
        updated = access.current()
        st.toast("Saved for this browser session; other visitors keep their own settings.")
        if updated.model != s.model:
            _load_now(updated)
        s = updated
    elif bad := _problems(new):
        W.error("; ".join(bad))
    else:
        updated = dataclasses.replace(host, **new)
        settings_mod.save(updated)
        access.forget_session_choices()
        st.toast("Settings saved.")
        if any(k in changed for k in MODEL_KEYS):
            _load_now(updated)
        s = updated
if b[1].button("Load model now", disabled=bool(changed), key=f"{K}__load",
               help="Load the model, the embedder and the default retrieval index now."):
    t0 = time.perf_counter()
    try:
        with st.spinner(f"Loading {s.model}…"):
            backend.get_llm(s)
        st.success(f"Model loaded in {time.perf_counter() - t0:.1f} s.")
        with st.spinner("Loading the dataset, embedder and retrieval index…"):
            res = warm.warm(s, model=False)
        st.caption("Warm-up: " + ", ".join(f"{k} {v:.1f} s" for k, v in res["timings"].items()))
        for err in res["errors"]:
            st.warning(err)
    except LLMError as e:
        W.error(f"The model could not be loaded: {e}")
if changed:
    b[2].caption("Unsaved: " + ", ".join(sorted(changed)))
