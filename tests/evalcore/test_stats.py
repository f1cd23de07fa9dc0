"""Tests for evalcore.stats: each statistic against its reference implementation.

References: scipy (ttest_rel, wilcoxon, bootstrap, permutation_test), statsmodels
(multipletests, NormalIndPower), exact enumeration of sign flips, and the worked
examples of seed 004 (sections 21.5 and 21.6.1).
"""

from __future__ import annotations

import gc
import itertools
import math
import subprocess
import sys
from fractions import Fraction
from unittest import mock

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import stats as scipy_stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import NormalIndPower

from evalcore import stats
from evalcore.stats import (
    StatsInputError,
    _validation,
    adjust_p_values,
    bootstrap_ci,
    minimum_detectable_effect,
    minimum_detectable_effect_paired,
    paired_bootstrap_ci,
    paired_t_test,
    paired_test,
    randomization_test,
    sample_size_paired,
    sample_size_per_group,
    stratified_mean,
    stratified_sample,
    stratum_allocation,
    wilcoxon_test,
)

FAST = settings(max_examples=40, deadline=None)

scores_strategy = st.integers(min_value=2, max_value=40).flatmap(
    lambda n: st.tuples(
        hnp.arrays(np.float64, n, elements=st.floats(0.0, 1.0)),
        hnp.arrays(np.float64, n, elements=st.floats(0.0, 1.0)),
    )
)
# Scores on a coarse grid, so that ties and zero differences are common.
gridded_scores_strategy = st.integers(min_value=1, max_value=60).flatmap(
    lambda n: st.tuples(
        hnp.arrays(np.float64, n, elements=st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])),
        hnp.arrays(np.float64, n, elements=st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])),
    )
)
p_values_strategy = st.lists(
    st.one_of(
        st.sampled_from([0.0, 0.001, 0.01, 0.0125, 0.025, 0.05, 0.5, 1.0]),
        st.floats(0.0, 1.0),
    ),
    max_size=30,
)


def seed_recall_values() -> np.ndarray:
    """Seed 004, 21.5.2: simulated Recall@10 of 1,000 queries."""
    np.random.seed(42)  # noqa: NPY002 - the seed's own legacy RNG, to get its exact data
    return np.random.beta(8, 2, 1000)  # noqa: NPY002


# --- module hygiene -------------------------------------------------------------------


def test_it_never_imports_django() -> None:
    code = "import sys, evalcore.stats; assert 'django' not in sys.modules, 'django imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_it_recommends_the_t_and_randomization_tests_over_wilcoxon() -> None:
    assert stats.__doc__ is not None
    assert "Smucker" in stats.__doc__
    assert "CIKM 2007" in stats.__doc__


# --- bootstrap ------------------------------------------------------------------------


@pytest.mark.parametrize("statistic", ["mean", "median"])
def test_it_matches_scipy_percentile_bootstrap_with_the_same_resamples(statistic: str) -> None:
    scores = np.random.default_rng(7).beta(2, 5, 80)
    ours = bootstrap_ci(scores, n_resamples=3_000, confidence=0.9, seed=11, statistic=statistic)  # type: ignore[arg-type]
    reference = scipy_stats.bootstrap(
        (scores,),
        getattr(np, statistic),
        n_resamples=3_000,
        confidence_level=0.9,
        method="percentile",
        rng=np.random.default_rng(11),
    )
    assert ours.low == pytest.approx(reference.confidence_interval.low, rel=1e-12)
    assert ours.high == pytest.approx(reference.confidence_interval.high, rel=1e-12)
    assert ours.std_error == pytest.approx(reference.standard_error, rel=1e-12)
    assert ours.estimate == pytest.approx(getattr(np, statistic)(scores))
    assert ours.confidence == 0.9


def test_it_reproduces_the_seed_recall_interval() -> None:
    ci = bootstrap_ci(seed_recall_values(), n_resamples=10_000, confidence=0.95, seed=0)
    assert f"{ci.estimate:.4f}" == "0.7956"
    # The seed used the legacy global RNG with 1,000 resamples: same data, other resamples.
    assert ci.low == pytest.approx(0.7880, abs=0.001)
    assert ci.high == pytest.approx(0.8023, abs=0.001)
    assert ci.std_error == pytest.approx(0.0036, abs=0.0003)


