import math

import pytest

from workbench.scoring import confidence, entropy_from_top, perplexity, score_tokens


def test_perplexity_hand_computed():
    lps = [math.log(0.5), math.log(0.25)]
    # mean NLL = (ln2 + ln4)/2 = 1.5 ln 2 -> PPL = 2**1.5
    assert perplexity(lps) == pytest.approx(2 ** 1.5)
    assert confidence(lps) == pytest.approx(2 ** -1.5)


def test_score_tokens_fields():
    s = score_tokens([math.log(0.9), math.log(0.1), math.log(0.5)], [0.2, None, 0.4])
    assert s.n_tokens == 3
    assert s.min_prob == pytest.approx(0.1)
    assert s.mean_prob == pytest.approx(0.5)
    assert s.mean_entropy == pytest.approx(0.3)
    assert s.mean_nll == pytest.approx(-(math.log(0.9) + math.log(0.1) + math.log(0.5)) / 3)
    assert 0 < s.confidence <= 1
    assert s.confidence == pytest.approx(1 / s.perplexity)


def test_certain_tokens_have_perplexity_one():
    assert perplexity([0.0, 0.0]) == pytest.approx(1.0)
    assert score_tokens([0.0]).confidence == pytest.approx(1.0)


def test_empty_is_none_not_nan():
    s = score_tokens([])
    assert s.perplexity is None and s.confidence is None and s.n_tokens == 0
    assert perplexity([]) is None


def test_entropy_from_top():
    # uniform over two outcomes: ln 2
    assert entropy_from_top([math.log(0.5), math.log(0.5)]) == pytest.approx(math.log(2))
    # missing mass lumped: p=0.5 known, 0.5 rest -> ln 2 as well
    assert entropy_from_top([math.log(0.5)]) == pytest.approx(math.log(2))
