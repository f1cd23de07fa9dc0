"""Tests for evalcore.aggregation: the median, mean and majority against brute-force loops over items,
the ±1 agreement filter against seed 004's rule (section 21.3.2), and Dawid-Skene on synthetic
annotators with known confusion matrices.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from evalcore import aggregation
from evalcore.aggregation import (
    METHODS,
    aggregate_labels,
    agreement_filter,
    dawid_skene,
    majority_labels,
    mean_labels,
    median_labels,
)
from evalcore.agreement import LongLabels, StatsInputError

FAST = settings(max_examples=60, deadline=None)
nan = np.nan


@st.composite
def grade_matrices(draw: st.DrawFn, *, max_items: int = 30, max_annotators: int = 6) -> np.ndarray:
    """Items x annotators relevance grades 0-4, NaN for a missing label."""
    shape = (draw(st.integers(1, max_items)), draw(st.integers(1, max_annotators)))
    matrix = draw(
        hnp.arrays(np.float64, shape, elements=st.sampled_from([0.0, 1, 2, 3, 4]), fill=st.nothing())
    )
    absent = draw(
        hnp.arrays(np.bool_, shape, elements=st.sampled_from([False, False, True]), fill=st.nothing())
    )
    matrix[absent] = nan
    return matrix


def rows_of(matrix: np.ndarray) -> list[np.ndarray]:
    return [row[~np.isnan(row)] for row in matrix]


def assert_close(actual: object, expected: object) -> None:
    np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-12, equal_nan=True)  # type: ignore[call-overload]


# --- seed 004's rule ------------------------------------------------------------------------------


def seed_filter(rows: list[np.ndarray]) -> dict[int, tuple[int, float, int]]:
    """Seed 004's agreement filter, restated: items with 2+ labels within ±1 get int(np.median(labels))."""
    kept = {}
    for u, values in enumerate(rows):
        if len(values) >= 2 and max(values) - min(values) <= 1:
            kept[u] = (int(np.median(values)), 1.0 - (max(values) - min(values)) / 4, len(values))
    return kept


@given(matrix=grade_matrices())
@FAST
def test_it_keeps_and_aggregates_like_the_seed(matrix: np.ndarray) -> None:
    labels = LongLabels.from_matrix(matrix)
    result = agreement_filter(labels)
    medians = median_labels(labels)
    expected = seed_filter(rows_of(matrix))
    assert set(np.flatnonzero(result.kept).tolist()) == set(expected)
    for u, (rating, confidence, count) in expected.items():
        assert medians[u] == rating
        assert 1.0 - result.spread[u] / 4 == confidence
        assert result.n_labels[u] == count


@given(matrix=grade_matrices())
@FAST
def test_it_rounds_an_even_median_down_like_int_of_np_median(matrix: np.ndarray) -> None:
    medians = median_labels(LongLabels.from_matrix(matrix))
    for u, values in enumerate(rows_of(matrix)):
        assert_close(medians[u], int(np.median(values)) if values.size else nan)


def test_it_names_each_rounding_of_an_even_median() -> None:
    labels = LongLabels.from_records(["a", "a", "b", "b"], [1, 2, 1, 2], [1, 2, 0, 3])
    rounded = {
        rounding: median_labels(labels, rounding=rounding).tolist() for rounding in aggregation.ROUNDINGS
    }
    assert rounded == {
        "floor": [1.0, 1.0],
        "ceil": [2.0, 2.0],
        "half_up": [2.0, 2.0],
        "half_even": [2.0, 2.0],
        "low": [1.0, 0.0],
        "high": [2.0, 3.0],
        "none": [1.5, 1.5],
    }
    with pytest.raises(StatsInputError):
        median_labels(labels, rounding="nearest")  # type: ignore[arg-type]


# --- the agreement filter -------------------------------------------------------------------------


@given(matrix=grade_matrices(), tolerance=st.sampled_from([0.0, 1.0, 2.0]), min_labels=st.integers(1, 4))
@FAST
def test_it_filters_with_reasons_like_a_loop(matrix: np.ndarray, tolerance: float, min_labels: int) -> None:
    result = agreement_filter(LongLabels.from_matrix(matrix), tolerance=tolerance, min_labels=min_labels)
    reasons = []
    for values in rows_of(matrix):
        if values.size < min_labels:
            reasons.append("too_few_labels")
        else:
            reasons.append("kept" if np.ptp(values) <= tolerance else "disagreement")
    assert result.reason.tolist() == reasons
    assert result.kept.tolist() == [reason == "kept" for reason in reasons]
    assert result.counts() == {
        reason: reasons.count(reason) for reason in ("kept", "too_few_labels", "disagreement")
    }
    assert_close(result.spread, [np.ptp(values) if values.size else nan for values in rows_of(matrix)])


def test_it_rejects_bad_filter_options() -> None:
    labels = LongLabels.from_matrix([[1.0, 2.0]])
    with pytest.raises(StatsInputError):
        agreement_filter(labels, tolerance=-1.0)
    with pytest.raises(StatsInputError):
        agreement_filter(labels, min_labels=0)


# --- mean and majority ----------------------------------------------------------------------------


@given(matrix=grade_matrices())
@FAST
def test_it_averages_like_a_loop(matrix: np.ndarray) -> None:
    expected = [values.mean() if values.size else nan for values in rows_of(matrix)]
    assert_close(mean_labels(LongLabels.from_matrix(matrix)), expected)


