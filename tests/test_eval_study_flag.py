"""`eval --study` picks a CRAG study, `eval --preset` a method preset: one flag, one meaning."""
from __future__ import annotations

import pytest

from workbench.cli import build_parser
from workbench.commands.eval import _spec
from workbench.eval import presets


def _args(*argv: str):
    return build_parser().parse_args(["eval", "run", "--dataset", "demo", *argv])


def test_study_expands_to_its_methods_and_sweep():
    name = sorted(presets.PRESETS)[0]
    spec = _spec(_args("--study", name))
    assert spec.preset == name and spec.methods


def test_a_study_name_given_to_preset_says_to_use_study():
    name = sorted(presets.PRESETS)[0]
    with pytest.raises(ValueError, match=f"--study {name}"):
        _spec(_args("--methods", "par-rag", "--preset", name))


def test_preset_sets_the_method_preset_of_methods_that_have_it():
    spec = _spec(_args("--methods", "par-rag,standard-rag", "--preset", "small-model"))
    assert spec.sets.get("par-rag.preset") == "small-model"
    assert "standard-rag.preset" not in spec.sets


def test_an_unknown_study_lists_the_studies():
    with pytest.raises(ValueError, match="eval presets"):
        _spec(_args("--study", "no-such-study"))
