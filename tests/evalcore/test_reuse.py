"""evalcore.reuse against independent computations: a direct loop over the leave-one-out definition,
scipy's kendalltau, statsmodels' power solvers and G*Power's published sample sizes, and a hand case
where one annotator's label decides a swap (issue 23)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import FTestAnovaPower, TTestPower

from evalcore.aggregation import agreement_filter, dawid_skene
from evalcore.agreement import LongLabels
from evalcore.retrieval import Qrels, Run, evaluate, parse_measure
from evalcore.reuse import (
    PairLabels,
    ReuseParams,
    SensitivityParams,
    annotator_grades,
    annotator_sensitivity,
    bootstrap_grades,
    leave_one_out,
    residual_variance,
    score_grade_sets,
    topic_set_size_anova,
    topic_set_size_table,
    topic_set_size_ttest,
)


def collection(
    seed: int = 3, n_runs: int = 8, n_queries: int = 6, n_docs: int = 60
) -> tuple[Qrels, dict[str, Run]]:
    rng = np.random.default_rng(seed)
    grades = {
        f"q{q}": {f"d{d}": int(rng.integers(0, 3)) if rng.random() < 0.4 else 0 for d in range(n_docs)}
        for q in range(n_queries)
    }
    runs = {}
    for r in range(n_runs):
        skill = r / n_runs
        runs[f"r{r}"] = Run.from_dict(
            {
                q: {d: float(skill * g + rng.random()) for d, g in docs.items() if rng.random() < 0.7}
                for q, docs in grades.items()
            }
        )
    # The qrels hold only the depth-10 pool, as a pooled collection does.
    pooled = {(q, d) for run in runs.values() for q, docs in _top(run, 10).items() for d in docs}
    qrels = Qrels.from_dict(
        {q: {d: g for d, g in docs.items() if (q, d) in pooled} for q, docs in grades.items()}
    )
    return qrels, runs


def _top(run: Run, depth: int) -> dict[str, list[str]]:
    out = {}
    for q, docs in run.to_dict().items():
        out[q] = [
            d for d, _ in sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)[:depth]
        ]
    return out


class TestLeaveOneOut:
    def test_it_matches_a_direct_loop_over_the_definition(self) -> None:
        qrels, runs = collection()
        report = leave_one_out(qrels, runs, params=ReuseParams(depth=10, measure="map"))
        judged = qrels.to_dict()
        tops = {name: _top(run, 10) for name, run in runs.items()}
        full = {name: evaluate(qrels, run, ["map"]).aggregate["map"] for name, run in runs.items()}
        for row in report.runs:
            others = {
                (q, d) for name, top in tops.items() if name != row.run for q, ds in top.items() for d in ds
            }
            mine = {(q, d) for q, ds in tops[row.run].items() for d in ds}
            unique = {(q, d) for q, d in mine - others if d in judged.get(q, {})}
            reduced = Qrels.from_dict(
                {q: {d: g for d, g in ds.items() if (q, d) not in unique} for q, ds in judged.items()}
            )
            expected = evaluate(reduced, runs[row.run], ["map"]).aggregate["map"]
            assert row.unique == len(unique)
            assert row.full["map"] == pytest.approx(full[row.run])
            assert row.left_out["map"] == pytest.approx(expected)
            assert row.rank_full == 1 + sum(v > full[row.run] for n, v in full.items() if n != row.run)
            assert row.rank_left_out == 1 + sum(v > expected for n, v in full.items() if n != row.run)
        assert any(row.unique for row in report.runs)
        assert all(row.drop("map") >= -1e-12 for row in report.runs)  # fewer relevant found, never more

    def test_it_leaves_a_tag_group_out_together(self) -> None:
        qrels, runs = collection()
        tags = {"r0": ["bm25"], "r1": ["bm25"], "r2": ["dense"]}
        report = leave_one_out(qrels, runs, params=ReuseParams(depth=10), tags=tags)
        assert [row.run for row in report.groups] == ["r0", "r1"]  # "dense" has one run: no group
        tops = {name: _top(run, 10) for name, run in runs.items()}
        group = {(q, d) for name in ("r0", "r1") for q, ds in tops[name].items() for d in ds}
        rest = {
            (q, d) for name in runs if name not in ("r0", "r1") for q, ds in tops[name].items() for d in ds
        }
        judged = qrels.to_dict()
        unique = {(q, d) for q, d in group - rest if d in judged.get(q, {})}
        reduced = Qrels.from_dict(
            {q: {d: g for d, g in ds.items() if (q, d) not in unique} for q, ds in judged.items()}
        )
        for row in report.groups:
            assert row.group == "bm25" and row.unique == len(unique)
            assert row.left_out["map"] == pytest.approx(
                evaluate(reduced, runs[row.run], ["map"]).aggregate["map"]
            )

    def test_it_takes_a_measure_by_any_of_its_names(self) -> None:
        qrels, runs = collection()
        report = leave_one_out(qrels, runs, params=ReuseParams(depth=10, measure="P.10"))
        assert report.runs[0].full["P.10"] == pytest.approx(
            evaluate(qrels, runs["r0"], ["P_10"]).aggregate["P_10"]
        )
        with pytest.raises(ValueError, match="several"):
            ReuseParams(measure="P.5,10")

    def test_it_reports_bpref_infap_and_a_verdict(self) -> None:
        qrels, runs = collection()
        report = leave_one_out(qrels, runs, params=ReuseParams(depth=10))
        row = report.runs[0]
        assert set(row.full) == {"map", "bpref", "infAP", "Judged@10"}
        assert len(report.verdicts) == len(runs)
        for v in report.verdicts:
            assert v.level in ("reusable", "caution", "not reusable")
            assert v.text.startswith(v.level + ": Judged@10 ")
        worst = max(report.runs, key=lambda r: r.relative_drop("map") or 0)
        assert report.verdicts[0].largest_relative_drop == pytest.approx(worst.relative_drop("map"))

    def test_a_run_with_full_coverage_and_no_drop_is_reusable(self) -> None:
        qrels = Qrels.from_dict({"q": {"a": 1, "b": 0, "c": 1}})
        same = Run.from_dict({"q": {"a": 3.0, "b": 2.0, "c": 1.0}})
        report = leave_one_out(qrels, {"A": same, "B": same}, params=ReuseParams(depth=3))
        assert [r.unique for r in report.runs] == [0, 0]
        assert report.verdicts[0].text == (
            "reusable: Judged@10 1.00, largest leave-one-out drop 0.000 (0.0%), no rank change"
        )

    def test_a_version_where_leaving_out_moves_a_run_calls_for_caution(self) -> None:
        qrels = Qrels.from_dict({"q": {"a": 1, "b": 1, "c": 0}})
        runs = {
            "A": Run.from_dict({"q": {"a": 3.0, "c": 2.0}}),
            "B": Run.from_dict({"q": {"b": 3.0, "c": 2.0, "a": 1.0}}),
        }
        report = leave_one_out(qrels, runs, params=ReuseParams(depth=1))
        # A alone pooled a, B alone pooled b: each loses its one relevant document at rank 1.
        assert [(r.unique, r.unique_relevant) for r in report.runs] == [(1, 1), (1, 1)]
        # A: AP 0.5 -> 0 (second either way); B: 0.833 -> 1/3, below A's 0.5: one place down.
        assert [r.rank_shift for r in report.runs] == [0, 1]
        assert report.verdicts[0].level == "caution"
        assert "(100.0%), largest rank change 1 place" in report.verdicts[0].text


def hand_pairs() -> PairLabels:
    """Two queries; annotator "carol" alone calls q1/b relevant, which lifts run B above run A."""
    rows = [
        (
            "q1",
            "a",
            1,
            [
                {"annotator": "ann", "grade": 1},
                {"annotator": "bob", "grade": 1},
                {"annotator": "carol", "grade": 1},
            ],
        ),
        (
            "q1",
            "b",
            0,
            [
                {"annotator": "ann", "grade": 0},
                {"annotator": "bob", "grade": 0},
                {"annotator": "carol", "grade": 2},
            ],
        ),
        ("q2", "c", 1, [{"annotator": "ann", "grade": 1}, {"annotator": "bob", "grade": 1}]),
        (
            "q2",
            "d",
            0,
            [
                {"annotator": "ann", "grade": 0},
                {"annotator": "source-x", "grade": 1},
                {"source": "adjudication", "grade": 0},
            ],
        ),
    ]
    return PairLabels.from_judgments(rows)


def hand_runs() -> dict[str, Run]:
    return {
        "A": Run.from_dict({"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 2.0, "d": 1.0}}),
        "B": Run.from_dict({"q1": {"b": 2.0, "a": 1.0}, "q2": {"c": 2.0, "d": 1.0}}),
    }


class TestSensitivity:
    def test_one_annotator_alone_swaps_the_runs(self) -> None:
        report = annotator_sensitivity(
            hand_pairs(), hand_runs(), params=SensitivityParams(n_resamples=50, seed=1, min_coverage=0.5)
        )
        # Published: A finds q1/a first (AP 1), B second (AP 0.5); q2 the same: A 1.0 > B 0.75.
        assert report.published.tolist() == pytest.approx([1.0, 0.75])
        carol = next(a for a in report.annotators if a["annotator"] == "carol")
        # Carol's qrels: q1 {a: 1, b: 2}: both runs find both relevant documents: A = B = 1.0.
        assert carol["scores"] == pytest.approx([1.0, 1.0])
        ann = next(a for a in report.annotators if a["annotator"] == "ann")
        assert ann["tau"] == 1.0 and ann["coverage"] == 1.0
        assert "source-x" not in {a["annotator"] for a in report.annotators}  # 1 of 4 pairs < 50%

    def test_swap_rate_equals_the_share_of_resamples_where_carol_decides(self) -> None:
        pairs = hand_pairs()
        params = SensitivityParams(n_resamples=400, seed=7)
        grades = bootstrap_grades(pairs, n_resamples=400, seed=7, aggregation="median")
        # q1/b is relevant under the median (rounded down) when at least 2 of its 3 draws are carol's 2.
        flipped = grades[:, 1] >= 1
        report = annotator_sensitivity(pairs, hand_runs(), params=params)
        assert report.swap_rate[0, 1] == pytest.approx(flipped.mean())  # B ties A: counted as a swap
        assert 0.15 < flipped.mean() < 0.4  # P(>= 2 of 3 draws) = 7/27
        assert np.all(grades[:, 3] == 0)  # the adjudicated pair keeps its grade
        assert np.all(grades[:, 0] == 1)

    def test_taus_match_scipy(self) -> None:
        qrels, runs = collection(seed=5, n_runs=6)
        rng = np.random.default_rng(2)
        judged = qrels.to_dict()
        rows = [
            (
                q,
                d,
                g,
                [
                    {"annotator": f"u{k}", "grade": int(np.clip(g + rng.integers(-1, 2), 0, 2))}
                    for k in range(3)
                ],
            )
            for q, ds in judged.items()
            for d, g in ds.items()
        ]
        pairs = PairLabels.from_judgments(rows)
        report = annotator_sensitivity(pairs, runs, params=SensitivityParams(n_resamples=20, seed=3))
        for b in range(20):
            expected = stats.kendalltau(report.published, report.resampled[b]).statistic
            assert report.taus[b] == pytest.approx(expected)
        low, high = report.tau_interval
        assert low <= report.tau_mean <= high

    @pytest.mark.parametrize("measure", ["ndcg", "map", "P.10", "gm_map", "bpref", "num_rel_ret", "infAP"])
    def test_batched_scoring_matches_one_evaluation_per_grade_set(
        self, measure: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        qrels, runs = collection(seed=9, n_runs=3)
        judged = qrels.to_dict()
        rows = [
            (q, d, g, [{"annotator": "u", "grade": g}]) for q, ds in judged.items() for d, g in ds.items()
        ]
        pairs = PairLabels.from_judgments(rows)
        rng = np.random.default_rng(0)
        grades = rng.integers(-1, 3, size=(5, pairs.n_pairs))  # -1: pooled but unjudged (infAP reads it)
        monkeypatch.setattr("evalcore.reuse._sensitivity.MAX_STACKED_ROWS", 2 * pairs.n_pairs)  # batches of 2
        scored = score_grade_sets(pairs, grades, list(runs.values()), measure=measure, rel_level=1)
        key = parse_measure(measure)[0].key
        for k in range(5):
            codes = np.unique(pairs.qids.astype(str), return_inverse=True)
            q = Qrels.from_codes(*codes, list(pairs.doc_ids), grades[k])
            for r, run in enumerate(runs.values()):
                assert scored[k, r] == pytest.approx(evaluate(q, run, [measure]).aggregate[key])

    def test_a_dawid_skene_build_is_resampled_through_its_model_as_a_direct_loop_computes_it(self) -> None:
        """Three annotators, "liar" answering the opposite of the others on every pair: Dawid-Skene learns
        it and trusts his flipped labels, where the majority vote of a resample drawing him twice follows
        him. The reference: the same draws, each pair's posterior summed by a loop."""
        rng = np.random.default_rng(11)
        truth = rng.integers(0, 2, size=40)
        rows = [
            (f"q{p // 10}", f"d{p}", int(t), [
                {"annotator": "ann", "grade": int(t)},
                {"annotator": "bea", "grade": int(t) if p % 7 else 1 - int(t)},
                {"annotator": "liar", "grade": 1 - int(t)},
            ])
            for p, t in enumerate(truth.tolist())
        ]  # fmt: skip
        pairs = PairLabels.from_judgments(rows)
        grades = bootstrap_grades(pairs, n_resamples=60, seed=5, aggregation="dawid_skene")
        fit = dawid_skene(
            LongLabels.from_codes(pairs.label_pair, pairs.label_annotator, pairs.label_grade, n_items=40)
        )
        draws = np.random.default_rng(5).random((60, pairs.label_pair.size))
        m = np.bincount(pairs.label_pair, minlength=40)
        starts = np.concatenate([[0], np.cumsum(m)[:-1]])
        for b in range(60):
            for p in range(40):
                score = np.log(fit.priors).copy()
                for j in np.flatnonzero(pairs.label_pair == p):
                    drawn = starts[p] + int(draws[b, j] * m[p])
                    code = int(np.searchsorted(fit.classes, pairs.label_grade[drawn]))
                    score += np.log(fit.confusion[pairs.label_annotator[drawn], :, code])
                assert grades[b, p] == fit.classes[int(np.argmax(score))]
        # The liar's flipped label counts for the truth: the resamples keep the published grades far more
        # often than the majority vote's, which follows him whenever he is drawn twice.
        majority = bootstrap_grades(pairs, n_resamples=60, seed=5, aggregation="majority")
        assert (grades != truth).mean() == pytest.approx(14 / 2400)  # 14 of 2,400 pair grades
        assert (majority != truth).mean() == pytest.approx(0.33)

    def test_the_agreement_filter_would_keep_every_resample_of_a_kept_pair(self) -> None:
        """Why it is not applied again: a resample's labels come from the pair's own, so their spread is
        within the pair's, and their count is the pair's."""
        rng = np.random.default_rng(3)
        rows = []
        for p in range(30):
            low = int(rng.integers(0, 3))
            labels = [{"annotator": f"u{k}", "grade": low + int(rng.integers(0, 2))} for k in range(3)]
            rows.append(("q1", f"d{p}", low, labels))
        pairs = PairLabels.from_judgments(rows)
        draws = np.random.default_rng(9).random((50, pairs.label_pair.size))
        m = np.bincount(pairs.label_pair)
        starts = np.concatenate([[0], np.cumsum(m)[:-1]])
        picked = starts[pairs.label_pair] + np.floor(draws * m[pairs.label_pair]).astype(np.int64)
        item = (np.arange(50)[:, None] * 30 + pairs.label_pair[None, :]).ravel()
        resampled = LongLabels.from_codes(item, np.tile(np.arange(pairs.label_pair.size), 50),
                                          pairs.label_grade[picked].ravel(), n_items=1500)  # fmt: skip
        published = LongLabels.from_codes(pairs.label_pair, pairs.label_annotator, pairs.label_grade)
        assert agreement_filter(published, tolerance=1, min_labels=3).kept.all()
        assert agreement_filter(resampled, tolerance=1, min_labels=3).kept.all()

    def test_it_is_seeded(self) -> None:
        a = bootstrap_grades(hand_pairs(), n_resamples=30, seed=4, aggregation="mean")
        b = bootstrap_grades(hand_pairs(), n_resamples=30, seed=4, aggregation="mean")
        assert np.array_equal(a, b)
        names, grades = annotator_grades(hand_pairs(), min_coverage=0.9)
        assert [n for n, _ in names] == ["ann"] and grades.shape == (1, 4)


