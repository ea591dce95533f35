"""What the baselines (vanilla, standard-rag, IRCoT) declare about themselves, read by the
central modules: node kinds, the failure tags that apply, the what-if's nodes, and the event
types IRCoT emits (collected by ``workbench/events.py``)."""
from __future__ import annotations

from ...events import declare
from ..events import event

# -- vanilla
# the node kinds its traces hold
NODE_KINDS_VANILLA = ("question", "answer")
# the annotation taxonomy's failure modes that apply to it (workbench/annotations.py)
FAILURE_TAGS_VANILLA: tuple[str, ...] = ()
# what-if: the nodes (id patterns) where it consults each kind of intervention
WHATIF_NODES_VANILLA: dict[str, str] = {}     # nothing to change: no evidence, no step

# -- standard-rag
# the node kinds its traces hold
NODE_KINDS_STANDARD_RAG = ("question", "retrieval", "answer")
# the annotation taxonomy's failure modes that apply to it (workbench/annotations.py)
FAILURE_TAGS_STANDARD_RAG: tuple[str, ...] = ()
# what-if: the nodes (id patterns) where it consults each kind of intervention
WHATIF_NODES_STANDARD_RAG = {"evidence": r"r\d+", "step": r"r\d+"}

# -- ircot
# the node kinds its traces hold
NODE_KINDS_IRCOT = ("question", "retrieval", "thought", "answer")
# the annotation taxonomy's failure modes that apply to it (workbench/annotations.py)
FAILURE_TAGS_IRCOT: tuple[str, ...] = ()
# what-if: the nodes (id patterns) where it consults each kind of intervention
WHATIF_NODES_IRCOT = {"evidence": r"r\d+", "step": r"[rt]\d+"}

SOURCE = "IRCoT"

EVENTS = (
    event("cot_step", SOURCE, "One chain-of-thought sentence (it also drives the next "
          "retrieval).", "step sentence has_answer", node=True),
    event("ircot_stopped", SOURCE, "The interleaving stopped: an answer was found or the step "
          "limit hit.", "reason steps", node=False),
)

declare(*EVENTS)
