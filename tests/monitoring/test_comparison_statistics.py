"""A comparison job's list overlap, paired effect sizes, ANOVA, Tukey's HSD and discriminative power: the
stored values equal evalcore's functions (themselves tested against scipy, statsmodels and the papers) on
the same per-query scores and runs; the page, the CSVs and the API show them."""

from __future__ import annotations

import csv
import io
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from evalcore import trec
from evalcore.comparison import align_results
from evalcore.overlap import MEASURES, OverlapParams, run_overlap
from evalcore.retrieval import evaluate
from evalcore.stats import discriminative_power, paired_effect_size, tukey_hsd, two_way_anova
from evalplatform.errors import InputError
from evalplatform.models import Team
from monitoring.evaluations import services as evaluations
from monitoring.files import uploads
from monitoring.models import Comparison, ComparisonPair
from tests.monitoring.conftest import synthetic_collection, upload

QRELS, RUN = synthetic_collection(queries=12, docs=20)
MEASURES_ASKED = ["map", "P_10"]


@pytest.fixture
def runs(team: Team, theo: User) -> tuple[Any, list[Any]]:
    qrels = uploads.qrels_upload(team=team, upload=upload("judged.qrels", QRELS), uploaded_by=theo)
    made = [
        uploads.run_upload(
            team=team, upload=upload(f"{name}.run", RUN(seed, quality, name)), uploaded_by=theo
        )
        for name, seed, quality in (("bm25", 1, 1.5), ("dense", 2, 0.3), ("mixed", 3, 0.8))
    ]
    return qrels, made


def compared(qrels: Any, runs: list[Any], **options: Any) -> Comparison:
    comparison = evaluations.comparison_create(
        qrels=qrels, runs=runs, measures=MEASURES_ASKED, enqueue=False, **options
    )
    assert evaluations.comparison_run(comparison_id=comparison.pk).status == "done", comparison.error
    return Comparison.objects.get(pk=comparison.pk)


def score_matrix(qrels: Any, runs: list[Any], measure: str) -> np.ndarray:
    """evalcore's per-query scores of each run, aligned as the comparison aligns them."""
    judged = trec.read_qrels(qrels.file.path)
    results = {
        str(run.pk): evaluate(judged, trec.read_run(run.file.path), MEASURES_ASKED, complete=True)
        for run in runs
    }
    _, scores = align_results(results, MEASURES_ASKED, complete=False)
    return np.array([scores[str(run.pk)][measure] for run in runs])


@pytest.mark.django_db
class TestStoredStatistics:
    def test_it_stores_evalcores_effect_sizes_beside_every_p_value(self, runs: Any) -> None:
        qrels, made = runs
        comparison = compared(qrels, made)
        by_id = {run.pk: i for i, run in enumerate(made)}
        for pair in ComparisonPair.objects.filter(comparison=comparison):
            matrix = score_matrix(qrels, made, pair.measure)
            want = paired_effect_size(matrix[by_id[pair.run_a_id]], matrix[by_id[pair.run_b_id]])
            assert pair.cohens_dz == pytest.approx(want.cohens_dz, rel=1e-12)
            assert pair.hedges_g == pytest.approx(want.hedges_g, rel=1e-12)
        assert ComparisonPair.objects.filter(comparison=comparison).count() == 6

    def test_it_stores_the_anova_tukey_and_discriminative_power_of_each_measure(self, runs: Any) -> None:
        qrels, made = runs
        comparison = compared(qrels, made, alpha=0.1)
        for measure in MEASURES_ASKED:
            matrix = score_matrix(qrels, made, measure)
            stored = comparison.many_systems[measure]
            table = two_way_anova(matrix)
            assert stored["anova"]["systems"]["f"] == pytest.approx(table.systems.f, rel=1e-12)
            assert stored["anova"]["topics"]["p_value"] == pytest.approx(table.topics.p_value, rel=1e-12)
            assert stored["anova"]["residual"]["df"] == table.residual.df == 2 * 11
            assert stored["anova"]["residual_variance"] == pytest.approx(table.residual_variance, rel=1e-12)
            hsd = tukey_hsd(matrix)
            ids = [run.pk for run in made]
            for row in stored["tukey"]["pairs"]:
                i, j = ids.index(row["run_a_id"]), ids.index(row["run_b_id"])
                assert row["mean_difference"] == pytest.approx(hsd.mean_difference[i, j], rel=1e-12)
                assert row["p_value"] == pytest.approx(hsd.p_values[i, j], rel=1e-9)
                assert (row["lower"], row["upper"]) == pytest.approx(
                    (hsd.lower[i, j], hsd.upper[i, j]), rel=1e-9
                )
                assert row["significant"] == bool(hsd.p_values[i, j] < 0.1)
            power = discriminative_power(matrix, alpha=0.1, test="bootstrap", n_resamples=1000, seed=0)
            stored_power = stored["discriminative_power"]
            assert stored_power["significant"] == power.significant and stored_power["pairs"] == 3
            assert stored_power["share"] == pytest.approx(power.share)
            assert [row["p_value"] for row in stored_power["p_values"]] == pytest.approx(
                power.p_values.tolist()
            )
        assert comparison.many_systems["map"]["discriminative_power"]["significant"] >= 1  # bm25 beats dense

    def test_it_stores_evalcores_list_overlap_of_every_pair(self, runs: Any) -> None:
        qrels, made = runs
        comparison = compared(qrels, made, overlap_k=5, rbo_p=0.8)
        assert len(comparison.overlap) == 3
        for entry in comparison.overlap:
            a, b = (next(run for run in made if run.pk == entry[key]) for key in ("run_a_id", "run_b_id"))
            want = run_overlap(
                trec.read_run(a.file.path), trec.read_run(b.file.path), OverlapParams(k=5, p=0.8)
            )
            assert entry["qids"] == want.qids.tolist() and entry["num_q"] == 12
            for figure in MEASURES:
                values = want.values[figure]
                stored = np.array(entry["per_query"][figure], dtype=float)  # None (undefined) reads as NaN
                np.testing.assert_allclose(stored, values, rtol=1e-12, equal_nan=True)
                assert entry["mean"][figure] == pytest.approx(want.mean(figure), rel=1e-12)
            assert (
                sum(v is None for v in entry["per_query"]["kendall_tau"]) == np.isnan(want.kendall_tau).sum()
            )
            assert entry["shared"] == want.shared.tolist()

    def test_it_leaves_the_anova_and_tukey_out_for_two_runs(self, runs: Any) -> None:
        qrels, made = runs
        comparison = compared(qrels, made[:2])
        stats = comparison.many_systems["map"]
        assert stats["anova"] is None and stats["tukey"] is None
        assert stats["discriminative_power"]["pairs"] == 1

    def test_it_refuses_an_rbo_persistence_outside_zero_and_one(self, runs: Any) -> None:
        qrels, made = runs
        with pytest.raises(InputError, match="persistence"):
            evaluations.comparison_create(qrels=qrels, runs=made, rbo_p=1.0, enqueue=False)