@pytest.mark.parametrize("tie_break", ["low", "high"])
@given(matrix=grade_matrices())
@FAST
def test_it_takes_the_majority_with_deterministic_ties(tie_break: str, matrix: np.ndarray) -> None:
    expected = []
    for values in rows_of(matrix):
        counts = Counter(values.tolist())
        if not counts:
            expected.append(nan)
            continue
        top = max(counts.values())
        tied = [value for value, count in counts.items() if count == top]
        expected.append(min(tied) if tie_break == "low" else max(tied))
    assert_close(majority_labels(LongLabels.from_matrix(matrix), tie_break=tie_break), expected)  # type: ignore[arg-type]


@pytest.mark.parametrize("method", METHODS)
def test_it_dispatches_every_method(method: str) -> None:
    matrix = np.array([[0, 1, 1], [3, 4, nan], [2, 2, 2], [nan, nan, nan]])
    labels = LongLabels.from_matrix(matrix)
    result = aggregate_labels(labels, method=method)  # type: ignore[arg-type]
    expected = {
        "median": [1.0, 3.0, 2.0, nan],
        "mean": [2 / 3, 3.5, 2.0, nan],
        "majority": [1.0, 3.0, 2.0, nan],
    }
    if method in expected:
        assert_close(result, expected[method])
    else:
        assert result[2] == 2.0 and math.isnan(result[3])


def test_it_rejects_unknown_methods() -> None:
    with pytest.raises(StatsInputError):
        aggregate_labels(LongLabels.from_matrix([[1.0]]), method="vote")  # type: ignore[arg-type]


# --- Dawid-Skene ----------------------------------------------------------------------------------


def synthetic_crowd(
    seed: int, *, n_items: int = 3000, per_item: int = 5
) -> tuple[LongLabels, np.ndarray, np.ndarray]:
    """3 classes; 4 good annotators (85% right), 3 who shift every class by one, 3 who answer at random."""
    rng = np.random.default_rng(seed)
    n_annotators, n_classes = 10, 3
    confusion = np.empty((n_annotators, n_classes, n_classes))
    confusion[:4] = np.full((n_classes, n_classes), 0.075) + np.eye(n_classes) * 0.775
    confusion[4:7] = np.roll(np.full((n_classes, n_classes), 0.05) + np.eye(n_classes) * 0.85, 1, axis=1)
    confusion[7:] = 1.0 / n_classes
    truth = rng.integers(0, n_classes, n_items)
    annotators = np.argpartition(rng.random((n_items, n_annotators)), per_item, axis=1)[:, :per_item].ravel()
    items = np.repeat(np.arange(n_items), per_item)
    cumulative = confusion[annotators, truth[items]].cumsum(axis=1)
    answers = (rng.random(items.size)[:, None] > cumulative).sum(axis=1)
    return LongLabels.from_codes(items, annotators, answers), truth, confusion


def test_it_recovers_the_truth_better_than_majority_vote() -> None:
    labels, truth, confusion = synthetic_crowd(1)
    result = dawid_skene(labels)
    ds_accuracy = float(np.mean(result.labels == truth))
    mv_accuracy = float(np.mean(majority_labels(labels) == truth))
    assert result.converged and result.n_iter < 100
    assert ds_accuracy > 0.9 > 0.6 > mv_accuracy
    # It learns who is good, who is shifted and who guesses.
    assert np.abs(result.confusion[:4] - confusion[:4]).max() < 0.06
    assert np.abs(result.confusion[4:7] - confusion[4:7]).max() < 0.06
    assert np.abs(result.confusion[7:] - confusion[7:]).max() < 0.1
    assert_close(result.posteriors.sum(axis=1), np.ones(labels.n_items))
    assert result.priors.sum() == pytest.approx(1.0)


def test_it_is_deterministic() -> None:
    labels, _, _ = synthetic_crowd(2, n_items=500)
    first, second = dawid_skene(labels), dawid_skene(labels)
    np.testing.assert_array_equal(first.posteriors, second.posteriors)
    assert first.n_iter == second.n_iter and first.log_likelihood == second.log_likelihood


def test_it_clamps_gold_items_and_learns_from_them() -> None:
    labels, truth, _ = synthetic_crowd(3, n_items=600, per_item=3)
    gold = {u: float(truth[u]) for u in range(150)}
    anchored = dawid_skene(labels, gold=gold)
    np.testing.assert_array_equal(anchored.labels[:150], truth[:150])
    np.testing.assert_array_equal(anchored.posteriors[:150], np.eye(3)[truth[:150]])
    free = dawid_skene(labels)
    assert np.mean(anchored.labels[150:] == truth[150:]) >= np.mean(free.labels[150:] == truth[150:]) - 0.01


def test_it_adds_gold_only_classes_and_skips_unlabelled_items() -> None:
    labels = LongLabels.from_codes([0, 0, 1, 1], [0, 1, 0, 1], [1, 1, 2, 2], n_items=3)
    result = dawid_skene(labels, gold={1: 4.0})
    assert result.classes.tolist() == [1.0, 2.0, 4.0]
    assert result.labels[1] == 4.0 and math.isnan(result.labels[2])
    assert np.isnan(result.posteriors[2]).all()


def test_it_agrees_with_a_unanimous_crowd_and_stops_at_the_cap() -> None:
    labels = LongLabels.from_matrix([[0, 0, 0], [2, 2, 2], [1, 1, 1], [2, 2, 2]])
    assert dawid_skene(labels).labels.tolist() == [0.0, 2.0, 1.0, 2.0]
    capped = dawid_skene(synthetic_crowd(4, n_items=300)[0], max_iter=1)
    assert capped.n_iter == 1 and not capped.converged
    with pytest.raises(StatsInputError):
        dawid_skene(labels, max_iter=0)
