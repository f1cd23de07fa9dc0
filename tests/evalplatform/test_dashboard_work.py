"""Every dashboard's work per request is bounded: its queries do not grow with more runs, metrics or
evaluations (the same count at two sizes, under a ceiling), each chart on the page is built once (no
figure built twice or thrown away), the page holds the charts' template once whatever the number of
charts, and no plotly figure object is built on a request path (importing `plotly.graph_objects` fails
during the request). Each page's figures are also what plotly's own figure classes make of them: valid
properties only, and unchanged by plotly's validation (`go.Figure(figure).to_json()` gives them back)."""

from __future__ import annotations

import importlib
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotations.models import Project, Task
from annotations.quality import services as quality
from evalcore.recsys import RecsysOptions
from evalplatform.charts import plotly_template
from evalplatform.models import Team, WorkerHeartbeat
from evalplatform.teams import team_create, team_member_set
from monitoring.demo import FRAUD_OPTIONS, demo_fraud_text, demo_recsys_texts
from monitoring.embeddings import services as monitors
from monitoring.files import uploads
from monitoring.models import EmbeddingStream, QrelsSource, Run
from monitoring.recsys_fraud import services as recsys_fraud
from series.models import Series
from series.services import MetricValueIn, metric_values_write
from series.subjects import fraud_series
from tests.annotations.conftest import build_project, record_answers
from tests.conftest import LENA, THEO, Persona, make_user
from tests.monitoring.conftest import VERA, alerts_checked, upload
from tests.monitoring.test_pages import RUN, add_sources, compare_now, many_runs, stored_evaluation
from tests.monitoring.test_recsys_fraud_pages import csv_file
from tests.monitoring.test_streams import embeddings, make_stream, npy_upload

pytestmark = pytest.mark.django_db

#: The chart modules; each builds its figures with `evalplatform.charts.figure`.
CHART_MODULES = (
    "monitoring.embeddings.charts",
    "monitoring.evaluations.charts",
    "monitoring.recsys_fraud.charts",
    "annotations.quality.charts",
    "series.charts",
)
#: plotly's figure classes: none may be imported while a dashboard answers.
FIGURE_CLASSES = ("plotly.graph_objects", "plotly.graph_objs", "plotly.express")


@dataclass(frozen=True)
class Work:
    queries: int
    figures_built: int
    charts: int  # the charts on the page (`data-figure` elements)
    templates: int  # the page's template blocks
    page: str


@pytest.fixture
def work(monkeypatch: pytest.MonkeyPatch) -> Callable[[Client, str], Work]:
    """`work(client, url)`: one request's queries, figures built and page, with plotly's figure classes
    unimportable while it runs."""
    built: list[str] = []
    for name in CHART_MODULES:
        module = importlib.import_module(name)
        monkeypatch.setattr(module, "figure", counted(module.figure, built))

    def get(client: Client, url: str) -> Work:
        built.clear()
        with (
            mock.patch.dict(sys.modules, dict.fromkeys(FIGURE_CLASSES)),
            CaptureQueriesContext(connection) as sql,
        ):
            response = client.get(url)
        assert response.status_code == 200, url
        page = response.content.decode()
        plotly_agrees(page)
        return Work(
            queries=len(sql), figures_built=len(built), charts=page.count('data-figure="'),
            templates=page.count('<script id="plotly-templates"'), page=page,
        )  # fmt: skip

    return get