def test_it_does_not_depend_on_the_batch_size(monkeypatch: pytest.MonkeyPatch) -> None:
    scores = np.random.default_rng(1).random(50)
    a, b = np.random.default_rng(2).random((2, 30))
    whole = bootstrap_ci(scores, n_resamples=500, seed=3)
    whole_test = randomization_test(a, b, n_permutations=500, seed=3)
    monkeypatch.setattr(_validation, "MAX_BATCH_ELEMENTS", 7 * 50 + 3)
    assert _validation.batch_rows(50) == 7
    assert bootstrap_ci(scores, n_resamples=500, seed=3) == whole
    assert randomization_test(a, b, n_permutations=500, seed=3) == whole_test


def test_it_bootstraps_deterministically_for_a_seed() -> None:
    scores = np.random.default_rng(5).random(40)
    assert bootstrap_ci(scores, seed=9) == bootstrap_ci(scores, seed=9)
    assert bootstrap_ci(scores, seed=9) != bootstrap_ci(scores, seed=10)


@FAST
@given(hnp.arrays(np.float64, st.integers(1, 60), elements=st.floats(-5.0, 5.0)))
def test_it_keeps_the_interval_inside_the_data_range(scores: np.ndarray) -> None:
    ci = bootstrap_ci(scores, n_resamples=200, seed=0)
    slack = 1e-12 * (1.0 + np.abs(scores).max())
    assert scores.min() - slack <= ci.low <= ci.high <= scores.max() + slack
    assert ci.std_error >= 0.0


def test_it_collapses_to_a_point_for_a_single_score() -> None:
    ci = bootstrap_ci([0.42], n_resamples=100)
    assert (ci.estimate, ci.low, ci.high, ci.std_error) == (0.42, 0.42, 0.42, 0.0)


def test_it_rejects_an_empty_score_array() -> None:
    with pytest.raises(StatsInputError, match="at least 1"):
        bootstrap_ci([])


@pytest.mark.parametrize(
    "kwargs",
    [{"confidence": 1.0}, {"confidence": 0.0}, {"n_resamples": 0}, {"statistic": "mode"}],
)
def test_it_rejects_bad_bootstrap_options(kwargs: dict[str, object]) -> None:
    with pytest.raises(StatsInputError):
        bootstrap_ci([0.1, 0.2], **kwargs)  # type: ignore[arg-type]


def test_it_rejects_non_finite_scores() -> None:
    with pytest.raises(StatsInputError, match="NaN"):
        bootstrap_ci([0.1, np.nan])
    with pytest.raises(StatsInputError, match="one-dimensional"):
        bootstrap_ci([[0.1, 0.2]])


def test_it_bootstraps_the_paired_difference() -> None:
    a, b = np.random.default_rng(4).random((2, 60))
    assert paired_bootstrap_ci(a, b, seed=2) == bootstrap_ci(a - b, seed=2)


# --- paired tests -----------------------------------------------------------------------


@FAST
@given(scores_strategy)
def test_it_matches_scipy_paired_t_test(pair: tuple[np.ndarray, np.ndarray]) -> None:
    a, b = pair
    assume(np.std(a - b) > 1e-6)
    ours = paired_t_test(a, b)
    reference = scipy_stats.ttest_rel(a, b)
    assert ours.statistic == pytest.approx(reference.statistic, rel=1e-9, abs=1e-12)
    assert ours.p_value == pytest.approx(reference.pvalue, rel=1e-9, abs=1e-15)
    assert (ours.test_name, ours.n) == ("t", a.size)


def test_it_gives_an_infinite_t_for_a_constant_non_zero_difference() -> None:
    result = paired_t_test([0.5, 0.6, 0.7], [0.4, 0.5, 0.6])
    assert math.isinf(result.statistic) or result.statistic > 1e14  # 0.1 is not exact in binary
    assert result.p_value == pytest.approx(0.0, abs=1e-12)
    exact = paired_t_test([1.0, 2.0, 3.0], [0.0, 1.0, 2.0])
    assert (exact.statistic, exact.p_value) == (math.inf, 0.0)


