"""CogGRAG: a mind map of sub-questions over a knowledge graph, answered bottom-up with
self-verification (config and steps in ``method.py``, ``mindmap.py``, ``retrieval.py`` and
``reasoning.py``, prompts in ``prompts.py``, facts in ``declarations.py``)."""
from . import declarations  # noqa: F401  (declares the event types)
from .method import CogConfig, CogGRAG

__all__ = ["CogConfig", "CogGRAG"]