def read_csv(response: Any) -> list[dict[str, str]]:
    assert response.status_code == 200, response.content[:300]
    return list(csv.DictReader(io.StringIO(response.content.decode())))


@pytest.mark.django_db
class TestPagesAndApi:
    @pytest.fixture
    def comparison(self, runs: Any) -> Comparison:
        qrels, made = runs
        return compared(qrels, made)

    @pytest.fixture
    def client_in(self, client: Client, theo: User) -> Client:
        client.force_login(theo)
        return client

    def test_it_shows_the_statistics_and_overlap_beside_the_tables(
        self, client_in: Client, comparison: Comparison
    ) -> None:
        page = client_in.get(reverse("monitoring:comparison-detail", args=["search", comparison.pk]))
        html = page.content.decode()
        assert page.status_code == 200
        anova = comparison.many_systems["map"]["anova"]
        assert f"{anova['residual_variance']:.4g}" in html
        assert 'id="overlap-table"' in html and "tukey-table" in html and "Discriminative power" in html
        pair = ComparisonPair.objects.filter(comparison=comparison, measure="map").first()
        assert pair is not None and f"{pair.cohens_dz:.3f}" in html

    def test_it_downloads_the_overlap_tukey_and_anova_as_csv(
        self, client_in: Client, comparison: Comparison
    ) -> None:
        args = ["search", comparison.pk]
        overlap = read_csv(client_in.get(reverse("monitoring:comparison-overlap-csv", args=args)))
        assert len(overlap) == 3 * (12 + 1)
        first = comparison.overlap[0]
        means = next(row for row in overlap if row["qid"] == "all" and int(row["run_a_id"]) == first["run_a_id"]
                     and int(row["run_b_id"]) == first["run_b_id"])  # fmt: skip
        assert float(means["rbo_ext"]) == pytest.approx(first["mean"]["rbo_ext"])
        tukey = read_csv(client_in.get(reverse("monitoring:comparison-tukey-csv", args=args)))
        assert len(tukey) == 2 * 3
        assert float(tukey[0]["p_value"]) == pytest.approx(
            comparison.many_systems[tukey[0]["measure"]]["tukey"]["pairs"][0]["p_value"]
        )
        anova = read_csv(client_in.get(reverse("monitoring:comparison-anova-csv", args=args)))
        assert [row["source"] for row in anova] == ["systems", "topics", "residual"] * 2
        significance = read_csv(client_in.get(reverse("monitoring:comparison-csv", args=args)))
        stored = {
            (p.measure, p.run_a_id, p.run_b_id): p
            for p in ComparisonPair.objects.filter(comparison=comparison)
        }
        for row in significance:
            pair = stored[(row["measure"], int(row["run_a_id"]), int(row["run_b_id"]))]
            assert float(row["hedges_g"]) == pytest.approx(pair.hedges_g)

    def test_the_api_gives_them_too(self, client_in: Client, comparison: Comparison) -> None:
        body = client_in.get(reverse("monitoring-api:comparison", args=["search", comparison.pk])).json()
        assert body["overlap_k"] == 10 and body["rbo_p"] == 0.9
        assert [entry["mean"] for entry in body["overlap"]] == [entry["mean"] for entry in comparison.overlap]
        assert "per_query" not in body["overlap"][0]
        assert body["many_systems"]["P_10"]["anova"] == comparison.many_systems["P_10"]["anova"]
        assert all(pair["cohens_dz"] is not None for pair in body["pairs"])

    def test_the_form_refuses_a_bad_rbo_persistence_beside_the_field(
        self, client_in: Client, runs: Any
    ) -> None:
        qrels, made = runs
        data = {"qrels": qrels.pk, "runs": [run.pk for run in made], "measures": ["map"], "test": "t",
                "correction": "holm", "alpha": 0.05, "rel_level": 1, "overlap_k": 10, "rbo_p": 1.5}  # fmt: skip
        response = client_in.post(reverse("monitoring:comparison-create", args=["search"]), data)
        assert response.status_code == 400
        assert response.context["form"].errors == {"rbo_p": ["p must lie strictly between 0 and 1."]}
        assert not Comparison.objects.exists()
