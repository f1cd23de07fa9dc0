"""Two-way ANOVA, Tukey's HSD, paired effect sizes and discriminative power against statsmodels,
scipy, a published example and direct loops over the definitions."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats
from statsmodels.formula.api import ols
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.multicomp import pairwise_tukeyhsd

from evalcore.stats import (
    StatsInputError,
    discriminative_power,
    hedges_correction,
    paired_effect_size,
    paired_t_test,
    randomization_test,
    tukey_hsd,
    two_way_anova,
)


def system_scores(m: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    topic = rng.random(n)[None, :]
    system = np.linspace(0, 0.2, m)[:, None]
    return np.clip(topic + system + rng.normal(0, 0.1, (m, n)), 0, 1)


def long_frame(scores: np.ndarray) -> pd.DataFrame:
    m, n = scores.shape
    return pd.DataFrame(
        {
            "score": scores.ravel(),
            "system": np.repeat([f"s{i}" for i in range(m)], n),
            "topic": np.tile([f"t{j:03d}" for j in range(n)], m),
        }
    )


class TestTwoWayAnova:
    @pytest.mark.parametrize(("m", "n", "seed"), [(3, 5, 0), (6, 25, 1), (2, 50, 2)])
    def test_it_equals_statsmodels_anova_lm(self, m: int, n: int, seed: int) -> None:
        scores = system_scores(m, n, seed)
        table = anova_lm(ols("score ~ C(system) + C(topic)", data=long_frame(scores)).fit())
        ours = two_way_anova(scores)
        for effect, row in (
            (ours.systems, "C(system)"),
            (ours.topics, "C(topic)"),
            (ours.residual, "Residual"),
        ):
            assert effect.sum_sq == pytest.approx(table.loc[row, "sum_sq"], rel=1e-10)
            assert effect.df == table.loc[row, "df"]
            assert effect.mean_sq == pytest.approx(table.loc[row, "mean_sq"], rel=1e-10)
        for effect, row in ((ours.systems, "C(system)"), (ours.topics, "C(topic)")):
            assert effect.f == pytest.approx(table.loc[row, "F"], rel=1e-9)
            assert effect.p_value == pytest.approx(table.loc[row, "PR(>F)"], rel=1e-7, abs=1e-300)
        assert ours.residual_variance == pytest.approx(table.loc["Residual", "mean_sq"], rel=1e-10)

    def test_it_reports_an_exact_additive_table(self) -> None:
        scores = np.array([[0.1, 0.5, 0.3], [0.2, 0.6, 0.4]])  # system + topic, no residual
        table = two_way_anova(scores)
        assert table.residual_variance == 0.0
        assert table.systems.f == math.inf and table.systems.p_value == 0.0

    def test_it_refuses_a_single_topic(self) -> None:
        with pytest.raises(StatsInputError, match="at least 2 systems and 2 topics"):
            two_way_anova([[0.1], [0.2]])


class TestTukeyHSD:
    def test_its_one_way_design_equals_scipy_as_ranx_calls_it(self) -> None:
        scores = system_scores(5, 20, 3)
        hsd = tukey_hsd(scores, design="one-way")
        reference = scipy_stats.tukey_hsd(*scores)
        np.testing.assert_allclose(hsd.p_values, reference.pvalue, rtol=1e-6, atol=1e-12)
        np.testing.assert_allclose(hsd.mean_difference, reference.statistic, rtol=1e-12)
        interval = reference.confidence_interval(0.95)
        np.testing.assert_allclose(hsd.lower, interval.low, rtol=1e-6)
        np.testing.assert_allclose(hsd.upper, interval.high, rtol=1e-6)

    def test_its_one_way_design_equals_statsmodels_pairwise_tukeyhsd(self) -> None:
        scores = system_scores(4, 15, 4)
        frame = long_frame(scores)
        result = pairwise_tukeyhsd(frame["score"], frame["system"], alpha=0.05)
        hsd = tukey_hsd(scores, design="one-way")
        first, second = np.triu_indices(4, k=1)
        # statsmodels reports group2 - group1 for each pair in order
        np.testing.assert_allclose(result.meandiffs, -hsd.mean_difference[first, second], rtol=1e-10)
        np.testing.assert_allclose(result.pvalues, hsd.p_values[first, second], rtol=1e-3, atol=1e-3)

    def test_its_blocked_design_takes_the_anova_residual(self) -> None:
        scores = system_scores(4, 30, 5)
        table = anova_lm(ols("score ~ C(system) + C(topic)", data=long_frame(scores)).fit())
        mse, df = table.loc["Residual", "mean_sq"], int(table.loc["Residual", "df"])
        hsd = tukey_hsd(scores)
        assert (hsd.mse, hsd.df, hsd.design) == (pytest.approx(mse), df, "randomised-block")
        means = scores.mean(axis=1)
        for i in range(4):
            for j in range(4):
                if i == j:
                    continue
                q = abs(means[i] - means[j]) / math.sqrt(mse / 30)
                assert hsd.p_values[i, j] == pytest.approx(
                    scipy_stats.studentized_range.sf(q, 4, df), rel=1e-9
                )

    def test_blocking_removes_the_topic_variance(self) -> None:
        scores = system_scores(4, 30, 6)  # topics vary far more than systems differ
        blocked, one_way = tukey_hsd(scores), tukey_hsd(scores, design="one-way")
        assert blocked.mse < one_way.mse
        assert blocked.p_values[0, 3] < one_way.p_values[0, 3]
        assert blocked.significant(0.05)[0, 3]


class TestEffectSizes:
    def test_it_reproduces_lakens_2013_table_1(self) -> None:
        movie1 = [9, 7, 8, 9, 8, 9, 9, 10, 9, 9]
        movie2 = [9, 6, 7, 8, 7, 9, 8, 8, 8, 7]
        size = paired_effect_size(movie1, movie2)
        assert round(size.cohens_dz, 2) == 1.50
        t = paired_t_test(movie1, movie2).statistic
        assert round(t, 2) == 4.74 and size.cohens_dz == pytest.approx(t / math.sqrt(10))

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=3, max_size=40))
    def test_it_equals_the_direct_formula(self, pairs: list[tuple[float, float]]) -> None:
        a, b = np.array(pairs).T
        d = a - b
        size = paired_effect_size(a, b)
        if d.std(ddof=1) == 0:
            assert size.cohens_dz in (0.0, math.inf, -math.inf)
            return
        dz = d.mean() / d.std(ddof=1)
        v = len(d) - 1
        j = math.gamma(v / 2) / (math.sqrt(v / 2) * math.gamma((v - 1) / 2)) if v < 300 else None
        assert size.cohens_dz == pytest.approx(dz, rel=1e-9, abs=1e-12)
        if j is not None:
            assert size.hedges_g == pytest.approx(j * dz, rel=1e-9, abs=1e-12)

    def test_its_correction_approaches_the_usual_approximation(self) -> None:
        for df in (5, 10, 50, 200):
            assert hedges_correction(df) == pytest.approx(1 - 3 / (4 * df - 1), abs=0.05 / df**2)


def sakai_bootstrap_loop(x: np.ndarray, y: np.ndarray, draws: np.ndarray) -> float:
    """Fig. 2 of Sakai (2006), one resample at a time."""
    z = x - y
    n = len(z)

    def t(values: np.ndarray) -> float:
        sd = values.std(ddof=1)
        if sd < 1e-12:
            return 0.0 if abs(values.mean()) < 1e-15 else math.copysign(math.inf, values.mean())
        return values.mean() / (sd / math.sqrt(n))

    observed = abs(t(z))
    w = z - z.mean()
    count = sum(abs(t(w[row])) >= observed * (1 - 1e-12) for row in draws)
    return count / len(draws)


class TestDiscriminativePower:
    def test_its_bootstrap_equals_sakais_loop_with_the_same_resamples(self) -> None:
        scores = system_scores(5, 25, 7)
        power = discriminative_power(scores, test="bootstrap", n_resamples=400, seed=11)
        draws = np.random.default_rng(11).integers(0, 25, size=(400, 25))
        for (i, j), p in zip(power.pairs.tolist(), power.p_values, strict=True):
            assert p == pytest.approx(sakai_bootstrap_loop(scores[i], scores[j], draws), abs=1e-12)

    def test_its_t_test_equals_the_pairwise_t_test(self) -> None:
        scores = system_scores(6, 20, 8)
        power = discriminative_power(scores, test="t")
        for (i, j), p in zip(power.pairs.tolist(), power.p_values, strict=True):
            assert p == pytest.approx(paired_t_test(scores[i], scores[j]).p_value, rel=1e-9)
            assert p == pytest.approx(scipy_stats.ttest_rel(scores[i], scores[j]).pvalue, rel=1e-9)

    def test_its_randomization_equals_the_pairwise_test_with_the_same_seed(self) -> None:
        scores = system_scores(4, 15, 9)
        power = discriminative_power(scores, test="randomization", n_resamples=2000, seed=5)
        for (i, j), p in zip(power.pairs.tolist(), power.p_values, strict=True):
            assert p == randomization_test(scores[i], scores[j], n_permutations=2000, seed=5).p_value

    def test_it_counts_the_share_of_significant_pairs(self) -> None:
        scores = system_scores(6, 40, 10)
        power = discriminative_power(scores, test="t", alpha=0.05)
        assert len(power.pairs) == 15
        assert power.share == np.count_nonzero(power.p_values < 0.05) / 15
        significant = np.abs(power.mean_difference[power.p_values < 0.05])
        assert power.min_significant_difference == significant.min()

    def test_identical_systems_are_never_significant(self) -> None:
        row = np.random.default_rng(0).random(20)
        for test in ("bootstrap", "t", "randomization"):
            power = discriminative_power(np.stack([row, row]), test=test)  # type: ignore[arg-type]
            assert power.p_values.tolist() == [1.0] and power.share == 0.0

    def test_the_same_seed_gives_the_same_answer(self) -> None:
        scores = system_scores(4, 20, 12)
        one = discriminative_power(scores, seed=3).p_values
        assert np.array_equal(one, discriminative_power(scores, seed=3).p_values)

    def test_it_reports_effect_sizes_beside_the_p_values(self) -> None:
        scores = system_scores(3, 20, 13)
        power = discriminative_power(scores, test="t")
        for (i, j), dz, g in zip(power.pairs.tolist(), power.cohens_dz, power.hedges_g, strict=True):
            size = paired_effect_size(scores[i], scores[j])
            assert (dz, g) == (pytest.approx(size.cohens_dz), pytest.approx(size.hedges_g))
