"""Embedding drift: MMD against the n x n kernel matrix, KS against scipy, PSI against numpy, the
domain classifier against scikit-learn, calibrated effect thresholds, and false alarms over seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from statsmodels.stats.multitest import multipletests

from evalcore.embeddings import (
    EmbeddingInputError,
    MonitorParams,
    calibrate_effect_thresholds,
    domain_classifier_auc,
    drift_metrics,
    drifted_dimensions,
    evaluate_embeddings,
    mean_cosine_distance,
    median_bandwidth,
    merge_summaries,
    mmd_test,
    roc_auc,
    summarize,
)
from evalcore.embeddings._calibration import split_indicators
from evalcore.embeddings._mmd import permutation_indicators


def direct_mmd2(x: np.ndarray, y: np.ndarray, sigma: float) -> float:
    """The unbiased MMD^2 from the full (m + n) x (m + n) kernel matrix."""
    z = np.vstack([x, y])
    kernel = np.exp(-((z[:, None] - z[None]) ** 2).sum(axis=-1) / (2 * sigma**2))
    m, n = len(x), len(y)
    kxx, kyy, kxy = kernel[:m, :m], kernel[m:, m:], kernel[:m, m:]
    return float(
        (kxx.sum() - np.trace(kxx)) / (m * (m - 1))
        + (kyy.sum() - np.trace(kyy)) / (n * (n - 1))
        - 2 * kxy.mean()
    )


@pytest.fixture
def shifted() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    return rng.normal(size=(70, 6)), rng.normal(size=(50, 6)) + np.r_[0.8, 0.0, 0.0, 0.0, 0.0, 0.4]


class TestMMD:
    def test_it_matches_the_full_kernel_matrix(self, shifted) -> None:
        x, y = shifted
        # A tiny panel bound cuts the kernel into many row panels.
        result = mmd_test(x, y, n_permutations=0, dtype=torch.float64, block_elements=300, device="cpu")
        assert result.mmd2 == pytest.approx(direct_mmd2(x, y, result.bandwidth), rel=1e-12)
        assert np.isnan(result.p_value)

    def test_it_scores_every_permutation_as_the_full_matrix_would(self, shifted) -> None:
        x, y = shifted
        result = mmd_test(
            x, y, n_permutations=15, seed=3, dtype=torch.float64, block_elements=700, device="cpu"
        )
        z = np.vstack([x, y])
        splits = permutation_indicators(len(x), len(z), 15, seed=3).numpy().astype(bool)
        expected = [direct_mmd2(z[col], z[~col], result.bandwidth) for col in splits.T[1:]]
        np.testing.assert_allclose(result.null, expected, rtol=1e-10, atol=1e-14)
        assert result.p_value == (1 + np.sum(np.array(expected) >= result.mmd2)) / 16

    def test_it_agrees_in_float32_with_float64(self, shifted) -> None:
        x, y = shifted
        single = mmd_test(x, y, n_permutations=30, device="cpu")
        double = mmd_test(x, y, n_permutations=30, dtype=torch.float64, device="cpu")
        assert single.mmd2 == pytest.approx(double.mmd2, rel=1e-5)
        assert single.p_value == double.p_value

    def test_it_takes_the_median_distance_within_the_reference_as_bandwidth(self, shifted) -> None:
        x, y = shifted
        distances = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))[np.triu_indices(len(x), 1)]
        assert median_bandwidth(x, device="cpu") == pytest.approx(np.median(distances), rel=1e-12)
        assert mmd_test(x, y, n_permutations=0, device="cpu").bandwidth == pytest.approx(np.median(distances))
        assert mmd_test(x, y, n_permutations=0, bandwidth=2.5, device="cpu").bandwidth == 2.5

    def test_it_states_its_bandwidth_as_sqrt_2_times_alibi_detects(self) -> None:
        def alibi_sigma_median(x: torch.Tensor, y: torch.Tensor, dist: torch.Tensor) -> torch.Tensor:
            # alibi-detect 0.13 `utils.pytorch.kernels.sigma_median`, as written there.
            n = min(x.shape[0], y.shape[0])
            n = n if (x[:n] == y[:n]).all() and x.shape == y.shape else 0
            n_median = n + (np.prod(dist.shape) - n) // 2 - 1
            return (0.5 * dist.flatten().sort().values[int(n_median)].unsqueeze(dim=-1)) ** 0.5

        x = np.random.default_rng(3).normal(size=(41, 5))  # 820 pairs, an even count: the lower median
        t = torch.from_numpy(x)
        alibi = float(alibi_sigma_median(t, t, torch.cdist(t, t).square())[0])
        ours = median_bandwidth(x, device="cpu")
        distances = np.sort(((x[:, None] - x[None]) ** 2).sum(-1)[np.triu_indices(len(x), 1)])
        assert alibi == pytest.approx(math.sqrt(distances[len(distances) // 2 - 1] / 2), rel=1e-12)
        assert ours == pytest.approx(math.sqrt(np.median(distances)), rel=1e-12)
        assert ours / alibi == pytest.approx(math.sqrt(2), rel=2e-3)  # lower median vs the middle two's mean
        assert median_bandwidth.__doc__ is not None and "sqrt(2) times" in median_bandwidth.__doc__

    def test_it_detects_a_shift_and_false_alarms_at_about_alpha(self) -> None:
        detected = [
            mmd_test(*self._samples(seed, shift=1.0), n_permutations=99, seed=seed, device="cpu").p_value
            for seed in range(20)
        ]
        assert max(detected) <= 0.01
        null_p = np.array(
            [
                mmd_test(*self._samples(seed, shift=0.0), n_permutations=99, seed=seed, device="cpu").p_value
                for seed in range(300)
            ]
        )
        # 300 fresh samples of one distribution: about 5% of p-values at or below 0.05 (sd 1.3%).
        assert 0.02 <= (null_p <= 0.05).mean() <= 0.09
        assert 0.4 <= null_p.mean() <= 0.6

    @staticmethod
    def _samples(seed: int, *, shift: float) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(seed)
        return rng.normal(size=(30, 4)), rng.normal(size=(30, 4)) + shift

    def test_it_rejects_mismatched_or_tiny_samples(self) -> None:
        with pytest.raises(EmbeddingInputError, match="dimension"):
            mmd_test(np.ones((5, 3)), np.ones((5, 4)), device="cpu")
        with pytest.raises(EmbeddingInputError, match="at least 2 rows"):
            mmd_test(np.ones((5, 3)), np.ones((1, 3)), device="cpu")


class TestDimensionDrift:
    def test_it_matches_scipy_ks_and_statsmodels_benjamini_hochberg(self) -> None:
        rng = np.random.default_rng(2)
        x = np.round(rng.normal(size=(150, 7)), 1)  # rounded: many ties
        y = np.round(rng.normal(size=(90, 7)) + np.linspace(0, 0.8, 7), 1)
        result = drifted_dimensions(x, y, alpha=0.05, device="cpu")
        expected = [stats.ks_2samp(x[:, j], y[:, j], method="asymp") for j in range(7)]
        np.testing.assert_allclose(result.statistics, [r.statistic for r in expected], rtol=1e-12)
        np.testing.assert_allclose(result.p_values, [r.pvalue for r in expected], rtol=1e-10)
        rejected = multipletests(result.p_values, alpha=0.05, method="fdr_bh")[0]
        np.testing.assert_array_equal(result.drifted, rejected)
        assert result.share == rejected.mean() and 0 < result.share < 1

    def test_it_matches_a_numpy_population_stability_index(self) -> None:
        rng = np.random.default_rng(4)
        x, y = (
            rng.normal(size=(400, 5)),
            rng.normal(size=(300, 5)) * np.r_[1, 1, 2, 1, 1] + np.r_[0, 1, 0, 0, 0],
        )
        x[:, 4] = 1.0  # constant: every edge equal
        expected = []
        for j in range(5):
            edges = np.quantile(x[:, j], np.linspace(0, 1, 11)[1:-1])
            ref = np.maximum(
                np.bincount(np.searchsorted(edges, x[:, j], side="right"), minlength=10) / 400, 1e-4
            )
            cur = np.maximum(
                np.bincount(np.searchsorted(edges, y[:, j], side="right"), minlength=10) / 300, 1e-4
            )
            expected.append(((cur - ref) * np.log(cur / ref)).sum())
        result = drifted_dimensions(x, y, method="psi", device="cpu")
        np.testing.assert_allclose(result.statistics, expected, rtol=1e-10)
        np.testing.assert_array_equal(result.drifted, np.array(expected) > 0.2)

    def test_it_rarely_calls_any_dimension_drifted_on_fresh_samples(self) -> None:
        false_alarms = [
            drifted_dimensions(*TestMMD._samples(seed, shift=0.0), device="cpu").share > 0
            for seed in range(300)
        ]
        # Benjamini-Hochberg under the global null: P(any rejection) <= alpha = 0.05.
        assert np.mean(false_alarms) <= 0.08


class TestDomainClassifier:
    def test_it_computes_roc_auc_as_sklearn_with_ties(self) -> None:
        rng = np.random.default_rng(0)
        labels = rng.integers(0, 2, 300)
        scores = np.round(rng.normal(size=300) + labels, 1)
        assert roc_auc(scores, labels) == pytest.approx(roc_auc_score(labels, scores), rel=1e-12)

    def test_it_matches_sklearns_logistic_regression_on_the_same_split(self) -> None:
        rng = np.random.default_rng(8)
        x = rng.normal(size=(300, 5))
        y = rng.normal(size=(260, 5)) + np.r_[0.4, 0.0, -0.3, 0.0, 0.0]
        ours = domain_classifier_auc(x, y, test_share=0.3, l2=0.05, seed=7, device="cpu")
        train_x, test_x = self._split(x, 7)
        train_y, test_y = self._split(y, 8)
        features = np.vstack([train_x, train_y])
        centre, scale = features.mean(axis=0), features.std(axis=0, ddof=1)
        labels = np.r_[np.zeros(len(train_x)), np.ones(len(train_y))]
        model = LogisticRegression(C=1 / (0.05 * len(features)), tol=1e-12, max_iter=10_000)
        model.fit((features - centre) / scale, labels)
        held_out = (np.vstack([test_x, test_y]) - centre) / scale
        truth = np.r_[np.zeros(len(test_x)), np.ones(len(test_y))]
        assert ours == pytest.approx(roc_auc_score(truth, model.decision_function(held_out)), abs=1e-6)
        assert ours > 0.6

    @staticmethod
    def _split(rows: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
        order = torch.randperm(len(rows), generator=torch.Generator().manual_seed(seed)).numpy()
        held = round(len(rows) * 0.3)
        return rows[order[held:]], rows[order[:held]]

    def test_it_tells_shifted_sets_apart_and_not_fresh_samples(self) -> None:
        rng = np.random.default_rng(1)
        x = rng.normal(size=(500, 8))
        # The Bayes classifier's AUC for this shift is Phi(0.6 sqrt(8) / sqrt(2)) = 0.885.
        assert domain_classifier_auc(x, rng.normal(size=(500, 8)) + 0.6, device="cpu") > 0.85
        assert abs(domain_classifier_auc(x, rng.normal(size=(500, 8)), device="cpu") - 0.5) < 0.1


class TestCalibration:
    def test_it_splits_contiguous_halves_in_file_order(self) -> None:
        order = np.array([5, 0, 3, 1, 4, 2, 7, 6])  # file row of each sample row
        halves = split_indicators(order, 4, split="contiguous", seed=0).numpy().astype(bool)
        assert (halves.sum(axis=0) == 4).all()
        assert sorted(order[halves[:, 0]]) == [0, 1, 2, 3]  # first half against second
        assert sorted(order[halves[:, 2]]) == [2, 3, 4, 5]
        random = split_indicators(order, 4, split="random", seed=0).numpy()
        assert (random.sum(axis=0) == 4).all() and len({tuple(c) for c in random.T}) > 1

    def test_it_scores_each_split_as_a_direct_computation(self) -> None:
        rng = np.random.default_rng(6)
        x = rng.normal(size=(60, 3)) + 2.0
        calibration = calibrate_effect_thresholds(
            x, n_splits=5, split="random", quantile=1.0, seed=1, device="cpu"
        )
        halves = split_indicators(np.arange(60), 5, split="random", seed=1).numpy().astype(bool)
        x32 = x.astype(np.float32).astype(np.float64)  # the kernel runs on float32 rows
        mmd = [direct_mmd2(x32[col], x32[~col], calibration.bandwidth) for col in halves.T]
        # Distances come from a float32 product (as in the drift test): 1e-7 of the kernel values.
        np.testing.assert_allclose(calibration.null["mmd2"], mmd, rtol=1e-5, atol=1e-7)
        cosine = [mean_cosine_distance(x32[col].mean(0), x32[~col].mean(0)) for col in halves.T]
        np.testing.assert_allclose(calibration.null["mean_cosine_distance"], cosine, rtol=1e-9, atol=1e-15)
        shares = [drifted_dimensions(x32[col], x32[~col], device="cpu").share for col in halves.T]
        np.testing.assert_array_equal(calibration.null["drifted_dim_share"], shares)
        assert calibration.thresholds["mmd2"] == pytest.approx(max(mmd), rel=1e-5)

    def test_it_ignores_a_significant_shift_no_bigger_than_the_references_own_variation(self) -> None:
        # A reference whose two halves (two weeks, say) differ a little in one direction.
        n = 4000
        reference = np.random.default_rng(0).normal(size=(n, 2))
        reference[:, 0] += np.where(np.arange(n) < n // 2, 0.15, -0.15)
        params = MonitorParams(sample_size=n, mmd_sample_size=n // 2)
        trivial = self._current(n, 0.2)
        report = evaluate_embeddings(reference, trivial, params=params, device="cpu")
        assert report.drift is not None and report.calibration is not None
        assert report.drift["mmd_p_value"] <= 0.01  # significant...
        assert report.drift["mmd2"] < report.calibration.thresholds["mmd2"]  # ...but within the variation
        assert "mmd_drift" not in {firing.rule for _, firing in report.alerts()}
        report = evaluate_embeddings(reference, self._current(n, 0.7), params=params, device="cpu")
        assert "mmd_drift" in {firing.rule for _, firing in report.alerts()}

    @staticmethod
    def _current(n: int, shift: float) -> np.ndarray:
        current = np.random.default_rng(10).normal(size=(n, 2))
        current[:, 0] += shift
        return current


class TestSuite:
    def test_it_computes_drift_from_merged_summaries_as_from_one_pass(self) -> None:
        rng = np.random.default_rng(5)
        reference, current = rng.normal(size=(300, 16)), rng.normal(size=(250, 16)) + 0.5
        params = MonitorParams(sample_size=120, mmd_sample_size=60, n_permutations=50)
        whole = [summarize(a, sample_size=120, device="cpu") for a in (reference, current)]
        parts = [
            merge_summaries([summarize(a, start=lo, stop=min(lo + 77, len(a)), sample_size=120, device="cpu")
                             for lo in range(0, len(a), 77)])
            for a in (reference, current)
        ]  # fmt: skip
        single, _, _ = drift_metrics(*whole, params=params, device="cpu")
        merged, _, _ = drift_metrics(*parts, params=params, device="cpu")
        assert merged == pytest.approx(single, rel=1e-9)
        assert single["mmd_p_value"] <= 0.05 and single["classifier_auc"] > 0.5

    def test_it_reports_quality_drift_and_the_seeds_collapse_alerts(self) -> None:
        torch.manual_seed(42)
        healthy = torch.randn(1000, 256)
        collapsed = torch.randn(1000, 256)
        collapsed[:, 50:] = 0.01 * torch.randn(1000, 206)
        params = MonitorParams(sample_size=600, mmd_sample_size=300)
        report = evaluate_embeddings(healthy, collapsed, params=params, device="cpu")
        assert report.current is not None and report.drift is not None
        assert report.current["dead_dims"] == 206
        fired = {(section, firing.rule) for section, firing in report.alerts()}
        assert ("current", "dead_dimensions") in fired and ("current", "low_effective_rank") in fired
        assert not any(section == "reference" for section, _ in fired)
        assert ("drift", "mmd_drift") in fired

    def test_it_checks_dimensions_before_reading_any_rows(self, tmp_path) -> None:
        np.save(tmp_path / "a.npy", np.ones((4, 3), dtype=np.float32))
        np.save(tmp_path / "b.npy", np.ones((4, 5), dtype=np.float32))
        with pytest.raises(EmbeddingInputError, match="dimension 3 but the current set has 5"):
            evaluate_embeddings(tmp_path / "a.npy", tmp_path / "b.npy", device="cpu")

    def test_it_validates_its_parameters(self) -> None:
        with pytest.raises(EmbeddingInputError, match="alpha"):
            MonitorParams(alpha=1.5)
        with pytest.raises(EmbeddingInputError, match="calibration_split"):
            MonitorParams(calibration_split="weekly")  # type: ignore[arg-type]


@pytest.mark.gpu
class TestCuda:
    def test_it_agrees_between_cpu_and_cuda(self) -> None:
        rng = np.random.default_rng(9)
        reference = rng.normal(size=(3000, 64)).astype(np.float32)
        current = (rng.normal(size=(2500, 64)) + 0.05).astype(np.float32)
        params = MonitorParams(sample_size=1000, mmd_sample_size=500, n_permutations=100)
        cpu = evaluate_embeddings(reference, current, params=params, device="cpu")
        gpu = evaluate_embeddings(reference, current, params=params, device="cuda")
        for section, values in cpu.sections().items():
            for name, value in values.items():
                assert gpu.sections()[section][name] == pytest.approx(value, rel=1e-4, abs=1e-6), (
                    section,
                    name,
                )
        assert gpu.calibration is not None and cpu.calibration is not None
        assert gpu.calibration.thresholds == pytest.approx(cpu.calibration.thresholds, rel=1e-4, abs=1e-7)
