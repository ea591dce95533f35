"""Entry point: `streamlit run streamlit_app.py` — the home page of the workbench."""
from __future__ import annotations

import streamlit as st

from workbench import settings as settings_mod
from workbench.llm.base import LLMError
from workbench.llm.registry import list_models

st.set_page_config(page_title="RAG Reasoning Workbench", layout="wide")
st.title("RAG Reasoning Workbench")
st.write("Pose a question, watch a method's reasoning graph or mind map grow, inspect every "
         "node's retrieved knowledge, perplexity and confidence, and compare methods.")

s = settings_mod.load()
try:
    models = {m.name: m for m in list_models(with_sha=False)}
except LLMError as e:
    models = {}
    st.error(str(e))
m = models.get(s.model)
cols = st.columns(3)
cols[0].metric("Model", s.model)
cols[1].metric("Quantisation", m.quantization if m else "?")
cols[2].metric("GPU layers", s.n_gpu_layers)
st.caption(f"Active dataset: {s.dataset}")