class TestTopicSetSize:
    def test_residual_variance_is_two_way_anova_without_replication(self) -> None:
        rng = np.random.default_rng(0)
        x = rng.random((12, 5))
        n, m = x.shape
        total = ((x - x.mean()) ** 2).sum()
        topics = m * ((x.mean(axis=1) - x.mean()) ** 2).sum()
        systems = n * ((x.mean(axis=0) - x.mean()) ** 2).sum()
        assert residual_variance(x) == pytest.approx((total - topics - systems) / ((n - 1) * (m - 1)))
        assert residual_variance(x, design="one_way") == pytest.approx(np.var(x, axis=0, ddof=1).mean())

    @pytest.mark.parametrize("variance,min_diff", [(0.02, 0.05), (0.05, 0.1), (0.01, 0.02), (0.1, 0.05)])
    @pytest.mark.parametrize("alpha,power", [(0.05, 0.8), (0.01, 0.9)])
    def test_ttest_matches_statsmodels(
        self, variance: float, min_diff: float, alpha: float, power: float
    ) -> None:
        effect = min_diff / math.sqrt(2 * variance)
        expected = math.ceil(TTestPower().solve_power(effect_size=effect, alpha=alpha, power=power) - 1e-6)
        assert (
            topic_set_size_ttest(variance=variance, min_diff=min_diff, alpha=alpha, power=power) == expected
        )

    @pytest.mark.parametrize("m", [2, 3, 10, 30])
    @pytest.mark.parametrize("variance,min_diff", [(0.02, 0.05), (0.05, 0.1), (0.1, 0.1)])
    def test_anova_matches_statsmodels(self, m: int, variance: float, min_diff: float) -> None:
        f = math.sqrt(min_diff**2 / (2 * variance) / m)
        nobs = FTestAnovaPower().solve_power(effect_size=f, k_groups=m, alpha=0.05, power=0.8)
        assert topic_set_size_anova(variance=variance, min_diff=min_diff, n_systems=m) == math.ceil(
            nobs / m - 1e-6
        )

    def test_it_reproduces_published_sample_sizes(self) -> None:
        # Cohen's medium effects, G*Power 3's published answers: a paired t-test with d = 0.5 needs 34
        # pairs; one-way ANOVA with f = 0.25 over 3 groups needs 159 in all (53 a group).
        assert topic_set_size_ttest(variance=0.02, min_diff=0.1) == 34  # d = 0.1 / sqrt(0.04) = 0.5
        min_diff = math.sqrt(0.25**2 * 3 * 2 * 0.02)  # Delta = minD^2 / (2 sigma^2) = m f^2
        assert topic_set_size_anova(variance=0.02, min_diff=min_diff, n_systems=3) == 53

    def test_more_systems_need_more_topics_and_the_table_has_both(self) -> None:
        rng = np.random.default_rng(1)
        x = rng.normal(0.3, 0.15, size=(50, 8)) + rng.normal(0, 0.1, size=(50, 1))
        table = topic_set_size_table(x, min_diffs=[0.05, 0.1], alpha=0.05, power=0.8)
        assert table.n_systems == 8 and table.variance == pytest.approx(residual_variance(x))
        assert table.rows[0].ttest > table.rows[1].ttest
        assert table.rows[0].anova >= table.rows[0].ttest  # ANOVA over 8 systems needs more than one pair