def test_it_needs_two_pairs_for_a_t_test() -> None:
    with pytest.raises(StatsInputError, match="at least 2"):
        paired_t_test([0.5], [0.4])


@settings(max_examples=60, deadline=None)
@given(gridded_scores_strategy)
def test_it_matches_scipy_wilcoxon(pair: tuple[np.ndarray, np.ndarray]) -> None:
    a, b = pair
    assume(np.any(a != b))
    ours = wilcoxon_test(a, b)
    reference = scipy_stats.wilcoxon(a, b)
    assert ours.statistic == reference.statistic
    assert ours.p_value == pytest.approx(reference.pvalue, rel=1e-12)
    assert (ours.test_name, ours.n) == ("wilcoxon", a.size)


def test_it_matches_scipy_wilcoxon_on_continuous_scores() -> None:
    rng = np.random.default_rng(8)
    for n in (8, 30, 80):
        a, b = rng.random((2, n))
        reference = scipy_stats.wilcoxon(a, b)
        assert wilcoxon_test(a, b).p_value == pytest.approx(reference.pvalue, rel=1e-12)


@pytest.mark.parametrize("test", ["t", "wilcoxon", "randomization"])
def test_it_gives_p_one_for_identical_runs(test: str) -> None:
    scores = np.random.default_rng(3).random(25)
    result = paired_test(scores, scores.copy(), test=test)  # type: ignore[arg-type]
    assert result.p_value == 1.0
    assert result.statistic == 0.0


def test_it_is_deterministic_for_a_seed() -> None:
    a, b = np.random.default_rng(6).random((2, 40))
    first = randomization_test(a, b, n_permutations=2_000, seed=123)
    assert randomization_test(a, b, n_permutations=2_000, seed=123) == first
    assert randomization_test(a, b, n_permutations=2_000, seed=124).p_value != first.p_value


@FAST
@given(scores_strategy, st.integers(1, 300))
def test_it_returns_a_randomization_p_value_in_the_unit_interval(
    pair: tuple[np.ndarray, np.ndarray], n_permutations: int
) -> None:
    a, b = pair
    result = randomization_test(a, b, n_permutations=n_permutations, seed=0)
    assert 1.0 / (1 + n_permutations) <= result.p_value <= 1.0
    # The +1 correction makes every p-value a multiple of 1 / (1 + n_permutations).
    count = result.p_value * (1 + n_permutations) - 1
    assert count == pytest.approx(round(count), abs=1e-6)


def test_it_applies_the_plus_one_correction() -> None:
    a = np.linspace(0.5, 1.0, 50)
    b = a - 0.3 - np.random.default_rng(0).random(50) * 0.01
    result = randomization_test(a, b, n_permutations=999, seed=0)
    assert result.p_value == 1 / 1000
    assert result.statistic == pytest.approx(np.mean(a - b))


def test_it_agrees_with_exact_enumeration_of_all_sign_flips() -> None:
    rng = np.random.default_rng(12)
    b = rng.random(10)
    a = b + rng.normal(0.08, 0.2, 10)
    differences = a - b
    signs = 1.0 - 2.0 * ((np.arange(2**10)[:, None] >> np.arange(10)) & 1)
    exact = np.mean(np.abs(signs @ differences) >= abs(differences.sum()) * (1 - 1e-12))
    assert 0.05 < exact < 0.9  # a case where Monte Carlo error matters
    result = randomization_test(a, b, n_permutations=20_000, seed=1)
    assert result.p_value == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / 20_000) + 1e-4)


