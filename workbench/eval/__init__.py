"""Evaluation: metrics, the batch runner (resumable, parallel), SQL aggregates for the
Evaluate page, and the CRAG knowledge-centric study presets.

- :mod:`.metrics`  answer and node-level metrics, the LLM judge;
- :mod:`.runner`   ``EvalSpec`` / ``EvalRunner`` / ``run_eval``; :mod:`.export` ``export_eval``;
- :mod:`.knobs`    evaluation-level knobs (noise chunks, top-k, retriever, chunk size, IDK prompt);
- :mod:`.presets`  one-click study configurations;
- :mod:`.queries`  the page's aggregates, computed in DuckDB;
- :mod:`.jobs`     background evals for the Streamlit page.
"""
from .export import export_eval
from .runner import EvalResult, EvalRunner, EvalSpec, Progress, run_eval

__all__ = ["EvalResult", "EvalRunner", "EvalSpec", "Progress", "export_eval", "run_eval"]
