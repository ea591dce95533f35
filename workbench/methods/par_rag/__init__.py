"""PAR-RAG: plan, act and review: a plan of steps, each answered from its evidence and
verified, revised when its credibility is low (config and steps in ``method.py``, prompts in
``prompts.py``, facts in ``declarations.py``)."""
from . import declarations  # noqa: F401  (declares the event types)
from .method import ParRag, ParRagConfig

__all__ = ["ParRag", "ParRagConfig"]
