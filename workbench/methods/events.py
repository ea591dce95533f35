"""The event types shared by several methods, and :func:`event`, the short form each method
package's ``declarations.py`` uses to declare its own (see ``workbench/events.py``, which
collects them): each type with the payload keys it always carries, the ones worth naming that
it may carry, and a one-line meaning. The reducer keeps these in the trace's log, attached to
their node."""
from __future__ import annotations

from ..events import EventSpec, declare

SHARED = "Shared by several methods"


def event(type_: str, source: str, meaning: str, required: str = "", optional: str = "", *,
          node: bool | None = None, more: str = "", legacy: bool = False) -> EventSpec:
    """One declared event type; ``required`` and ``optional`` are space-separated keys."""
    return EventSpec(type_, meaning, tuple(required.split()), tuple(optional.split()),
                     node=node, source=source, more=more, legacy=legacy)


declare(
    event("artefact_used", SHARED, "The run used a fitted artefact (a classifier, a "
          "calibrated threshold, an exemplar store); says whether it was fitted on this very "
          "question.", "kind name fitted_on n_questions data_hash supervision saw_question",
          "model mode seed per_hop n_templates decides_route",
          more="and the artefact's own fit details"),
    event("kg_partial", SHARED, "The knowledge graph was built from part of the corpus only; "
          "shown as a caveat next to the answer.", "note"),
)