def test_it_counts_sign_flips_that_tie_up_to_rounding() -> None:
    # Decimal scores are not exact in binary: here 28 of the 64 sign flips tie the
    # observed |sum| exactly, but 12 of them land a few ulps below it in floating
    # point, so an exact >= would give p = 16/64 instead of 28/64.
    a_text = ["0.4", "0.5", "0.7", "0.9", "0.0", "1.0"]
    b_text = ["0.5", "0.3", "0.7", "0.6", "0.2", "0.3"]
    exact_differences = [Fraction(x) - Fraction(y) for x, y in zip(a_text, b_text, strict=True)]
    observed = abs(sum(exact_differences, Fraction(0)))
    ties_or_more = sum(
        abs(sum((sign * d for sign, d in zip(flip, exact_differences, strict=True)), Fraction(0))) >= observed
        for flip in itertools.product((1, -1), repeat=6)
    )
    assert ties_or_more == 28
    result = randomization_test(
        np.array(a_text, dtype=float), np.array(b_text, dtype=float), n_permutations=20_000, seed=2
    )
    assert result.p_value == pytest.approx(28 / 64, abs=0.015)


def test_it_agrees_with_scipy_permutation_test() -> None:
    rng = np.random.default_rng(21)
    b = rng.random(30)
    a = b + rng.normal(0.04, 0.15, 30)
    reference = scipy_stats.permutation_test(
        (a, b),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=20_000,
        rng=np.random.default_rng(0),
    )
    ours = randomization_test(a, b, n_permutations=20_000, seed=0)
    assert 0.02 < reference.pvalue < 0.9
    assert ours.p_value == pytest.approx(reference.pvalue, abs=0.02)


@pytest.mark.parametrize("test", ["t", "wilcoxon", "randomization"])
def test_it_dispatches_paired_tests_by_name(test: str) -> None:
    a, b = np.random.default_rng(9).random((2, 20))
    direct = {
        "t": paired_t_test(a, b),
        "wilcoxon": wilcoxon_test(a, b),
        "randomization": randomization_test(a, b, n_permutations=500, seed=4),
    }[test]
    assert paired_test(a, b, test=test, seed=4, n_permutations=500) == direct  # type: ignore[arg-type]
    assert direct.test_name == test


def test_it_rejects_unknown_tests_and_misaligned_runs() -> None:
    with pytest.raises(StatsInputError, match="test must be one of"):
        paired_test([0.1, 0.2], [0.2, 0.3], test="sign")  # type: ignore[arg-type]
    with pytest.raises(StatsInputError, match="aligned"):
        paired_test([0.1, 0.2], [0.2, 0.3, 0.4])
    with pytest.raises(StatsInputError, match="n_permutations"):
        randomization_test([0.1], [0.2], n_permutations=0)


# --- multiple comparisons -----------------------------------------------------------------

STATSMODELS_METHOD = {"bonferroni": "bonferroni", "holm": "holm", "bh": "fdr_bh"}


@settings(max_examples=150, deadline=None)
@given(p_values_strategy, st.sampled_from([0.01, 0.05, 0.1, 0.2]))
def test_it_matches_statsmodels_multipletests(p_values: list[float], alpha: float) -> None:
    for method, reference_method in STATSMODELS_METHOD.items():
        adjusted, significant = adjust_p_values(p_values, method=method, alpha=alpha)  # type: ignore[arg-type]
        if not p_values:
            assert adjusted.shape == significant.shape == (0,)
            continue
        # statsmodels' Holm branch runs gc.collect(), 20-60 ms a call with scipy loaded.
        with mock.patch.object(gc, "collect", return_value=0):
            reject, corrected, _, _ = multipletests(p_values, alpha=alpha, method=reference_method)
        np.testing.assert_array_equal(adjusted, corrected)
        np.testing.assert_array_equal(significant, reject)


@given(p_values_strategy)
def test_it_orders_the_corrections_by_power(p_values: list[float]) -> None:
    bonferroni = adjust_p_values(p_values, method="bonferroni")[1]
    holm = adjust_p_values(p_values, method="holm")[1]
    bh = adjust_p_values(p_values, method="bh")[1]
    assert not (bonferroni & ~holm).any()
    assert not (holm & ~bh).any()


def test_it_reproduces_the_seed_multiple_testing_example() -> None:
    p_values = [0.001, 0.02, 0.03, 0.04, 0.06, 0.15, 0.25]
    expected = [True, False, False, False, False, False, False]
    for method in ("bonferroni", "bh"):
        _, significant = adjust_p_values(p_values, method=method, alpha=0.05)  # type: ignore[arg-type]
        assert significant.tolist() == expected
        assert int(significant.sum()) == 1