class TestSakaiApproximations:
    @pytest.mark.parametrize("variance,min_diff", [(0.02, 0.05), (0.05, 0.1), (0.01, 0.02), (0.1, 0.05)])
    def test_the_excel_tools_t_approximation_lands_within_a_topic_of_the_exact_answer(
        self, variance: float, min_diff: float
    ) -> None:
        exact = topic_set_size_ttest(variance=variance, min_diff=min_diff)
        sakai = topic_set_size_ttest(variance=variance, min_diff=min_diff, method="sakai")
        assert abs(exact - sakai) <= 1

    @pytest.mark.parametrize("m", [2, 5, 10, 30])
    @pytest.mark.parametrize("variance,min_diff", [(0.02, 0.05), (0.05, 0.1), (0.1, 0.05)])
    def test_nagatas_f_approximation_lands_within_two_percent(
        self, m: int, variance: float, min_diff: float
    ) -> None:
        exact = topic_set_size_anova(variance=variance, min_diff=min_diff, n_systems=m)
        sakai = topic_set_size_anova(variance=variance, min_diff=min_diff, n_systems=m, method="sakai")
        # The approximation is roughest with one numerator degree of freedom (two systems).
        assert abs(exact - sakai) <= max(1, (0.03 if m == 2 else 0.02) * exact)

    def test_the_approximate_powers_track_the_exact_ones(self) -> None:
        from evalcore.reuse import anova_power, ttest_power

        for n in (10, 30, 100):
            assert ttest_power(n, effect=0.3, alpha=0.05, method="sakai") == pytest.approx(
                ttest_power(n, effect=0.3, alpha=0.05), abs=0.01
            )
            assert anova_power(n, delta=0.05, n_systems=5, alpha=0.05, method="sakai") == pytest.approx(
                anova_power(n, delta=0.05, n_systems=5, alpha=0.05), abs=0.02
            )


def test_a_run_on_other_queries_scores_nothing() -> None:
    stranger = Run.from_dict({"elsewhere": {"a": 1.0}})
    scores = score_grade_sets(
        hand_pairs(), np.ones((3, 4), dtype=np.int64), [stranger, hand_runs()["A"]], measure="map"
    )
    assert np.isnan(scores[:, 0]).all() and scores[:, 1] == pytest.approx([1.0, 1.0, 1.0])
