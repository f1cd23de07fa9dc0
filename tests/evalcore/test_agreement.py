"""Tests for evalcore.agreement: every measure against its reference implementation.

References: the ``krippendorff`` package (alpha, all levels, missing data),
statsmodels (``fleiss_kappa`` on ``aggregate_raters`` tables), scikit-learn
(``cohen_kappa_score``, all weightings), brute-force loops over items and
resamples, and the published examples: Krippendorff (2011), Fleiss (1971) as
on Wikipedia, and seed 004 (section 21.3.2).
"""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import cohens_kappa as statsmodels_kappa
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss_kappa

from evalcore import agreement
from evalcore.agreement import (
    LEVELS,
    MEASURES,
    AgreementStats,
    Level,
    LongLabels,
    StatsInputError,
    _bootstrap,
    _cohen,
    _labels,
    _median,
    _stats,
    agreement_report,
    agreement_stats,
    annotator_quality,
    bootstrap_agreement,
    cohen_kappa_from_confusion,
    cohen_kappa_matrix,
    exact_agreement,
    fleiss_kappa,
    item_medians,
    krippendorff_alpha,
    krippendorff_alpha_from_coincidence,
    leave_one_out_medians,
    pair_confusion,
    pairwise_agreement,
    read_annotations_csv,
)
from evalcore.errors import FormatError
from evalcore.stats import ConfidenceInterval
from evalcore.stats import _validation as stats_validation