def counted(function: Callable[..., Any], calls: list[str]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(function.__name__)
        return function(*args, **kwargs)

    return wrapper


def plotly_agrees(page: str) -> None:
    """Every figure of the page, its named template put in as `charts.js` does, is accepted by plotly's
    figure classes (no unknown property) and comes back unchanged from their validation."""
    import plotly.graph_objects as go

    blocks = dict(re.findall(r'<script id="([^"]+)" type="application/json">(.*?)</script>', page, re.S))
    templates = json.loads(blocks.pop("plotly-templates", "{}"))
    for name, text in blocks.items():
        figure = json.loads(text)
        if not isinstance(figure, dict) or "layout" not in figure:
            continue  # another block (the quality page's drill-down links)
        named = figure["layout"].get("template")
        if isinstance(named, str):
            figure["layout"]["template"] = templates[named]
        validated = json.loads(go.Figure(figure).to_json())
        if named is None:  # plotly's own default, which plotly.js applies by itself
            del validated["layout"]["template"]
        assert validated == figure, name


def bounded(small: Work, large: Work, *, ceiling: int) -> None:
    assert large.queries == small.queries <= ceiling, (small.queries, large.queries)
    for work in (small, large):
        assert work.figures_built == work.charts > 0
        assert work.templates == 1
        assert '"template": {' not in work.page  # the figures name their template; the page holds it once


# --- people and teams --------------------------------------------------------------------------------------


@pytest.fixture
def theo() -> User:
    return make_user(THEO)


@pytest.fixture
def vera() -> User:
    return make_user(VERA)


@pytest.fixture
def team(theo: User, vera: User) -> Team:
    team = team_create(slug="search", name="Search", creator=theo)
    team_member_set(team=team, user=vera, role="viewer")
    return team


@pytest.fixture
def viewer(client: Client, vera: User, team: Team) -> Client:
    client.force_login(vera)
    return client


# --- the dashboards ----------------------------------------------------------------------------------------


def monitor_snapshots(stream: EmbeddingStream, seeds: list[tuple[int, bool]]) -> None:
    for seed, collapse in seeds:
        monitors.snapshot_upload(
            stream=stream, upload=npy_upload(embeddings(300, seed=seed, collapse=collapse))
        )
    with alerts_checked():  # checked here, as the worker's alert task would
        for run in monitors.stream_monitor_now(stream=stream, enqueue=False):
            monitors.monitor_run(run_id=run.pk)


@pytest.fixture
def stream(team: Team, queued: Any) -> EmbeddingStream:
    stream = make_stream(team, every_minutes=30)
    reference = monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(300, seed=1), "ref.npy"))
    monitors.stream_reference_set(stream=stream, snapshot=reference, enqueue=False)
    monitor_snapshots(stream, [(2, False), (3, True)])
    return stream


def test_the_stream_dashboard(viewer: Client, stream: EmbeddingStream, work: Any) -> None:
    every = stream.get_absolute_url() + "?all=1"  # every metric's chart (the default: the watched ones)
    small = work(viewer, every)
    monitor_snapshots(stream, [(4, True), (5, False), (6, True), (7, True)])
    large = work(viewer, every)
    bounded(small, large, ceiling=16)
    assert large.charts == small.charts == len(monitors.stream_series(stream=stream)) + 1  # and the scree
    assert (small.page.count('<tr id="run-'), large.page.count('<tr id="run-')) == (3, 7)


@pytest.fixture
def board(team: Team, theo: User) -> tuple[QrelsSource, Run, Run]:
    qrels, good, weak = add_sources(team, theo)
    for run, value in ((good, 0.5), (weak, 0.3)):
        stored_evaluation(run, qrels, {"map": value, "P_10": value / 2})
    return qrels, good, weak


def test_the_leaderboard_and_a_runs_evaluation(viewer: Client, board: Any, work: Any) -> None:
    qrels, good, _ = board
    small = [work(viewer, qrels.get_absolute_url()), work(viewer, good.get_absolute_url())]
    many_runs(qrels.team, qrels, 20, start=2)
    rich = Run.objects.create(team=qrels.team, name="rich", file="runs/rich.run", tags=["t"])
    measures = ("map", "P_10", "ndcg_cut_10", "recip_rank", "bpref", "Rprec")
    stored_evaluation(rich, qrels, dict.fromkeys(measures, 0.4))
    large = [work(viewer, qrels.get_absolute_url()), work(viewer, rich.get_absolute_url())]
    bounded(small[0], large[0], ceiling=9)
    bounded(small[1], large[1], ceiling=11)
    assert [w.charts for w in large] == [1, 1] and "run21" in large[0].page


def test_the_comparison(viewer: Client, board: Any, work: Any) -> None:
    qrels, good, weak = board
    few = compare_now(qrels, [good, weak], measures=("map",))
    small = work(viewer, few.get_absolute_url())
    third = uploads.run_upload(team=qrels.team, upload=upload("third.run", RUN(3, 1.0, "third")))
    many = compare_now(qrels, [good, weak, third], measures=("map", "ndcg_cut_10", "P_10", "recip_rank"))
    large = work(viewer, many.get_absolute_url())
    bounded(small, large, ceiling=10)
    assert large.page.count("<tr") > small.page.count("<tr")