def test_it_leaves_a_single_p_value_alone() -> None:
    for method in ("bonferroni", "holm", "bh"):
        adjusted, significant = adjust_p_values([0.03], method=method)  # type: ignore[arg-type]
        assert adjusted.tolist() == [0.03]
        assert significant.tolist() == [True]


def test_it_rejects_invalid_p_values() -> None:
    for bad in ([0.1, 1.5], [-0.1], [np.nan]):
        with pytest.raises(StatsInputError, match=r"\[0, 1\]"):
            adjust_p_values(bad)
    with pytest.raises(StatsInputError, match="method"):
        adjust_p_values([0.1], method="fdr_by")  # type: ignore[arg-type]
    with pytest.raises(StatsInputError, match="alpha"):
        adjust_p_values([0.1], alpha=0.0)


# --- power analysis -----------------------------------------------------------------------

CTR_SD = math.sqrt(0.15 * 0.85)


def test_it_reproduces_the_seed_sample_size_table() -> None:
    table = {mde: sample_size_per_group(CTR_SD, mde, baseline=0.15) for mde in (0.01, 0.02, 0.05, 0.10)}
    assert table == {0.01: 889_540, 0.02: 222_385, 0.05: 35_582, 0.10: 8_896}


def test_it_reproduces_the_seed_minimum_detectable_effects() -> None:
    printed = {
        n: f"{minimum_detectable_effect(CTR_SD, n, baseline=0.15):.1%}" for n in (1_000, 10_000, 100_000)
    }
    assert printed == {1_000: "29.8%", 10_000: "9.4%", 100_000: "3.0%"}


@pytest.mark.parametrize("mde", [0.01, 0.05, 0.1, 0.3])
def test_it_agrees_with_statsmodels_normal_power(mde: float) -> None:
    effect_size = 0.15 * mde / CTR_SD
    reference = NormalIndPower().solve_power(effect_size=effect_size, alpha=0.05, power=0.8, ratio=1)
    n = sample_size_per_group(CTR_SD, mde, baseline=0.15)
    # statsmodels also counts rejections in the wrong tail (about 1e-6 of power),
    # so it needs a few millionths fewer observations.
    assert reference <= n < reference * (1 + 1e-5) + 1
    assert NormalIndPower().power(effect_size, n, 0.05, ratio=1) >= 0.8
    reference_effect = NormalIndPower().solve_power(nobs1=n, alpha=0.05, power=0.8, ratio=1)
    ours = minimum_detectable_effect(CTR_SD, n, baseline=0.15) * 0.15 / CTR_SD
    assert ours == pytest.approx(reference_effect, rel=1e-4)  # statsmodels' root finder is this loose


@pytest.mark.parametrize(("sd_diff", "mde"), [(0.1, 0.02), (0.25, 0.05), (0.2, 0.01)])
def test_it_agrees_with_statsmodels_for_paired_power(sd_diff: float, mde: float) -> None:
    reference = NormalIndPower().solve_power(effect_size=mde / sd_diff, alpha=0.05, power=0.8, ratio=0)
    assert reference <= sample_size_paired(sd_diff, mde) < reference * (1 + 1e-5) + 1
    reference_effect = NormalIndPower().solve_power(nobs1=100, alpha=0.05, power=0.8, ratio=0)
    assert minimum_detectable_effect_paired(sd_diff, 100) / sd_diff == pytest.approx(
        reference_effect, rel=1e-5
    )


@given(
    st.floats(0.01, 10.0),
    st.floats(0.001, 5.0),
    st.sampled_from([0.01, 0.05, 0.1]),
    st.sampled_from([0.5, 0.8, 0.9]),
)
def test_it_inverts_sample_size_and_effect(sd: float, mde: float, alpha: float, power: float) -> None:
    n = sample_size_per_group(sd, mde, alpha=alpha, power=power)
    assert minimum_detectable_effect(sd, n, alpha=alpha, power=power) <= mde * (1 + 1e-9)
    if n > 1:
        assert minimum_detectable_effect(sd, n - 1, alpha=alpha, power=power) > mde
    pairs = sample_size_paired(sd, mde, alpha=alpha, power=power)
    assert minimum_detectable_effect_paired(sd, pairs, alpha=alpha, power=power) <= mde * (1 + 1e-9)
    assert pairs <= n


