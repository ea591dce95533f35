"""CRP-RAG: a reasoning graph of proposed steps, each judged on its retrieved knowledge,
answered along the paths that survive (config in ``config.py``, steps in ``method.py`` and
``answer.py``, prompts in ``prompts.py``, facts in ``declarations.py``)."""
from . import declarations  # noqa: F401  (declares the event types)
from .config import CrpRagConfig
from .method import CrpRag

__all__ = ["CrpRag", "CrpRagConfig"]