def test_the_recommendation_dashboards(viewer: Client, team: Team, theo: User, work: Any) -> None:
    files = {role: csv_file(f"{role}.csv", text) for role, text in demo_recsys_texts().items()}
    recommendations = recsys_fraud.recommendation_set_upload(
        team=team, name="popular", uploaded_by=theo, **files
    )

    def evaluated(k: int) -> Any:
        job = recsys_fraud.recommendation_evaluation_create(
            recommendation_set=recommendations, options=RecsysOptions(k=k), enqueue=False
        )
        assert recsys_fraud.recommendation_evaluation_run(evaluation_id=job.pk).status == "done"
        return job

    first = evaluated(20)
    pages = [first.get_absolute_url(), recommendations.get_absolute_url()]
    small = [work(viewer, url) for url in pages]
    evaluated(10), evaluated(5)
    large = [work(viewer, url) for url in pages]
    bounded(small[0], large[0], ceiling=8)
    bounded(small[1], large[1], ceiling=10)


def test_the_fraud_dashboards(viewer: Client, team: Team, theo: User, work: Any) -> None:
    scores = recsys_fraud.fraud_score_set_upload(
        team=team, name="card-model", scores=csv_file("scores.csv", demo_fraud_text()), uploaded_by=theo
    )

    def evaluated(target_fpr: float) -> Any:
        options = replace(FRAUD_OPTIONS, target_fpr=target_fpr)
        job = recsys_fraud.fraud_evaluation_create(score_set=scores, options=options, enqueue=False)
        assert recsys_fraud.fraud_evaluation_run(evaluation_id=job.pk).status == "done"
        return job

    first = evaluated(0.01)
    pages = [first.get_absolute_url(), scores.get_absolute_url()]
    small = [work(viewer, url) for url in pages]
    evaluated(0.02), evaluated(0.05)
    large = [work(viewer, url) for url in pages]
    bounded(small[0], large[0], ceiling=8)
    bounded(small[1], large[1], ceiling=10)
    assert large[0].charts == 4


def answered_project(lena: User, people: list[User], *, slug: str) -> Project:
    """Accurate and careless annotators on gold and ordinary pairs, and the quality snapshot."""
    project = build_project(
        lead=lena, annotators=people, topics=2, docs_per_topic=10, gold_per_topic=5, slug=slug
    )
    gold = list(Task.objects.filter(project=project, is_gold=True).order_by("pk"))
    ordinary = list(Task.objects.filter(project=project, is_gold=False).order_by("pk"))
    record_answers(project, [
        (person, task, 3 if k % 3 else i % 5, 15.0 + i) for k, person in enumerate(people) for i, task in enumerate(gold)
    ] + [(person, task, (i + k) % 3) for k, person in enumerate(people) for i, task in enumerate(ordinary)])  # fmt: skip
    quality.quality_snapshot_refresh(project_id=project.pk)
    return project


def test_the_quality_dashboard(client: Client, work: Any) -> None:
    lena = make_user(LENA)
    client.force_login(lena)
    people = [make_user(Persona(f"ann{i}", f"ann{i}-password-123", "annotator")) for i in range(8)]
    small = work(client, f"/projects/{answered_project(lena, people[:3], slug='few').slug}/quality/")
    large = work(client, f"/projects/{answered_project(lena, people, slug='many').slug}/quality/")
    bounded(small, large, ceiling=16)
    assert "ann7" in large.page and "ann7" not in small.page


def test_the_series_page(viewer: Client, team: Team, work: Any) -> None:
    series = fraud_series(team.pk, "cards")
    metrics = ["detection_rate", "total_cost", "roc_auc", "pr_auc", "precision_at_budget", "savings"]

    def observe(days: range, names: list[str]) -> None:
        start = timezone.now() - timedelta(days=30)
        for day in days:
            job = WorkerHeartbeat.objects.create(hostname=f"job-{day}", last_seen=start)
            values = [MetricValueIn(name, 0.5 + day / 100, ci_low=0.4, ci_high=0.6) for name in names]
            metric_values_write(
                job=job, series=series, observed_at=start + timedelta(days=day), values=values
            )

    observe(range(2), metrics[:2])
    small = work(viewer, f"/teams/search/series/{series.pk}/")
    observe(range(2, 12), metrics)
    large = work(viewer, f"/teams/search/series/{series.pk}/")
    assert large.queries == small.queries <= 8
    assert (small.charts, large.charts) == (2, len(metrics))
    for page in (small, large):  # these charts name no template: the page carries none
        assert page.figures_built == page.charts and page.templates == 0
    assert Series.objects.count() == 1


def test_the_template_is_plotlys_own() -> None:
    import plotly.graph_objects as go

    embedded = json.loads(go.Figure(layout={"template": "plotly_white"}).to_json())["layout"]["template"]
    assert plotly_template() == embedded
