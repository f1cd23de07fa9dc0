"""A team's series pages and API: any series of any family, its metrics over time with the numbers beside
the charts, every value as CSV; members only."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from evalplatform.models import Team, WorkerHeartbeat
from evalplatform.teams import team_create, team_member_set
from series.models import Series
from series.services import MetricValueIn, metric_values_write
from series.subjects import fraud_series, recsys_series

pytestmark = pytest.mark.django_db


@pytest.fixture
def team() -> Team:
    return team_create(slug="search", name="Search")


@pytest.fixture
def viewer(team: Team) -> User:
    user = User.objects.create_user("vera", password="vera-password-123")
    team_member_set(team=team, user=user, role="viewer")
    return user


@pytest.fixture
def fraud(team: Team) -> Series:
    series = fraud_series(team.pk, "cards")
    start = timezone.now() - timedelta(days=3)
    for day, (rate, cost) in enumerate([(0.62, 1200.0), (0.55, None), (0.41, 1800.5)]):
        job = WorkerHeartbeat.objects.create(hostname=f"job-{day}", last_seen=start)
        metric_values_write(job=job, series=series, observed_at=start + timedelta(days=day), values=[
            MetricValueIn("detection_rate", rate, ci_low=rate - 0.05, ci_high=rate + 0.05),
            MetricValueIn("total_cost", cost)])  # fmt: skip
    return series


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_it_lists_the_teams_series_by_kind(team: Team, viewer: User, fraud: Series) -> None:
    recsys_series(team.pk, "two-tower")
    page = signed_in(viewer).get("/teams/search/series/").content.decode()
    assert (
        "Fraud score set name" in page
        and "fraud scores cards" in page
        and "recommendations two-tower" in page
    )
    assert f'href="/teams/search/series/{fraud.pk}/"' in page


def test_it_charts_every_metric_with_its_numbers_and_csv(viewer: User, fraud: Series) -> None:
    page = signed_in(viewer).get(f"/teams/search/series/{fraud.pk}/").content.decode()
    assert page.count('class="chart"') == 2
    numbers = re.findall(r'<td class="num value">([^<]+|<span[^>]*>undefined)', page)
    assert numbers[:3] == ["0.6200", "0.5500", "0.4100"] and "undefined" in numbers[4]
    figure = json.loads(
        re.search(r'<script id="series-figure-0" type="application/json">(.*?)</script>', page)[1]
    )
    assert figure["data"][-1]["y"] == [0.62, 0.55, 0.41] and figure["data"][0]["fill"] == "toself"
    rows = list(
        csv.DictReader(
            io.StringIO(signed_in(viewer).get(f"/teams/search/series/{fraud.pk}/values.csv").content.decode())
        )
    )
    assert len(rows) == 6 and {row["metric"] for row in rows} == {"detection_rate", "total_cost"}
    assert [row["value"] for row in rows if row["metric"] == "total_cost"] == ["1200.0", "", "1800.5"]


def test_it_answers_the_series_and_their_values_in_the_api(viewer: User, fraud: Series) -> None:
    client = signed_in(viewer)
    listed = client.get("/api/teams/search/series/?family=fraud").json()
    assert [(s["id"], s["kind"], s["family"]) for s in listed] == [(fraud.pk, "fraud", "fraud")]
    assert client.get("/api/teams/search/series/?family=retrieval").json() == []
    refused = client.get("/api/teams/search/series/?family=nope")
    assert refused.status_code == 400 and "family" in refused.json()
    values = client.get(f"/api/teams/search/series/{fraud.pk}/values/?metric=total_cost").json()
    assert values["truncated"] is False
    assert [v["value"] for v in values["values"]] == [1200.0, None, 1800.5]


def test_it_keeps_other_teams_out(fraud: Series) -> None:
    outsider = User.objects.create_user("otto", password="otto-password-123")
    team_create(slug="other", name="Other", creator=outsider)
    client = signed_in(outsider)
    assert client.get(f"/teams/search/series/{fraud.pk}/").status_code == 404
    assert client.get(f"/teams/other/series/{fraud.pk}/").status_code == 404
    assert client.get(f"/api/teams/other/series/{fraud.pk}/values/").status_code == 404
    assert Client().get("/teams/search/series/").status_code == 302


def test_it_lists_the_latest_observations_on_the_home_page(team: Team, viewer: User, fraud: Series) -> None:
    recs = recsys_series(team.pk, "two-tower")
    job = WorkerHeartbeat.objects.create(hostname="recs-job", last_seen=timezone.now())
    metric_values_write(job=job, series=recs, observed_at=timezone.now(), values=[
        MetricValueIn("catalog_coverage", 0.4321), MetricValueIn("hit_rate", 0.9)])  # fmt: skip
    page = signed_in(viewer).get("/").content.decode()
    table = page[page.index('id="home-observations"') :]
    assert table.index("recommendations two-tower") < table.index("fraud scores cards")  # newest first
    assert "catalog_coverage" in table and "0.4321" in table and "hit_rate" not in table
    assert "0.4100" in table  # the fraud series' newest detection rate


def test_it_reads_the_series_lists_in_a_fixed_number_of_queries(
    team: Team, viewer: User, django_assert_max_num_queries: Any
) -> None:
    client = signed_in(viewer)

    def more(names: range) -> None:
        for i in names:
            series = fraud_series(team.pk, f"set-{i}")
            job = WorkerHeartbeat.objects.create(hostname=f"list-{i}", last_seen=timezone.now())
            metric_values_write(job=job, series=series, observed_at=timezone.now(),
                                values=[MetricValueIn("total_cost", float(i))])  # fmt: skip

    more(range(2))
    counts = {}
    for path in ("/teams/search/series/", "/api/teams/search/series/"):
        with django_assert_max_num_queries(8) as few:
            assert client.get(path).status_code == 200
        counts[path] = len(few.captured_queries)
    more(range(2, 20))
    for path, count in counts.items():
        with django_assert_max_num_queries(count):
            assert client.get(path).status_code == 200
