"""Knowledge-centric failure triage: gold-evidence marks on nodes, a failure class and
the breaking node per run (:mod:`.classify`), stored with the run and rolled up per
method (:mod:`.store`)."""
from .classify import CLASS_HELP, CLASS_LABELS, CLASSES, VERSION, Triage, triage

__all__ = ["CLASSES", "CLASS_LABELS", "CLASS_HELP", "VERSION", "Triage", "triage"]
