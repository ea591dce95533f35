"""What the baselines (IRCoT's events) declares about itself: the event types it emits (collected by
``workbench/events.py``)."""
from __future__ import annotations

from ...events import declare
from ..events import event

SOURCE = "IRCoT"

EVENTS = (
    event("cot_step", SOURCE, "One chain-of-thought sentence (it also drives the next "
          "retrieval).", "step sentence has_answer", node=True),
    event("ircot_stopped", SOURCE, "The interleaving stopped: an answer was found or the step "
          "limit hit.", "reason steps", node=False),
)

declare(*EVENTS)