@pytest.mark.parametrize(
    "kwargs",
    [{"alpha": 0.0}, {"power": 1.0}, {"baseline": 0.0}],
)
def test_it_rejects_bad_power_options(kwargs: dict[str, float]) -> None:
    with pytest.raises(StatsInputError):
        sample_size_per_group(0.3, 0.05, **kwargs)
    with pytest.raises(StatsInputError, match="sd"):
        sample_size_per_group(0.0, 0.05)
    with pytest.raises(StatsInputError, match="n_per_group"):
        minimum_detectable_effect(0.3, 0)


# --- stratified sampling --------------------------------------------------------------------

SEED_STRATA_SIZES = [1_000, 99_000, 9_900_000]


def test_it_reproduces_the_seed_stratified_allocation() -> None:
    labels = np.repeat(np.array(["head", "torso", "tail"]), SEED_STRATA_SIZES)
    indices, weights = stratified_sample(labels, 10_000, min_per_stratum=100, seed=42)
    counts = {name: int(np.sum(labels[indices] == name)) for name in ("head", "torso", "tail")}
    # Seed 004 prints head 100, torso 196, tail 9,703 (9,999 in all: it truncates
    # each share and loses an item). Largest-remainder rounding gives that item
    # to head, whose fractional share (0.97) is the largest.
    assert counts == {"head": 101, "torso": 196, "tail": 9_703}
    assert weights.sum() == pytest.approx(10_000_000)

    oversampled, _ = stratified_sample(labels, 10_000, min_per_stratum=100, oversample={"tail": 3.0}, seed=42)
    assert int(np.sum(labels[oversampled] == "tail")) == 29_109
    # The seed prints 29,405 = 100 + 196 + 29,109; we keep head's extra item.
    assert oversampled.size == 29_406


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(0, 500), min_size=1, max_size=12),
    st.data(),
    st.sampled_from(["proportional", "equal"]),
)
def test_it_allocates_exactly_n_within_the_strata(
    sizes: list[int], data: st.DataObject, allocation: str
) -> None:
    population = sum(sizes)
    n = data.draw(st.integers(0, population))
    min_per_stratum = data.draw(st.integers(0, 40))
    assume(sum(min(size, min_per_stratum) for size in sizes) <= n)
    counts = stratum_allocation(sizes, n, allocation=allocation, min_per_stratum=min_per_stratum)  # type: ignore[arg-type]
    assert counts.sum() == n
    assert (counts <= np.array(sizes)).all()
    assert (counts >= np.minimum(sizes, min_per_stratum)).all()


@given(st.lists(st.integers(1, 10_000), min_size=1, max_size=10), st.data())
def test_it_rounds_proportional_shares_to_the_nearest_unit(sizes: list[int], data: st.DataObject) -> None:
    n = data.draw(st.integers(0, sum(sizes)))
    counts = stratum_allocation(sizes, n)
    quotas = np.array(sizes) * n / sum(sizes)
    assert (np.abs(counts - quotas) < 1.0).all()


def test_it_passes_the_excess_of_a_full_stratum_on() -> None:
    assert stratum_allocation([2, 100, 100], 30, allocation="equal").tolist() == [2, 14, 14]
    assert stratum_allocation([2, 100, 100], 202, allocation="equal").tolist() == [2, 100, 100]
    assert stratum_allocation([5, 0, 95], 20).tolist() == [1, 0, 19]


def test_it_rejects_impossible_allocations() -> None:
    with pytest.raises(StatsInputError, match="without replacement"):
        stratum_allocation([3, 4], 8)
    with pytest.raises(StatsInputError, match="min_per_stratum"):
        stratum_allocation([30, 40], 10, min_per_stratum=6)
    with pytest.raises(StatsInputError, match="allocation"):
        stratum_allocation([30, 40], 10, allocation="neyman")  # type: ignore[arg-type]
    with pytest.raises(StatsInputError, match="unknown stratum"):
        stratified_sample(["a", "b"], 1, oversample={"c": 2.0})
    with pytest.raises(StatsInputError, match="empty"):
        stratified_sample([], 0)