FAST = settings(max_examples=60, deadline=None)
nan = np.nan

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the example with missing data:
# 4 coders (rows) x 12 units; also the ordinal and ratio examples of the krippendorff package docs.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
]
KRIPPENDORFF_2011_ALPHA = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}
# The krippendorff package's own docstring example: 3 coders x 15 units.
KRIPPENDORFF_DOCS = [
    [nan, nan, nan, nan, nan, 3, 4, 1, 2, 1, 1, 3, 3, nan, 3],
    [1, nan, 2, 1, 3, 3, 4, 3, nan, nan, nan, nan, nan, nan, nan],
    [nan, nan, 2, 1, 3, 4, 4, nan, 2, 1, 1, 3, 3, nan, 4],
]
# Fleiss (1971) as on Wikipedia: 10 subjects, 14 raters, 5 categories; kappa 0.210.
FLEISS_TABLE = np.array(
    [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
)


@st.composite
def rating_matrices(
    draw: st.DrawFn,
    *,
    max_items: int = 25,
    min_annotators: int = 1,
    max_annotators: int = 6,
    values: tuple[float, ...] = (0, 1, 2, 3, 4),
    missing: bool = True,
) -> np.ndarray:
    """Items x annotators label matrices, NaN for a missing label."""
    n_items = draw(st.integers(1, max_items))
    n_annotators = draw(st.integers(min_annotators, max_annotators))
    shape = (n_items, n_annotators)
    # fill=st.nothing() draws every cell, instead of filling most with one repeated value.
    matrix = draw(hnp.arrays(np.float64, shape, elements=st.sampled_from(values), fill=st.nothing()))
    if missing:
        absent = draw(
            hnp.arrays(np.bool_, shape, elements=st.sampled_from([False, False, True]), fill=st.nothing())
        )
        matrix[absent] = nan
    return matrix


def reference_alpha(matrix: np.ndarray, level: Level) -> float:
    """krippendorff.alpha on our items x annotators matrix; NaN where the package refuses (undefined alpha)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            return float(krippendorff.alpha(reliability_data=matrix.T, level_of_measurement=level))
        except ValueError:
            return nan


def reference_kappa(first: np.ndarray, second: np.ndarray, weights: str | None) -> float:
    """scikit-learn's kappa over the full integer range of the grades, so that index = value - min."""
    grades = np.arange(-2, 11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(cohen_kappa_score(first, second, labels=grades, weights=weights))


def assert_close(actual: object, expected: object, atol: float = 1e-9) -> None:
    np.testing.assert_allclose(actual, expected, rtol=0, atol=atol, equal_nan=True)  # type: ignore[call-overload]


def items_of(matrix: np.ndarray) -> Iterator[np.ndarray]:
    for row in matrix:
        yield row[~np.isnan(row)]


# --- package hygiene ------------------------------------------------------------------------------


def test_it_never_imports_django() -> None:
    code = "import sys, evalcore.agreement, evalcore.aggregation; assert 'django' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_it_imports_scipy_only_when_a_computation_needs_it() -> None:
    """scipy.stats takes a second to import, scipy.sparse a fifth: eval_agreement needs neither."""
    code = (
        "import sys, evalcore.agreement, evalcore.stats; "
        "assert not [m for m in sys.modules if m.startswith('scipy')], sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_it_exports_every_public_name() -> None:
    for name in agreement.__all__:
        assert hasattr(agreement, name), name


# --- LongLabels -----------------------------------------------------------------------------------


def test_it_builds_the_same_labels_from_records_codes_and_a_matrix() -> None:
    matrix = np.array([[1, nan, 2], [nan, nan, nan], [3, 3, nan]])
    from_matrix = LongLabels.from_matrix(matrix)
    from_codes = LongLabels.from_codes([0, 0, 2, 2], [0, 2, 0, 1], [1, 2, 3, 3], n_items=3, n_annotators=3)
    from_records = LongLabels.from_records(["i0", "i0", "i2", "i2"], ["a", "c", "a", "b"], [1, 2, 3, 3])
    assert from_matrix.n_items == 3 and from_records.n_items == 2  # records only know the items they name
    np.testing.assert_array_equal(from_matrix.to_matrix(), matrix)
    np.testing.assert_array_equal(from_codes.to_matrix(), matrix)
    assert from_records.items.tolist() == ["i0", "i2"]
    assert from_records.annotators.tolist() == ["a", "b", "c"]
    assert from_matrix.values.tolist() == [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(from_matrix.values[from_matrix.code], from_matrix.value)


@given(rating_matrices(values=(-1.5, 0, 0.25, 1, 7, 1e6)))
@FAST
def test_it_encodes_any_values_in_sorted_order(matrix: np.ndarray) -> None:
    labels = LongLabels.from_matrix(matrix)
    present = matrix[~np.isnan(matrix)]
    np.testing.assert_array_equal(labels.values, np.unique(present))
    np.testing.assert_array_equal(labels.values[labels.code], labels.value)


def test_it_rejects_two_labels_in_one_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(StatsInputError, match="'q1' has more than one label from annotator 'bob'"):
        LongLabels.from_records(["q1", "q2", "q1"], ["bob", "bob", "bob"], [1, 2, 3])
    # The sort-based check, used when a bitmap of all cells would be too large.
    monkeypatch.setattr(_labels, "_DENSE_MIN_CELLS", 0)
    monkeypatch.setattr(_labels, "_BITMAP_CELLS_PER_LABEL", 0)
    with pytest.raises(StatsInputError, match="item 5 has more than one label from annotator 1"):
        LongLabels.from_codes([5, 5, 5], [1, 2, 1], [0, 0, 0])
    LongLabels.from_codes([5, 5, 4], [1, 2, 1], [0, 0, 0])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"item": [0, 1], "annotator": [0], "labels": [1, 2]}, "aligned"),
        ({"item": [0], "annotator": [0], "labels": [nan]}, "NaN or infinite"),
        ({"item": [0.5], "annotator": [0], "labels": [1]}, "integers"),
        ({"item": [-1], "annotator": [0], "labels": [1]}, ">= 0"),
        ({"item": [3], "annotator": [0], "labels": [1], "n_items": 2}, "out of range"),
    ],
)
def test_it_rejects_bad_codes(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(StatsInputError, match=message):
        LongLabels.from_codes(**kwargs)  # type: ignore[arg-type]


def test_it_selects_rows_and_looks_up_ids() -> None:
    labels = LongLabels.from_records(["a", "a", "b"], ["x", "y", "x"], [0, 4, 2])
    kept = labels.select(labels.value < 3)
    assert kept.n_labels == 2 and kept.values.tolist() == [0.0, 2.0] and kept.n_items == 2
    assert labels.item_codes(["b", "zz", "a"]).tolist() == [1, -1, 0]
    assert labels.annotator_codes([1, 2]).tolist() == [-1, -1]  # ids of another kind match nothing


# --- reading CSV ----------------------------------------------------------------------------------


def test_it_reads_annotations_from_csv(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("item,annotator,label\nq2,bob,1\nq1,ann,2.5\n\nq1,bob,3\n")
    labels = read_annotations_csv(path)
    assert labels.items.tolist() == ["q1", "q2"] and labels.annotators.tolist() == ["ann", "bob"]
    np.testing.assert_array_equal(labels.to_matrix(), [[2.5, 3.0], [nan, 1.0]])


def test_it_reports_the_earliest_bad_row(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("item,annotator,label\nq1,ann,1\nq2,ann,x\nq1,ann,2\nq3,ann\n")
    with pytest.raises(FormatError, match=r"labels\.csv:3: the label 'x' is not a finite number") as error:
        read_annotations_csv(path)
    assert (error.value.line, error.value.path) == (3, str(path))
    path.write_text("item,annotator,label\nq1,ann,1\nq1,ann,1\nq3,ann\nq2,ann,inf\n")
    with pytest.raises(
        FormatError, match=r":3: item 'q1' already has a label from annotator 'ann' \(line 2\)"
    ):
        read_annotations_csv(path)


def test_it_counts_lines_across_quoted_line_breaks(tmp_path: Path) -> None:
    path = tmp_path / "quoted.csv"
    path.write_text('item,annotator,label\n"two\nlines",ann,1\nq2,bob,?\n')
    with pytest.raises(FormatError, match=r"quoted\.csv:4: the label '\?'"):
        read_annotations_csv(path)
    path.write_text('item,annotator,label\n"two\nlines",ann,1\nq2,bob,0\n')
    assert read_annotations_csv(path).items.tolist() == ["q2", "two\nlines"]


# --- Krippendorff's alpha -------------------------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS)
def test_it_reproduces_krippendorffs_2011_example(level: Level) -> None:
    matrix = np.array(KRIPPENDORFF_2011).T
    alpha = krippendorff_alpha(LongLabels.from_matrix(matrix), level=level)  # type: ignore[arg-type]
    assert round(alpha, 3) == KRIPPENDORFF_2011_ALPHA[level]
    assert_close(alpha, krippendorff.alpha(reliability_data=KRIPPENDORFF_2011, level_of_measurement=level))


def test_it_reproduces_the_krippendorff_package_example() -> None:
    labels = LongLabels.from_matrix(np.array(KRIPPENDORFF_DOCS).T)
    assert round(krippendorff_alpha(labels, level="nominal"), 6) == 0.691358
    assert round(krippendorff_alpha(labels, level="interval"), 6) == 0.810845


@pytest.mark.parametrize("level", LEVELS)
@given(matrix=rating_matrices())
@FAST
def test_it_matches_the_krippendorff_package(level: Level, matrix: np.ndarray) -> None:
    alpha = krippendorff_alpha(LongLabels.from_matrix(matrix), level=level)  # type: ignore[arg-type]
    assert_close(alpha, reference_alpha(matrix, level))


@pytest.mark.parametrize("level", LEVELS)
@given(matrix=rating_matrices(values=(-3.0, -0.5, 0.0, 0.5, 2.0, 10.0)))
@FAST
def test_it_matches_the_krippendorff_package_on_real_values(level: Level, matrix: np.ndarray) -> None:
    alpha = krippendorff_alpha(LongLabels.from_matrix(matrix), level=level)  # type: ignore[arg-type]
    assert_close(alpha, reference_alpha(matrix, level))


def test_it_recomputes_alpha_from_value_counts() -> None:
    value_counts = np.array(
        [[1, 0, 0, 0], [0, 0, 0, 0], [0, 2, 0, 0], [2, 0, 0, 0], [0, 0, 2, 0], [0, 0, 2, 1]]
    )
    stats = AgreementStats.from_value_counts(value_counts)
    for level in LEVELS:
        expected = krippendorff.alpha(value_counts=value_counts, level_of_measurement=level)
        assert_close(stats.krippendorff_alpha(level), expected)


@given(matrix=rating_matrices())
@FAST
def test_it_recomputes_alpha_from_the_coincidence_matrix(matrix: np.ndarray) -> None:
    stats = agreement_stats(LongLabels.from_matrix(matrix))
    for level in LEVELS:
        recomputed = krippendorff_alpha_from_coincidence(stats.coincidence, values=stats.values, level=level)
        assert_close(recomputed, reference_alpha(matrix, level))


def test_it_drops_items_with_a_single_label() -> None:
    matrix = np.array([[1, 2, nan], [3, 3, 2], [0, 1, 1]])
    with_single = np.vstack([matrix, [[nan, 4, nan]], [[nan, nan, nan]]])
    for level in LEVELS:
        alone = krippendorff_alpha(LongLabels.from_matrix(matrix), level=level)
        assert_close(krippendorff_alpha(LongLabels.from_matrix(with_single), level=level), alone)


@pytest.mark.parametrize("level", LEVELS)
def test_it_gives_nan_where_alpha_is_undefined_and_the_package_raises(level: Level) -> None:
    undefined = {
        "constant labels": np.array([[2.0, 2.0], [2.0, 2.0], [2.0, nan]]),
        "a single annotator": np.array([[1.0], [2.0], [3.0]]),
        "all missing": np.full((3, 2), nan),
    }
    for name, matrix in undefined.items():
        assert math.isnan(krippendorff_alpha(LongLabels.from_matrix(matrix), level=level)), name  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            krippendorff.alpha(reliability_data=matrix.T, level_of_measurement=level)


def test_it_works_on_a_million_labels_like_the_package() -> None:
    rng = np.random.default_rng(7)
    n_items, n_annotators, per_item = 20_000, 50, 5
    annotators = np.argpartition(rng.random((n_items, n_annotators)), per_item, axis=1)[:, :per_item]
    truth = rng.integers(0, 5, n_items)
    grades = np.clip(truth[:, None] + rng.integers(-1, 2, (n_items, per_item)), 0, 4)
    labels = LongLabels.from_codes(
        np.repeat(np.arange(n_items), per_item), annotators.ravel(), grades.ravel()
    )
    for level in LEVELS:
        assert_close(krippendorff_alpha(labels, level=level), reference_alpha(labels.to_matrix(), level))


CORNER_CASES = {
    "a single annotator": np.array([[1.0], [2.0], [3.0]]),
    "constant labels": np.array([[2.0, 2.0], [2.0, 2.0], [2.0, nan]]),
    "all missing": np.full((3, 2), nan),
    "one label per item": np.array([[1.0, nan], [nan, 3.0]]),
}


@pytest.mark.parametrize("case", CORNER_CASES)
def test_it_gives_nan_for_undefined_measures_in_corner_cases(case: str) -> None:
    matrix = CORNER_CASES[case]
    labels = LongLabels.from_matrix(matrix)
    stats = agreement_stats(labels)
    for level in LEVELS:
        assert math.isnan(stats.krippendorff_alpha(level))
    assert math.isnan(stats.fleiss_kappa())
    kappas = cohen_kappa_matrix(labels, weights="quadratic")
    assert kappas.shape == (matrix.shape[1],) * 2 and np.isnan(kappas).all()
    pairable = (~np.isnan(matrix)).sum(axis=1) >= 2
    # Constant labels agree exactly; the other cases have no pair of labels to compare.
    expected_rate = 1.0 if pairable.any() else nan
    assert_close([stats.exact_agreement(), stats.pairwise_agreement()], [expected_rate] * 2)
    quality = annotator_quality(labels, gold={0: 2.0})
    assert quality.n_labels.sum() == labels.n_labels


# --- Fleiss' kappa, exact and pairwise agreement ---------------------------------------------------


def test_it_reproduces_the_fleiss_1971_example() -> None:
    stats = AgreementStats.from_value_counts(FLEISS_TABLE)
    assert round(stats.fleiss_kappa(), 3) == 0.210
    assert_close(stats.fleiss_kappa(), statsmodels_fleiss_kappa(FLEISS_TABLE))
    subjects = np.repeat(np.arange(10), 14)
    categories = np.concatenate([np.repeat(np.arange(5), row) for row in FLEISS_TABLE])
    raters = np.tile(np.arange(14), 10)
    assert_close(fleiss_kappa(LongLabels.from_codes(subjects, raters, categories)), 0.20993070442195522)


@given(matrix=rating_matrices(min_annotators=2, missing=False))
@FAST
def test_it_matches_statsmodels_fleiss_kappa(matrix: np.ndarray) -> None:
    table, _ = aggregate_raters(matrix)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = statsmodels_fleiss_kappa(table)
    assert_close(fleiss_kappa(LongLabels.from_matrix(matrix)), expected)


@given(matrix=rating_matrices())
@FAST
def test_it_generalises_fleiss_to_varying_numbers_of_labels(matrix: np.ndarray) -> None:
    rows = [row for row in items_of(matrix) if row.size >= 2]
    if not rows:
        assert math.isnan(fleiss_kappa(LongLabels.from_matrix(matrix)))
        return
    categories = np.unique(np.concatenate(rows))
    per_item = [
        sum(c * (c - 1) for c in (row[:, None] == categories).sum(0)) / (row.size * (row.size - 1))
        for row in rows
    ]
    shares = np.concatenate(rows)[:, None] == categories
    chance = float(((shares.sum(0) / shares.sum()) ** 2).sum())
    expected = (np.mean(per_item) - chance) / (1 - chance) if chance < 1 else nan
    assert_close(fleiss_kappa(LongLabels.from_matrix(matrix)), expected)


@given(matrix=rating_matrices(), tolerance=st.sampled_from([0.0, 1.0, 2.5]))
@FAST
def test_it_matches_brute_force_agreement_rates(matrix: np.ndarray, tolerance: float) -> None:
    rows = [row for row in items_of(matrix) if row.size >= 2]
    labels = LongLabels.from_matrix(matrix)
    pairs = [abs(a - b) <= tolerance for row in rows for a, b in itertools.combinations(row, 2)]
    assert_close(pairwise_agreement(labels, tolerance=tolerance), np.mean(pairs) if pairs else nan)
    unanimous = [np.ptp(row) == 0 for row in rows]
    assert_close(exact_agreement(labels), np.mean(unanimous) if unanimous else nan)


def test_it_gives_nan_rates_without_a_pairable_item() -> None:
    labels = LongLabels.from_matrix([[1.0, nan], [nan, 2.0]])
    stats = agreement_stats(labels)
    assert stats.n_pairable == 0 and stats.n_items == 2
    for measure in (stats.exact_agreement(), stats.pairwise_agreement(), stats.fleiss_kappa()):
        assert math.isnan(measure)


def test_it_works_on_the_sparse_count_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    matrix = np.array(KRIPPENDORFF_2011).T
    dense = agreement_stats(LongLabels.from_matrix(matrix))
    monkeypatch.setattr(_labels, "_DENSE_MIN_CELLS", 0)
    monkeypatch.setattr(_labels, "_DENSE_CELLS_PER_LABEL", 0)
    labels = LongLabels.from_matrix(matrix)
    assert not isinstance(_stats.item_value_counts(labels), np.ndarray)
    sparse = agreement_stats(labels)
    assert_close(sparse.coincidence, dense.coincidence)
    assert_close(sparse.pair_counts, dense.pair_counts)
    assert (sparse.n_unanimous, sparse.fleiss_sum) == (dense.n_unanimous, pytest.approx(dense.fleiss_sum))


def test_it_refuses_too_many_distinct_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_stats, "MAX_VALUES", 3)
    with pytest.raises(StatsInputError, match="bin them first"):
        agreement_stats(LongLabels.from_matrix([[0, 1], [2, 3]]))


# --- merging sufficient statistics ----------------------------------------------------------------


@given(matrix=rating_matrices(max_items=30), data=st.data())
@FAST
def test_it_merges_the_stats_of_disjoint_items(matrix: np.ndarray, data: st.DataObject) -> None:
    in_first = data.draw(hnp.arrays(np.bool_, matrix.shape[0], elements=st.booleans()))
    whole = LongLabels.from_matrix(matrix)
    first, second = LongLabels.from_matrix(matrix[in_first]), LongLabels.from_matrix(matrix[~in_first])
    merged = agreement_stats(first) + agreement_stats(second)
    expected = agreement_stats(whole)
    assert merged.values.tolist() == expected.values.tolist()
    assert_close(merged.coincidence, expected.coincidence)
    assert_close(merged.pair_counts, expected.pair_counts)
    assert (merged.n_items, merged.n_pairable, merged.n_unanimous) == (
        expected.n_items,
        expected.n_pairable,
        expected.n_unanimous,
    )
    assert (merged.min_labels, merged.max_labels) == (expected.min_labels, expected.max_labels)
    for kernel in MEASURES.values():
        assert_close(
            kernel(merged.sums(), merged.values, "ordinal"),
            kernel(expected.sums(), expected.values, "ordinal"),
        )


def test_it_merges_pair_confusions_over_different_annotators_and_values() -> None:
    first = LongLabels.from_records(["a", "a", "b", "b"], ["ann", "cy", "ann", "cy"], [0, 1, 1, 1])
    second = LongLabels.from_records(
        ["c", "c", "c", "d", "d"], ["bo", "cy", "ann", "ann", "bo"], [4, 3, 4, 0, 0]
    )
    whole = LongLabels.from_records(
        ["a", "a", "b", "b", "c", "c", "c", "d", "d"],
        ["ann", "cy", "ann", "cy", "bo", "cy", "ann", "ann", "bo"],
        [0, 1, 1, 1, 4, 3, 4, 0, 0],
    )
    merged = pair_confusion(first).merge(pair_confusion(second))
    expected = pair_confusion(whole)
    assert merged.annotators.tolist() == ["ann", "bo", "cy"]
    assert merged.values.tolist() == [0.0, 1.0, 3.0, 4.0]
    assert_close(merged.counts, expected.counts)
    np.testing.assert_array_equal(merged.shared_items(), expected.shared_items())
    for weights in _cohen.KAPPA_WEIGHTS:
        assert_close(merged.kappa_matrix(weights=weights), expected.kappa_matrix(weights=weights))


# --- Cohen's kappa --------------------------------------------------------------------------------


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@given(matrix=rating_matrices(min_annotators=2, values=(0, 1, 2, 4, 5)))
@FAST
def test_it_matches_scikit_learn_cohen_kappa_for_every_pair(weights: str | None, matrix: np.ndarray) -> None:
    kappas = cohen_kappa_matrix(LongLabels.from_matrix(matrix), weights=weights)  # type: ignore[arg-type]
    n_annotators = matrix.shape[1]
    assert kappas.shape == (n_annotators, n_annotators)
    assert np.isnan(np.diag(kappas)).all()
    for i, j in itertools.combinations(range(n_annotators), 2):
        shared = ~np.isnan(matrix[:, i]) & ~np.isnan(matrix[:, j])
        expected = reference_kappa(matrix[shared, i], matrix[shared, j], weights) if shared.any() else nan
        assert_close(kappas[i, j], expected)
        assert_close(kappas[j, i], expected)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@given(matrix=rating_matrices(min_annotators=2, values=(0, 1, 2, 4, 5)))
@FAST
def test_it_matches_scikit_learns_label_positions_for_every_pair(
    weights: str | None, matrix: np.ndarray
) -> None:
    """scale="positions": scikit-learn's default, weights by the index among the labels the pair used."""
    kappas = cohen_kappa_matrix(LongLabels.from_matrix(matrix), weights=weights, scale="positions")  # type: ignore[arg-type]
    for i, j in itertools.combinations(range(matrix.shape[1]), 2):
        shared = ~np.isnan(matrix[:, i]) & ~np.isnan(matrix[:, j])
        expected = nan
        if shared.any():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = float(cohen_kappa_score(matrix[shared, i], matrix[shared, j], weights=weights))
        assert_close(kappas[i, j], expected)
        assert_close(kappas[j, i], expected)


@pytest.mark.parametrize("weights", ["linear", "quadratic"])
@given(matrix=rating_matrices(min_annotators=2, max_annotators=3, values=(0, 1, 3, 4), missing=False))
@FAST
def test_it_matches_statsmodels_on_label_values(weights: str, matrix: np.ndarray) -> None:
    """scale="values" (the default, the dashboard's): statsmodels' kappa with the values as its weights."""
    labels = LongLabels.from_matrix(matrix)
    kappas = cohen_kappa_matrix(labels, weights=weights)  # type: ignore[arg-type]
    for i, j in itertools.combinations(range(matrix.shape[1]), 2):
        table = np.zeros((4, 4))
        grades = [0, 1, 3, 4]
        np.add.at(
            table, ([grades.index(v) for v in matrix[:, i]], [grades.index(v) for v in matrix[:, j]]), 1
        )
        margins = table.sum(axis=0) + table.sum(axis=1)
        used = margins > 0
        if used.sum() < 2:
            continue  # undefined: statsmodels divides by zero
        wt = "linear" if weights == "linear" else "quadratic"
        expected = statsmodels_kappa(
            table[np.ix_(used, used)], weights=np.array(grades)[used], wt=wt, return_results=False
        )
        assert_close(kappas[i, j], expected)


def test_it_weighs_a_grade_never_used_by_value_or_by_position() -> None:
    """Grades 0, 1 and 3 (2 never used): by value 0 and 3 are three steps apart, by position two."""
    first = np.array([0, 0, 1, 3, 3, 1, 0, 3])
    second = np.array([0, 1, 1, 3, 1, 3, 0, 3])
    labels = LongLabels.from_matrix(np.stack([first, second], axis=1).astype(float))
    for weights in ("linear", "quadratic"):
        by_value = cohen_kappa_matrix(labels, weights=weights)[0, 1]
        by_position = cohen_kappa_matrix(labels, weights=weights, scale="positions")[0, 1]
        assert by_value == pytest.approx(
            cohen_kappa_score(first, second, labels=[0, 1, 2, 3], weights=weights)
        )
        assert by_position == pytest.approx(cohen_kappa_score(first, second, weights=weights))
        assert by_value != pytest.approx(by_position, abs=0.01)
    # The same by hand from the formula 1 - n sum(w C) / sum(w E), linear weights on the values.
    confusion = np.zeros((3, 3))
    index = {0: 0, 1: 1, 3: 2}
    np.add.at(confusion, ([index[v] for v in first], [index[v] for v in second]), 1)
    w = np.abs(np.subtract.outer([0, 1, 3], [0, 1, 3]))
    expected = 1 - 8 * (w * confusion).sum() / (w * np.outer(confusion.sum(1), confusion.sum(0))).sum()
    assert cohen_kappa_matrix(labels, weights="linear")[0, 1] == pytest.approx(expected, abs=1e-12)
    with pytest.raises(StatsInputError, match="scale"):
        cohen_kappa_matrix(labels, weights="linear", scale="ranks")  # type: ignore[arg-type]


def test_it_gives_nan_kappa_where_scikit_learn_does() -> None:
    matrix = np.array([[2, 2, nan], [2, 2, nan], [nan, nan, 1]])
    kappas = cohen_kappa_matrix(LongLabels.from_matrix(matrix))
    assert np.isnan(kappas).all()  # constant labels; pairs without a shared item; the diagonal
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert math.isnan(cohen_kappa_score([2, 2], [2, 2]))


def test_it_recomputes_kappa_from_a_confusion_matrix() -> None:
    first = np.array([0, 1, 2, 2, 1, 0, 2, 1])
    second = np.array([0, 2, 2, 1, 1, 0, 2, 0])
    confusion = np.zeros((3, 3))
    np.add.at(confusion, (first, second), 1)
    for weights in _cohen.KAPPA_WEIGHTS:
        assert_close(
            cohen_kappa_from_confusion(confusion, weights=weights),
            cohen_kappa_score(first, second, weights=weights),
        )
    stacked = cohen_kappa_from_confusion(np.stack([confusion, confusion.T, np.zeros((3, 3))]))
    assert_close(stacked[:2], [cohen_kappa_score(first, second)] * 2)
    assert math.isnan(stacked[2])


def test_it_counts_shared_items_and_orients_confusions() -> None:
    labels = LongLabels.from_matrix(np.array([[0, 1, nan], [1, 1, 0], [nan, 0, 0]]))
    confusion = pair_confusion(labels)
    np.testing.assert_array_equal(confusion.shared_items(), [[0, 2, 1], [2, 0, 2], [1, 2, 0]])
    np.testing.assert_array_equal(confusion.confusion(0, 1), [[0, 1], [0, 1]])
    np.testing.assert_array_equal(confusion.confusion(1, 0), [[0, 0], [1, 1]])
    with pytest.raises(StatsInputError):
        confusion.pair_index(1, 1)


def test_it_builds_pairs_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    matrix = rng.integers(0, 4, (200, 7)).astype(float)
    matrix[rng.random(matrix.shape) < 0.3] = nan
    labels = LongLabels.from_matrix(matrix)
    whole = pair_confusion(labels).counts
    monkeypatch.setattr(_cohen, "_CHUNK_PAIRS", 5)
    assert_close(pair_confusion(LongLabels.from_matrix(matrix)).counts, whole)


@given(matrix=rating_matrices(min_annotators=2, values=(0, 1, 2, 4, 5)))
@FAST
def test_it_counts_pairs_in_both_orders_as_in_one(matrix: np.ndarray) -> None:
    """Few annotators: ordered pairs folded; many: each pair swapped into order. The same counts."""
    labels = LongLabels.from_matrix(matrix)
    folded = pair_confusion(labels).counts
    previous = _cohen._MAX_ORDERED_CELLS
    _cohen._MAX_ORDERED_CELLS = 0
    try:
        swapped = pair_confusion(labels).counts
    finally:
        _cohen._MAX_ORDERED_CELLS = previous
    np.testing.assert_array_equal(folded, swapped)
    for pair, (i, j) in enumerate(itertools.combinations(range(matrix.shape[1]), 2)):
        shared = ~np.isnan(matrix[:, i]) & ~np.isnan(matrix[:, j])
        expected = np.zeros((labels.n_values, labels.n_values))
        np.add.at(expected, (np.searchsorted(labels.values, matrix[shared, i]),
                             np.searchsorted(labels.values, matrix[shared, j])), 1)  # fmt: skip
        np.testing.assert_array_equal(folded[pair], expected)


@given(
    keys=hnp.arrays(
        np.int64,
        st.integers(0, 300),
        elements=st.sampled_from([0, 1, 7, 2**16, 2**16 + 1, 2**32 - 1, 2**32, 2**40]),
    )
)
@FAST
def test_it_sorts_keys_stably_like_numpy(keys: np.ndarray) -> None:
    np.testing.assert_array_equal(_labels.stable_argsort(keys), np.argsort(keys, kind="stable"))


# --- per-annotator quality ------------------------------------------------------------------------


def test_it_reproduces_the_seed_gold_accuracy_example() -> None:
    gold = {"q0_c0": 3, "q1_c0": 1, "q2_c0": 4}
    items, annotators, ratings = [], [], []
    for i, (task, expected) in enumerate(gold.items()):
        items += [task, task]
        annotators += ["annotator_1", "annotator_2"]
        ratings += [expected, expected if i % 2 == 0 else expected - 1]
    quality = annotator_quality(LongLabels.from_records(items, annotators, ratings), gold=gold)
    assert [f"{accuracy:.0%}" for accuracy in quality.gold_accuracy] == ["100%", "67%"]
    assert quality.gold_seen.tolist() == [3, 3]
    assert quality.reliable(min_gold=3).tolist() == [True, False]
    assert quality.reliable().tolist() == [False, False]  # fewer than 10 gold items


@pytest.mark.parametrize("rounding", _median.ROUNDINGS)
@given(matrix=rating_matrices(max_annotators=5), gold_mask=st.integers(0, 2**25 - 1))
@FAST
def test_it_matches_brute_force_annotator_quality(rounding: str, matrix: np.ndarray, gold_mask: int) -> None:
    labels = LongLabels.from_matrix(matrix)
    gold = {u: float(u % 5) for u in range(matrix.shape[0]) if gold_mask >> u & 1}
    quality = annotator_quality(labels, gold=gold, tolerance=1.0, rounding=rounding)  # type: ignore[arg-type]
    for a in range(matrix.shape[1]):
        rated = np.flatnonzero(~np.isnan(matrix[:, a]))
        errors = [abs(matrix[u, a] - gold[int(u)]) for u in rated if int(u) in gold]
        assert quality.gold_seen[a] == len(errors)
        assert_close(quality.gold_accuracy[a], np.mean([e == 0 for e in errors]) if errors else nan)
        assert_close(quality.gold_accuracy_within[a], np.mean([e <= 1 for e in errors]) if errors else nan)
        assert_close(quality.gold_mae[a], np.mean(errors) if errors else nan)
        distances = []
        for u in rated:
            others = np.delete(matrix[u], a)
            others = others[~np.isnan(others)]
            if others.size:
                distances.append(abs(matrix[u, a] - brute_median(others, rounding)))
        assert quality.consensus_seen[a] == len(distances)
        assert_close(
            quality.consensus_agreement[a], np.mean([d == 0 for d in distances]) if distances else nan
        )
        assert_close(
            quality.consensus_agreement_within[a], np.mean([d <= 1 for d in distances]) if distances else nan
        )


def brute_median(values: np.ndarray, rounding: str) -> float:
    ordered = np.sort(values)
    low, high = ordered[(ordered.size - 1) // 2], ordered[ordered.size // 2]
    middle = (low + high) / 2
    return {
        "floor": math.floor(middle),
        "ceil": math.ceil(middle),
        "half_up": math.floor(middle + 0.5),
        "half_even": round(middle),
        "low": low,
        "high": high,
        "none": float(np.median(values)),
    }[rounding]


@pytest.mark.parametrize("rounding", _median.ROUNDINGS)
@given(matrix=rating_matrices(values=(0, 1, 2, 3, 4, 0.5)))
@FAST
def test_it_matches_brute_force_medians(rounding: str, matrix: np.ndarray) -> None:
    labels = LongLabels.from_matrix(matrix)
    expected = [brute_median(row, rounding) if row.size else nan for row in items_of(matrix)]
    assert_close(item_medians(labels, rounding=rounding), expected)  # type: ignore[arg-type]
    loo = leave_one_out_medians(labels, rounding=rounding)  # type: ignore[arg-type]
    for j in range(labels.n_labels):
        row = matrix[labels.item[j]]
        others = np.delete(row, labels.annotator[j])
        others = others[~np.isnan(others)]
        assert_close(loo[j], brute_median(others, rounding) if others.size else nan)


# --- bootstrap ------------------------------------------------------------------------------------


def brute_force_distribution(
    matrix: np.ndarray, *, n_resamples: int, seed: int, level: str
) -> dict[str, list[float]]:
    """Resample the pairable items with the same draws, one resample and one full recomputation at a time."""
    pairable = matrix[(~np.isnan(matrix)).sum(axis=1) >= 2]
    draws = np.random.default_rng(seed).integers(0, pairable.shape[0], size=(n_resamples, pairable.shape[0]))
    result: dict[str, list[float]] = {name: [] for name in MEASURES}
    for rows in draws:
        stats = agreement_stats(LongLabels.from_matrix(pairable[rows]))
        result["exact_agreement"].append(stats.exact_agreement())
        result["pairwise_agreement"].append(stats.pairwise_agreement())
        result["pairwise_agreement_within_1"].append(stats.pairwise_agreement(tolerance=1))
        result["fleiss_kappa"].append(stats.fleiss_kappa())
        result["krippendorff_alpha"].append(stats.krippendorff_alpha(level))  # type: ignore[arg-type]
    return result


@pytest.mark.parametrize("level", LEVELS)
def test_it_bootstraps_like_resampling_items_one_at_a_time(level: Level) -> None:
    matrix = np.array(KRIPPENDORFF_2011).T
    labels = LongLabels.from_matrix(matrix)
    distributions = _bootstrap._resampled(labels, list(MEASURES), level=level, n_resamples=60, seed=5)  # type: ignore[arg-type]
    expected = brute_force_distribution(matrix, n_resamples=60, seed=5, level=level)
    for name in MEASURES:
        assert_close(distributions[name], expected[name])


def test_it_does_not_depend_on_batches_or_feature_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(11)
    matrix = rng.integers(0, 5, (300, 6)).astype(float)
    matrix[rng.random(matrix.shape) < 0.4] = nan
    labels = LongLabels.from_matrix(matrix)
    whole = bootstrap_agreement(labels, n_resamples=50, seed=2)
    monkeypatch.setattr(stats_validation, "MAX_BATCH_ELEMENTS", 1000)
    monkeypatch.setattr(_bootstrap, "MAX_BATCH_ELEMENTS", 200)
    monkeypatch.setattr(_bootstrap, "_MAX_CACHED_FEATURES", 0)
    chunked = bootstrap_agreement(labels, n_resamples=50, seed=2)
    for name in MEASURES:
        assert_close(chunked[name].low, whole[name].low, atol=1e-12)
        assert_close(chunked[name].high, whole[name].high, atol=1e-12)


def test_it_gives_deterministic_intervals_around_the_estimate() -> None:
    labels = LongLabels.from_matrix(np.array(KRIPPENDORFF_2011).T)
    first = bootstrap_agreement(labels, level="interval", n_resamples=300, seed=9)
    assert first == bootstrap_agreement(labels, level="interval", n_resamples=300, seed=9)
    alpha = first["krippendorff_alpha"]
    assert isinstance(alpha, ConfidenceInterval)
    assert alpha.estimate == pytest.approx(0.849, abs=5e-4)
    assert alpha.low < alpha.estimate < alpha.high <= 1.0
    assert alpha.std_error > 0 and alpha.confidence == 0.95


def test_it_bootstraps_to_nan_without_a_pairable_item() -> None:
    intervals = bootstrap_agreement(LongLabels.from_matrix([[1.0, nan], [nan, 2.0]]), n_resamples=10)
    assert all(math.isnan(ci.estimate) and math.isnan(ci.low) for ci in intervals.values())


@pytest.mark.parametrize(
    "kwargs",
    [{"measures": ["cohen"]}, {"level": "cardinal"}, {"n_resamples": 0}, {"confidence": 1.0}],
)
def test_it_rejects_bad_bootstrap_options(kwargs: dict[str, object]) -> None:
    with pytest.raises(StatsInputError):
        bootstrap_agreement(LongLabels.from_matrix([[1.0, 2.0]]), **kwargs)  # type: ignore[arg-type]


# --- report ---------------------------------------------------------------------------------------


def test_it_reports_everything_at_once() -> None:
    matrix = np.array(KRIPPENDORFF_2011).T
    labels = LongLabels.from_matrix(matrix)
    report = agreement_report(labels, level="interval")
    assert (report.n_items, report.n_annotators, report.n_labels) == (12, 4, 41)
    assert round(report.krippendorff_alpha, 3) == 0.849
    assert report.fleiss_kappa == fleiss_kappa(labels)
    assert report.exact_agreement == exact_agreement(labels)
    assert report.pairwise_agreement == pairwise_agreement(labels)
    assert sorted(report.cohen_kappa) == ["linear", "quadratic", "unweighted"]
    assert_close(report.cohen_kappa["linear"], cohen_kappa_matrix(labels, weights="linear"))
    with pytest.raises(StatsInputError):
        agreement_report(labels, level="cardinal")  # type: ignore[arg-type]
