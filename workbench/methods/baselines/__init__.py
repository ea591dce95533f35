"""The baselines: vanilla (no retrieval), standard RAG (retrieve once) and IRCoT (retrieval
interleaved with chain-of-thought), in ``method.py``, prompts in ``prompts.py``, facts in
``declarations.py``."""
from . import declarations  # noqa: F401  (declares the event types)
from .method import Ircot, IrcotConfig, StandardRag, StandardRagConfig, Vanilla, VanillaConfig

__all__ = ["Ircot", "IrcotConfig", "StandardRag", "StandardRagConfig", "Vanilla",
           "VanillaConfig"]
