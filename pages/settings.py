"""Settings: model file, offload, context, threads, seed, retrieval defaults, dataset, store."""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import streamlit as st

from workbench import config as cfgmod
from workbench import paths
from workbench import settings as settings_mod
from workbench.llm.base import LLMError
from workbench.llm.registry import BUNDLED
from workbench.ui import backend, warm
from workbench.ui import data as D
from workbench.ui import model_status as MS
from workbench.ui import widgets as W

K = "set"
ss = st.session_state
s = W.setup_page()
st.title("Settings")

MODEL_KEYS = ("backend", "model", "n_gpu_layers", "n_ctx", "n_threads", "n_batch", "seed",
              "server_url", "server_model", "isolate_model")
specs = {k.name: k for k in cfgmod.knobs(settings_mod.Settings)}
new: dict = {}

st.subheader("Model")
card = backend.model_card(s)
MS.model_panel(card)
if card.get("path") and not card.get("error"):
    st.caption(f"File: `{card['path']}` · {card.get('size_mb', '?')} MB · "
               f"trained context {card.get('context_length') or '?'} · {card.get('architecture')}")

backends = list(specs["backend"].choices or []) + ["scripted"]
new["backend"] = st.selectbox("Backend", backends, index=backends.index(s.backend)
                              if s.backend in backends else 0, key=f"{K}__backend",
                              help=specs["backend"].description + " · 'scripted' = no model "
                              "(demo/tests: canned answers)")
choices = list(BUNDLED) + ["Other .gguf file…"]
is_path = s.model not in BUNDLED
mc = st.columns([2, 3])
pick = mc[0].selectbox("Model", choices, index=len(choices) - 1 if is_path else
                       choices.index(s.model), key=f"{K}__model_pick",
                       format_func=lambda m: f"{m} — {BUNDLED[m].title} ({BUNDLED[m].quality})"
                       + ("" if BUNDLED[m].installed else " — not installed")
                       if m in BUNDLED else m)
if pick in BUNDLED:
    new["model"] = pick
    if not BUNDLED[pick].installed:
        st.warning(f"{pick} is not installed: {BUNDLED[pick].source}. The README's model "
                   f"table says how to install it; then restart the workbench.")
else:
    path = mc[1].text_input("Path to a .gguf file", value=s.model if is_path else "",
                            key=f"{K}__model_path", placeholder="/models/qwen2.5-7b-instruct-q4_k_m.gguf")
    new["model"] = path.strip()
    if path.strip() and not Path(path.strip()).expanduser().is_file():
        st.warning("No file at that path yet.")

cols = st.columns(5)
for col, name in zip(cols, ("n_gpu_layers", "n_ctx", "n_threads", "n_batch", "seed")):
    sp = specs[name]
    with col:
        new[name] = int(st.number_input(name, value=int(getattr(s, name)), step=1,
                                        min_value=int(sp.min) if sp.min is not None else None,
                                        max_value=int(sp.max) if sp.max is not None else None,
                                        help=sp.description, key=f"{K}__{name}"))
new["isolate_model"] = st.toggle("Run the model in its own process", s.isolate_model,
                                 key=f"{K}__isolate", help=specs["isolate_model"].description)
if new["backend"] == "openai_compat":
    sc = st.columns(2)
    new["server_url"] = sc[0].text_input("Server URL", s.server_url, key=f"{K}__url")
    new["server_model"] = sc[1].text_input("Server model", s.server_model, key=f"{K}__smodel")

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

# Any further knobs a later Settings version adds are rendered generically.
rest = [k for k in specs if k not in new and k not in ("server_url", "server_model", "store")]
if rest:
    st.subheader("Other")
    for name in rest:
        sp = specs[name]
        raw = st.text_input(name, str(getattr(s, name)), help=sp.description, key=f"{K}__{name}")
        try:
            new[name] = cfgmod.coerce(sp, raw)
        except cfgmod.ConfigError as e:
            st.caption(f":material/warning: {e}")

st.subheader("Storage")
new["store"] = st.text_input(
    "Store file", s.store, key=f"{K}__store", placeholder=str(paths.home() / "workbench.duckdb"),
    help=specs["store"].description).strip()
if new["store"] and Path(new["store"]).expanduser().is_dir():
    st.warning("That is a folder; give a file name such as runs.duckdb inside it.")
st.markdown(f"In use: `{settings_mod.store_path()}`  \nHome (settings, indexes, caches): "
            f"`{paths.home()}`")
st.caption("WORKBENCH_HOME moves everything; WORKBENCH_STORE, when set, overrides the store "
           "file chosen here.")

changed = {k: v for k, v in new.items() if getattr(s, k, None) != v}
b = st.columns([1, 1, 4])
if b[0].button("Save", type="primary", disabled=not changed, key=f"{K}__save"):
    bad = [] if new["model"] else ["model: choose a bundled model or give a .gguf path"]
    if new["store"] and Path(new["store"]).expanduser().is_dir():
        bad.append(f"store: {new['store']} is a folder; name a .duckdb file")
    if bad:
        W.error("; ".join(bad))
    else:
        updated = dataclasses.replace(s, **new)
        settings_mod.save(updated)
        st.toast("Settings saved.")
        if any(k in changed for k in MODEL_KEYS):
            backend.unload()
            t0 = time.perf_counter()
            try:
                with st.spinner(f"Loading {updated.model}…"):
                    backend.get_llm(updated)
                st.success(f"Model loaded in {time.perf_counter() - t0:.1f} s.")
            except LLMError as e:
                W.error(f"The new model could not be loaded: {e}",
                        "The settings are saved; fix the model or path and save again.")
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
