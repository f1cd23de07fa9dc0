"""Kendall's tau-b against scipy, tau_ap against a direct loop over its definition."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau

from evalcore.stats import kendall_tau, tau_ap, tau_ap_symmetric

scores = st.lists(st.integers(0, 6).map(lambda v: v / 6), min_size=2, max_size=40)


def _tau_ap_loop(truth: list[float], estimate: list[float]) -> float:
    """Yilmaz et al. 2008, eq. (2), written out; estimate ties put the truth's worse system first."""
    n = len(truth)
    order = sorted(range(n), key=lambda i: (-estimate[i], truth[i], i))
    total = 0.0
    for i in range(1, n):
        correct = sum(1 for j in range(i) if truth[order[j]] >= truth[order[i]])
        total += correct / i
    return 2 * total / (n - 1) - 1


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_kendall_tau_equals_scipy(data: st.DataObject) -> None:
    a = data.draw(scores)
    b = data.draw(st.lists(st.integers(0, 6).map(lambda v: v / 6), min_size=len(a), max_size=len(a)))
    expected = kendalltau(a, b).statistic
    ours = kendall_tau(a, b)
    if np.isnan(expected):
        assert ours is None
    else:
        assert ours == pytest.approx(expected, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_tau_ap_equals_its_definition(data: st.DataObject) -> None:
    a = data.draw(scores)
    b = data.draw(st.lists(st.integers(0, 6).map(lambda v: v / 6), min_size=len(a), max_size=len(a)))
    assert tau_ap(a, b) == pytest.approx(_tau_ap_loop(a, b), abs=1e-12)


def test_tau_ap_is_tau_without_ties_for_uniform_error_and_bounded() -> None:
    rng = np.random.default_rng(3)
    truth = rng.permutation(30).astype(float)
    assert tau_ap(truth, truth) == 1.0
    assert tau_ap(truth, -truth) == -1.0
    for _ in range(20):
        other = rng.permutation(30).astype(float)
        value = tau_ap(truth, other)
        assert value is not None and -1.0 <= value <= 1.0


def test_blocks_agree_with_a_single_block() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.random(2500), rng.random(2500)
    assert kendall_tau(a, b) == pytest.approx(kendalltau(a, b).statistic, abs=1e-12)
    assert tau_ap(a[:300], b[:300]) == pytest.approx(_tau_ap_loop(list(a[:300]), list(b[:300])), abs=1e-12)


def test_undefined_and_bad_input() -> None:
    assert kendall_tau([1.0], [2.0]) is None
    assert kendall_tau([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) is None
    assert tau_ap([1.0], [1.0]) is None
    assert tau_ap_symmetric([1.0], [1.0]) is None
    with pytest.raises(ValueError, match="different numbers"):
        kendall_tau([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="finite"):
        tau_ap([1.0, float("nan")], [1.0, 2.0])
