"""DeLong's test and the paired AUC bootstrap against direct implementations, scikit-learn and scipy, and
the pairing of two scores files by id."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats as scipy_stats
from sklearn.metrics import roc_auc_score

from evalcore.fraud import FraudInputError, pair_by_id, read_ids
from evalcore.recsys import METRICS as RECSYS_METRICS
from evalcore.recsys import PER_USER_METRICS, RecsysStats, per_user_values, read_recsys_files
from evalcore.stats import StatsInputError, auc_difference_ci, delong_test, midranks


def direct_delong(labels: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """DeLong (1988) as written: the m x n matrix of psi per model; returns AUC_a, AUC_b and z."""
    positive = labels.astype(bool)
    placements = []
    for scores in (a, b):
        x, y = scores[positive][:, None], scores[~positive][None, :]
        psi = (x > y) + 0.5 * (x == y)
        placements.append((psi.mean(), psi.mean(axis=1), psi.mean(axis=0)))
    m, n = int(positive.sum()), int((~positive).sum())
    s10 = np.cov(np.vstack([placements[0][1], placements[1][1]]))
    s01 = np.cov(np.vstack([placements[0][2], placements[1][2]]))
    s = s10 / m + s01 / n
    difference = placements[0][0] - placements[1][0]
    return placements[0][0], placements[1][0], difference / math.sqrt(s[0, 0] + s[1, 1] - 2 * s[0, 1])


def correlated_scores(n: int, seed: int, *, ties: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.3).astype(int)
    shared = rng.normal(size=n)
    a = shared + 1.0 * labels + rng.normal(scale=0.8, size=n)
    b = shared + 0.6 * labels + rng.normal(scale=0.8, size=n)
    if ties:
        a, b = np.round(a, 1), np.round(b, 1)
    return labels, a, b


class TestDeLong:
    @pytest.mark.parametrize("ties", [False, True])
    def test_it_matches_the_direct_quadratic_implementation(self, ties: bool) -> None:
        for seed in range(5):
            labels, a, b = correlated_scores(300, seed, ties=ties)
            result = delong_test(labels, a, b)
            auc_a, auc_b, z = direct_delong(labels, a, b)
            assert result.auc_a == pytest.approx(auc_a, abs=1e-12)
            assert result.auc_b == pytest.approx(auc_b, abs=1e-12)
            assert result.z == pytest.approx(z, rel=1e-9)
            assert result.p_value == pytest.approx(2 * scipy_stats.norm.sf(abs(z)), rel=1e-9)

    def test_its_areas_equal_scikit_learns(self) -> None:
        labels, a, b = correlated_scores(500, 7, ties=True)
        result = delong_test(labels, a, b)
        assert result.auc_a == pytest.approx(roc_auc_score(labels, a), abs=1e-12)
        assert result.auc_b == pytest.approx(roc_auc_score(labels, b), abs=1e-12)

    def test_it_reproduces_the_worked_example_exactly(self) -> None:
        # By hand (the docstring): Var_a = 1/18, Var_b = 13/144, Cov = -1/144, z = 4 / sqrt(23).
        result = delong_test([1, 1, 1, 0, 0], [0.9, 0.6, 0.3, 0.5, 0.2], [0.8, 0.4, 0.4, 0.4, 0.7])
        assert (result.auc_a, result.auc_b) == (pytest.approx(5 / 6), pytest.approx(0.5))
        assert result.variance_a == pytest.approx(float(Fraction(1, 18)))
        assert result.variance_b == pytest.approx(float(Fraction(13, 144)))
        assert result.covariance == pytest.approx(float(Fraction(-1, 144)))
        assert result.z == pytest.approx(4 / math.sqrt(23))
        assert result.p_value == pytest.approx(0.40425, abs=1e-5)

    def test_it_is_antisymmetric_and_invariant_to_order(self) -> None:
        labels, a, b = correlated_scores(200, 3)
        forward, backward = delong_test(labels, a, b), delong_test(labels, b, a)
        assert backward.z == pytest.approx(-forward.z)
        order = np.random.default_rng(0).permutation(labels.size)
        assert delong_test(labels[order], a[order], b[order]).z == pytest.approx(forward.z)

    def test_it_gives_no_evidence_for_identical_models(self) -> None:
        labels, a, _ = correlated_scores(100, 1)
        result = delong_test(labels, a, a)
        assert (result.difference, result.z, result.p_value) == (0.0, 0.0, 1.0)

    def test_it_refuses_a_single_class_and_misaligned_scores(self) -> None:
        with pytest.raises(StatsInputError, match="both positives and negatives"):
            delong_test([1, 1], [0.1, 0.2], [0.3, 0.4])
        with pytest.raises(StatsInputError, match="aligned"):
            delong_test([1, 0], [0.1, 0.2], [0.3])

    def test_midranks_equal_scipys(self) -> None:
        values = np.random.default_rng(2).integers(0, 20, 400).astype(float)
        np.testing.assert_array_equal(midranks(values), scipy_stats.rankdata(values))


class TestAucDifferenceCi:
    def test_it_equals_a_resampling_by_indices_with_scikit_learn(self) -> None:
        labels, a, b = correlated_scores(120, 4, ties=True)
        result = auc_difference_ci(labels, a, b, n_resamples=200, seed=5)
        positives, negatives = np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)
        pos_rng, neg_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(5).spawn(2))
        drawn_pos = pos_rng.integers(0, positives.size, size=(200, positives.size))
        drawn_neg = neg_rng.integers(0, negatives.size, size=(200, negatives.size))
        differences = []
        for row in range(200):
            rows = np.concatenate([positives[drawn_pos[row]], negatives[drawn_neg[row]]])
            differences.append(roc_auc_score(labels[rows], a[rows]) - roc_auc_score(labels[rows], b[rows]))
        low, high = np.quantile(differences, [0.025, 0.975])
        assert result.estimate == pytest.approx(roc_auc_score(labels, a) - roc_auc_score(labels, b))
        assert (result.low, result.high) == (pytest.approx(low), pytest.approx(high))
        assert result.std_error == pytest.approx(np.std(differences, ddof=1))

    def test_its_spread_agrees_with_delongs_standard_error(self) -> None:
        labels, a, b = correlated_scores(2_000, 9)
        interval = auc_difference_ci(labels, a, b, n_resamples=1_000, seed=0)
        assert interval.std_error == pytest.approx(delong_test(labels, a, b).std_error, rel=0.15)
        assert interval.low < interval.estimate < interval.high


class TestPairing:
    def test_it_reads_ids_and_pairs_them_in_id_order(self, tmp_path) -> None:
        first, second = tmp_path / "a.csv", tmp_path / "b.csv"
        first.write_text("id,score,label\nt1,0.9,1\nt2,0.1,0\nt3,0.5,0\n")
        second.write_text("label,score,id\n0,0.2,t3\n1,0.7,t1\n0,0.4,t2\n")
        ids_a, ids_b = read_ids(first), read_ids(second)
        assert ids_a.tolist() == [b"t1", b"t2", b"t3"]
        paired = pair_by_id(ids_a, ids_b, labels_a=[1, 0, 0], labels_b=[0, 1, 0])
        assert (paired.a.tolist(), paired.b.tolist()) == ([0, 1, 2], [1, 2, 0])

    def test_it_refuses_ids_one_file_lacks_naming_them(self) -> None:
        with pytest.raises(FraudInputError, match=r"1 ids only in old \('t3'\); 1 ids only in new \('t4'\)"):
            pair_by_id(["t1", "t3"], ["t1", "t4"], labels_a=[0, 1], labels_b=[0, 1], names=("old", "new"))

    def test_it_refuses_repeated_ids_and_differing_labels(self) -> None:
        with pytest.raises(FraudInputError, match="repeats the id 't1'"):
            pair_by_id(["t1", "t1"], ["t1", "t2"], labels_a=[0, 0], labels_b=[0, 1])
        with pytest.raises(FraudInputError, match="1 examples have different labels"):
            pair_by_id(["t1", "t2"], ["t2", "t1"], labels_a=[0, 1], labels_b=[1, 1])


def test_per_user_values_average_to_the_registrys_metrics(tmp_path) -> None:
    recs, interactions = tmp_path / "recs.csv", tmp_path / "interactions.csv"
    recs.write_text("user,item,rank\nu1,a,1\nu1,b,2\nu2,c,1\nu2,a,2\nu3,d,1\n")
    interactions.write_text("user,item\nu1,b\nu2,d\nu2,c\nu1,a\nu4,a\n")
    files = read_recsys_files(recs, interactions)
    stats = RecsysStats(files.data)
    values = per_user_values(stats)
    assert set(values) <= set(PER_USER_METRICS) and {"hit_rate", "ndcg_at_k", "arp"} <= set(values)
    for name, per_user in values.items():
        assert np.nanmean(per_user) == pytest.approx(RECSYS_METRICS[name].of_stats(stats)), name
