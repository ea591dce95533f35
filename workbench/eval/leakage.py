"""Train/test separation at evaluation time.

Before an eval runs, every planned variant is asked what it was fitted on
(``Method.fitted_state(config)``: FRAG's router, PAR-RAG's exemplar store, CRP-RAG's
tau_ppl...; see :mod:`workbench.methods.fitted`). A variant whose fitted state saw any of
the questions about to be scored leaks: its numbers would be in-sample. :func:`guard`
refuses such an eval with a message naming the artefact, what it saw and how to avoid it,
unless the spec allows leakage, in which case the leaks are recorded in the eval's spec
and the Evaluate page marks those rows.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence


class LeakageError(ValueError):
    """An eval would score a method on questions its fitted state saw."""


@dataclass
class Leak:
    method: str
    variant: str                    # the variant's label
    variant_hash: str
    kind: str                       # the artefact kind (frag_router, ...)
    artefact: str
    fitted_on: str                  # DATASET:SPLIT
    supervision: str
    n: int                          # evaluated questions it saw
    n_evaluated: int
    examples: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        ex = ", ".join(self.examples)
        what = "the gold labels of" if self.supervision == "gold" else \
            f"({self.supervision}, no gold labels)"
        return (f"{self.method} [{self.variant}]: its {self.kind} {self.artefact!r} was fitted "
                f"on {self.fitted_on}, which includes {self.n} of the {self.n_evaluated} "
                f"evaluated questions ({ex}{', ...' if self.n > len(self.examples) else ''}; "
                f"{what} them)")


def _records(method_cls: type, config: Any) -> list[Any]:
    fn = getattr(method_cls, "fitted_state", None)
    return list(fn(config)) if fn is not None else []


def find(questions: Sequence[Any], dataset: str, variants: Iterable[Any],
         method_classes: dict[str, type]) -> list[Leak]:
    """The leaks of ``variants`` (``Variant`` objects of the eval runner) on ``questions``."""
    from .. import config as cfgmod
    out: list[Leak] = []
    for v in variants:
        cls = method_classes[v.method]
        cfg = cfgmod.build(cls.Config, v.config)
        for rec in _records(cls, cfg):
            seen = rec.saw(questions, dataset)
            if seen:
                out.append(Leak(v.method, v.label, v.hash, rec.kind, rec.name, rec.fitted_on,
                                rec.supervision, len(seen), len(questions), seen[:5]))
    return out


def message(leaks: Sequence[Leak], split: str | None) -> str:
    lines = [f"refusing to evaluate: {len(leaks)} configuration(s) would be scored on "
             f"questions they were fitted on, so their numbers would be in-sample:"]
    lines += [f"  - {lk.line()}" for lk in leaks]
    fix = ["evaluate a split the artefact did not see (" +
           ("another --split" if split else "--split test") + ")",
           "refit it on another split (e.g. `frag train-router --train DATASET:train`, "
           "--set router=..., --set exemplar_source=...)"]
    if any(lk.supervision != "gold" for lk in leaks):
        fix.append("for FRAG-F collect feedback on another split (`frag feedback --split dev`)"
                   "; the paper's FRAG-F is transductive, so reproducing it needs the next "
                   "option")
    fix.append("or pass --allow-leakage to run anyway (the rows are then marked as leaked)")
    lines.append("Either " + "; ".join(fix) + ".")
    return "\n".join(lines)


def guard(spec: Any, questions: Sequence[Any], variants: Sequence[Any],
          method_classes: dict[str, type]) -> list[Leak]:
    """Raise :class:`LeakageError` for a leaking eval unless ``spec.allow_leakage``; the
    leaks found are stored on ``spec.leakage`` (so the eval's record keeps them)."""
    leaks = find(questions, spec.dataset, variants, method_classes)
    if leaks and not getattr(spec, "allow_leakage", False):
        raise LeakageError(message(leaks, getattr(spec, "split", None)))
    spec.leakage = [lk.to_dict() for lk in leaks]
    return leaks


def marked(spec: dict[str, Any] | None) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """``{(method, variant label): [leak, ...]}`` from a stored eval spec (Evaluate page)."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for lk in (spec or {}).get("leakage") or []:
        out.setdefault((lk["method"], lk["variant"]), []).append(lk)
    return out
