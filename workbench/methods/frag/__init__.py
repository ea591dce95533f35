"""FRAG: a complexity router picks the retrieval (BFS or shortest paths) over a knowledge
graph, paths are pruned and ranked, the model answers from them (config and steps in
``method.py``, the router in ``router.py``, retrieval in ``kg.py``, ``retrieval.py`` and
``rank.py``, events in ``trace.py`` and ``feedback.py``, prompts in ``prompts.py``, facts in
``declarations.py``)."""
from . import declarations  # noqa: F401  (declares the event types)
from .method import Frag, FragConfig

__all__ = ["Frag", "FragConfig"]