def test_it_samples_without_replacement_with_inverse_inclusion_weights() -> None:
    labels = np.array([2, 0, 1] * 300 + [3] * 7)
    indices, weights = stratified_sample(labels, 100, allocation="equal", seed=5)
    assert indices.size == 100
    assert np.unique(indices).size == 100
    assert (np.diff(indices) > 0).all()
    sampled = labels[indices]
    counts = np.bincount(sampled, minlength=4)
    assert counts.tolist() == [31, 31, 31, 7]
    np.testing.assert_allclose(weights, (np.bincount(labels) / counts)[sampled])
    assert weights.sum() == pytest.approx(labels.size)
    again = stratified_sample(labels, 100, allocation="equal", seed=5)
    np.testing.assert_array_equal(again[0], indices)
    assert not np.array_equal(stratified_sample(labels, 100, allocation="equal", seed=6)[0], indices)


def test_it_estimates_the_population_mean_without_bias() -> None:
    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1, 2], [50, 300, 1_650])
    values = np.where(labels == 0, 0.9, np.where(labels == 1, 0.5, 0.2)) + rng.normal(0, 0.1, labels.size)
    estimates, errors = [], []
    for seed in range(400):
        indices, weights = stratified_sample(labels, 120, allocation="equal", seed=seed)
        estimate = stratified_mean(values[indices], labels[indices], weights)
        estimates.append(estimate.mean)
        errors.append(estimate.std_error)
    spread = float(np.std(estimates, ddof=1))
    assert np.mean(estimates) == pytest.approx(values.mean(), abs=4 * spread / math.sqrt(400))
    # The finite-population standard error tracks the spread of the estimates.
    assert np.mean(errors) == pytest.approx(spread, rel=0.15)
    # An unweighted mean of the same sample is badly biased towards the small strata.
    indices, _ = stratified_sample(labels, 120, allocation="equal", seed=0)
    assert abs(values[indices].mean() - values.mean()) > 10 * spread


def test_it_computes_the_stratified_standard_error() -> None:
    values = np.array([1.0, 3.0, 2.0, 2.0, 6.0])
    strata = np.array(["x", "x", "y", "y", "y"])
    weights = np.array([10.0, 10.0, 5.0, 5.0, 5.0])  # N_x = 20, N_y = 15
    estimate = stratified_mean(values, strata, weights)
    share_x, share_y = 20 / 35, 15 / 35
    assert estimate.mean == pytest.approx(share_x * 2.0 + share_y * 10 / 3)
    var_x, var_y = np.var([1.0, 3.0], ddof=1), np.var([2.0, 2.0, 6.0], ddof=1)
    expected = share_x**2 * (1 - 2 / 20) * var_x / 2 + share_y**2 * (1 - 3 / 15) * var_y / 3
    assert estimate.std_error == pytest.approx(math.sqrt(expected))
    assert (estimate.n, estimate.population_size) == (5, 35.0)


def test_it_has_no_sampling_error_for_a_census() -> None:
    values = np.random.default_rng(1).random(30)
    strata = np.repeat([0, 1, 2], 10)
    estimate = stratified_mean(values, strata, np.ones(30))
    assert estimate.mean == pytest.approx(values.mean())
    assert estimate.std_error == 0.0


def test_it_cannot_estimate_the_variance_of_a_single_sampled_item() -> None:
    estimate = stratified_mean([0.5, 0.2, 0.4], [0, 1, 1], [10.0, 2.0, 2.0])
    assert math.isnan(estimate.std_error)
    assert estimate.mean == pytest.approx((10 * 0.5 + 4 * 0.3) / 14)


def test_it_rejects_weights_that_vary_within_a_stratum() -> None:
    with pytest.raises(StatsInputError, match="constant within each stratum"):
        stratified_mean([0.5, 0.2], [0, 0], [2.0, 3.0])
    with pytest.raises(StatsInputError, match="aligned"):
        stratified_mean([0.5, 0.2], [0], [2.0, 2.0])
