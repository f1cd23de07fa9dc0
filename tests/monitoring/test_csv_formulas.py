"""Every CSV download opens in a spreadsheet as data: text that starts like a formula is quoted (OWASP's
rule), numbers stay numbers. One test per download, each with a formula planted in a text column."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from evalplatform.csvexport import cell, neutralised
from evalplatform.models import Team
from monitoring.alerts import services as alerts
from monitoring.demo import demo_recsys_texts
from monitoring.models import EmbeddingSnapshot, EmbeddingStream, MonitorRun, QrelsSource, Run
from monitoring.recsys_fraud import services as recsys_fraud
from series.services import MetricValueIn, metric_values_write
from series.subjects import stream_series
from tests.conftest import client_for
from tests.monitoring.conftest import alerts_checked, upload
from tests.monitoring.test_pages import add_sources, compare_now, evaluate_now
from tests.monitoring.test_recsys_fraud_pages import csv_file

FORMULA = '=HYPERLINK("http://x","y")'


def csv_rows(response: Any) -> list[list[str]]:
    assert response.status_code == 200 and response["Content-Type"] == "text/csv; charset=utf-8"
    return list(csv.reader(io.StringIO(response.content.decode())))


def test_it_quotes_text_that_starts_like_a_formula_and_leaves_numbers_alone() -> None:
    for text in ("=1+1", "+1+1", "-1+1", "@SUM(A1)", "\tx", "\rx"):
        assert neutralised(text) == "'" + text
    for text in ("-0.5", "+3", "-1e-05", "plain", "a=b", ""):
        assert neutralised(text) == text
    assert (cell(-0.5), cell(-3), cell(1e-5), cell(None), cell(True)) == ("-0.5", "-3", "1e-05", "", "true")


@pytest.mark.django_db
class TestRetrievalDownloads:
    def test_a_run_named_like_a_formula_comes_out_of_the_leaderboard_as_text(
        self, theo: User, vera: User, team: Team
    ) -> None:
        qrels, good, _ = add_sources(team, theo)
        created = client_for(theo).post(
            "/api/teams/search/runs/", {"file": upload("evil.run", "q1 Q0 d1-2 1 2.0 x\n"), "name": FORMULA}
        )
        assert created.status_code == 201, created.content
        evil = Run.objects.get(pk=created.json()["id"])
        assert evil.name == FORMULA
        evaluate_now(evil, qrels)
        evaluate_now(good, qrels)
        rows = csv_rows(client_for(vera).get(f"/teams/search/leaderboard/{qrels.pk}/leaderboard.csv"))
        by_run = {row[2]: row for row in rows[1:]}
        assert set(by_run) == {"'" + FORMULA, good.name}
        header = rows[0]
        for row in by_run.values():
            value = float(row[header.index("map")])  # a number, not quoted
            assert 0 <= value <= 1 and not row[header.index("map")].startswith("'")

    def test_the_comparison_tables_quote_run_names_and_qids_and_keep_negative_differences(
        self, theo: User, vera: User, team: Team
    ) -> None:
        qrels_text = "".join(f"{q} 0 d{i} {i % 2}\n" for q in ("-2+3", "@q", "q3") for i in range(6))
        qrels = QrelsSource.objects.get(pk=_qrels(team, qrels_text).pk)
        runs = [
            _run(team, "+good", lambda i: 6 - i),
            _run(team, "-weak", lambda i: i),
        ]
        comparison = compare_now(qrels, runs)
        viewer = client_for(vera)
        significance = csv_rows(viewer.get(f"/teams/search/comparisons/{comparison.pk}/significance.csv"))
        header = significance[0]
        assert {row[header.index("run_a")] for row in significance[1:]} <= {"'+good", "'-weak"}
        assert {row[header.index("run_b")] for row in significance[1:]} <= {"'+good", "'-weak"}
        diffs = [float(row[header.index("diff")]) for row in significance[1:]]
        assert any(diff < 0 for diff in diffs) or any(diff > 0 for diff in diffs)
        assert all(not row[header.index("diff")].startswith("'") for row in significance[1:])
        pair = comparison.pairs.first()
        assert pair is not None
        per_query = csv_rows(viewer.get(f"/teams/search/comparisons/{comparison.pk}/pairs/{pair.pk}.csv"))
        assert {row[0] for row in per_query[1:]} == {"'-2+3", "'@q", "q3"}
        assert any(row[3].startswith("-") for row in per_query[1:])  # a negative difference, unquoted
        evaluation = evaluate_now(runs[0], qrels)
        rows = csv_rows(viewer.get(f"/teams/search/evaluations/{evaluation.pk}/per-query.csv"))
        assert {row[0] for row in rows[1:]} == {"'-2+3", "'@q", "q3"}


def _qrels(team: Team, text: str) -> QrelsSource:
    from monitoring.files import uploads

    return uploads.qrels_upload(team=team, upload=upload("judged.qrels", text))


def _run(team: Team, name: str, score: Any) -> Run:
    from monitoring.files import uploads

    text = "".join(
        f"{q} Q0 d{i} {rank} {score(i)} t\n"
        for q in ("-2+3", "@q", "q3")
        for rank, i in enumerate(sorted(range(6), key=lambda i: -score(i)), start=1)
    )
    return uploads.run_upload(team=team, upload=upload(f"{name.strip('+-')}.run", text), name=name)


@pytest.mark.django_db
class TestStreamDownloads:
    def test_the_series_and_alerts_quote_snapshot_labels_and_rule_names(self, vera: User, team: Team) -> None:
        stream = EmbeddingStream.objects.create(team=team, slug="docs", name="Docs", dimension=8)
        alerts.alert_rule_create(
            team=team, series=stream_series(stream), name="=cmd|' /C calc'!A0", metric="avg_cosine_similarity",
            comparator=">", threshold=0.3,
        )  # fmt: skip
        snapshot = EmbeddingSnapshot.objects.create(
            stream=stream, file="x.npy", label="@SUM(1+1)", rows=10, dimension=8, observed_at=timezone.now()
        )
        run = MonitorRun.objects.create(
            stream=stream, snapshot=snapshot, observed_at=snapshot.observed_at, status="done"
        )
        with alerts_checked():
            metric_values_write(
                job=run, series=stream_series(stream), observed_at=run.observed_at,
                values=[MetricValueIn("avg_cosine_similarity", 0.9)],
            )  # fmt: skip
        viewer = client_for(vera)
        series = csv_rows(viewer.get("/teams/search/streams/docs/series.csv"))
        header = series[0]
        assert series[1][header.index("snapshot")] == "'@SUM(1+1)"
        assert series[1][header.index("avg_cosine_similarity")] == "0.9"
        events = csv_rows(viewer.get("/teams/search/streams/docs/alerts.csv"))
        assert events[1][0] == "'=cmd|' /C calc'!A0" and events[1][4] == "0.9"


@pytest.mark.django_db
def test_the_recommendation_coverage_table_quotes_a_category(theo: User, vera: User, team: Team) -> None:
    texts = demo_recsys_texts()
    header, first, *rest = texts["items"].splitlines()
    category = header.split(",").index("category")
    fields = first.split(",")
    planted = fields[category]
    items = "\n".join(
        [header, *(line.replace(f",{planted}", ",-cat") if line.endswith(f",{planted}") else line
                   for line in [first, *rest])]
    ) + "\n"  # fmt: skip
    files = {
        role: csv_file(f"{role}.csv", items if role == "items" else text) for role, text in texts.items()
    }
    recommendations = recsys_fraud.recommendation_set_upload(team=team, name="pop", uploaded_by=theo, **files)
    evaluation = recsys_fraud.recommendation_evaluation_create(
        recommendation_set=recommendations, enqueue=False
    )
    assert recsys_fraud.recommendation_evaluation_run(evaluation_id=evaluation.pk).status == "done"
    rows = csv_rows(
        client_for(vera).get(f"/teams/search/recommendations/evaluations/{evaluation.pk}/coverage.csv")
    )
    assert "'-cat" in {row[0] for row in rows[1:]}
    assert "-cat" not in {row[0] for row in rows[1:]}


def test_it_is_the_writer_of_every_download() -> None:
    import importlib

    from evalplatform import csvexport

    for module in (
        "monitoring.evaluations.views.leaderboard",
        "monitoring.embeddings.views",
        "monitoring.evaluations.views.comparisons",
        "monitoring.evaluations.views.runs",
        "monitoring.recsys_fraud.views",
    ):
        assert importlib.import_module(module).csv_response is csvexport.csv_response, module
