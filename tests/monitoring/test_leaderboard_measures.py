"""Which value of a run the leaderboard, its diff, its API, a run's page and a run's series show per measure:
the newest finished evaluation that has the measure (a narrower re-evaluation, as the README's
`evaluate search --run 1 --qrels 1 -m map -m nDCG@10`, hides nothing), and one measure under one name
(`nDCG@10` and `ndcg_cut_10` are one column, one chart, one link)."""

from __future__ import annotations

import itertools
import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from evalplatform.models import Team
from monitoring.evaluations import selectors
from monitoring.evaluations.diffs import leaderboard_diff
from monitoring.models import Evaluation, QrelsSource, Run
from series.services import MetricValueIn, metric_values_write
from series.subjects import run_series
from tests.monitoring.stored import evaluation_row
from tests.monitoring.test_pages import add_sources, evaluate_now, logged_in

pytestmark = pytest.mark.django_db

FULL = ("map", "P_10", "ndcg_cut_10", "recip_rank")
NARROW = ("map", "nDCG@10")
KEYS = itertools.count()


@pytest.fixture
def viewer(client: Client, team: Team, vera: User) -> Client:
    return logged_in(client, vera)


@pytest.fixture
def sources(team: Team, theo: User) -> tuple[QrelsSource, Run, Run]:
    return add_sources(team, theo)


@pytest.fixture
def narrowed(sources: Any) -> dict[str, Any]:
    """bm25 evaluated on every measure, then again on map and nDCG@10 only; dense on every measure."""
    qrels, good, weak = sources
    full = evaluate_now(good, qrels, FULL)
    narrow = evaluate_now(good, qrels, NARROW)
    return {"qrels": qrels, "good": good, "weak": weak, "full": full, "narrow": narrow,
            "weak_full": evaluate_now(weak, qrels, FULL)}  # fmt: skip


def stored(run: Run, qrels: QrelsSource, values: dict[str, float], at: Any) -> Evaluation:
    """A finished evaluation written directly, finished at `at` (several of one run on one qrels source)."""
    evaluation = Evaluation.objects.create(
        team=run.team, run=run, qrels=qrels, measures=list(values), status="done", finished_at=at,
        options_key=f"k{next(KEYS)}", qids=["q1"], num_queries=1,
        per_query={measure: [value] for measure, value in values.items()},
    )  # fmt: skip
    metric_values_write(
        job=evaluation, series=run_series(qrels, run.name), observed_at=at,
        values=[MetricValueIn(measure, value) for measure, value in values.items()],
    )  # fmt: skip
    return evaluation


def header_keys(page: str) -> list[str]:
    table = page[
        page.index('id="leaderboard-table"') : page.index("</thead>", page.index('id="leaderboard-table"'))
    ]
    return re.findall(r'<span class="key">([^<]+)</span>', table)


class TestNewestValuePerMeasure:
    def test_it_keeps_every_measure_after_a_narrow_re_evaluation(self, narrowed: dict[str, Any]) -> None:
        board = selectors.leaderboard(qrels=narrowed["qrels"])
        row = next(row for row in board.rows if row.run == narrowed["good"])
        assert row.evaluation == narrowed["narrow"]  # the row is still the run's newest evaluation
        assert board.measures == ["map", "ndcg_cut_10", "P_10", "recip_rank"]
        for measure in ("P_10", "recip_rank"):
            assert row.results[measure].value == evaluation_row(narrowed["full"], measure).value
            assert row.source(measure) == narrowed["full"]
        assert row.results["ndcg_cut_10"].value == evaluation_row(narrowed["narrow"], "nDCG@10").value
        assert row.source("ndcg_cut_10") == row.source("map") == narrowed["narrow"]

    def test_its_page_shows_them_with_the_evaluation_each_comes_from(
        self, viewer: Client, narrowed: dict[str, Any]
    ) -> None:
        qrels, full = narrowed["qrels"], narrowed["full"]
        page = viewer.get(f"/teams/search/leaderboard/{qrels.pk}/?sort=P_10").content.decode()
        assert header_keys(page) == ["map", "ndcg_cut_10", "P_10", "recip_rank"]
        table = page[page.index('id="leaderboard-table"') :]
        good_row = next(tr for tr in table.split("<tr>") if ">bm25</a>" in tr)
        assert "—" not in good_row.split('class="num coverage')[0]
        assert f"{evaluation_row(full, 'P_10').value:.4f}" in good_row
        assert good_row.count(f'data-evaluation="{full.pk}"') == 2  # P_10 and recip_rank
        assert (
            f"From evaluation #{full.pk}" in good_row
            and f"?evaluation={full.pk}&amp;measure=P_10" in good_row
        )

    def test_its_api_names_the_evaluation_of_each_value(
        self, viewer: Client, narrowed: dict[str, Any]
    ) -> None:
        qrels, full, narrow = narrowed["qrels"], narrowed["full"], narrowed["narrow"]
        body = viewer.get(f"/api/teams/search/leaderboard/{qrels.pk}/?sort=nDCG@10").json()
        assert body["sort"] == "ndcg_cut_10" and body["measures"] == [
            "map",
            "ndcg_cut_10",
            "P_10",
            "recip_rank",
        ]
        (good,) = [row for row in body["rows"] if row["run"]["id"] == narrowed["good"].pk]
        assert good["evaluation"] == narrow.pk
        assert {key: value["evaluation"] for key, value in good["results"].items()} == {
            "map": narrow.pk, "ndcg_cut_10": narrow.pk, "P_10": full.pk, "recip_rank": full.pk,
        }  # fmt: skip
        assert good["results"]["P_10"]["value"] == evaluation_row(full, "P_10").value

    def test_its_diff_compares_every_run_on_a_measure_a_newer_evaluation_left_out(self, team: Team) -> None:
        old = QrelsSource.objects.create(team=team, name="v1", kind="upload", file="qrels/v1.qrels")
        new = QrelsSource.objects.create(team=team, name="v2", kind="upload", file="qrels/v2.qrels")
        runs = [Run.objects.create(team=team, name=name, file=f"runs/{name}.run") for name in "abc"]
        start = timezone.now() - timedelta(days=1)
        for i, run in enumerate(runs):
            stored(run, old, {"map": 0.1 * i, "P_10": 0.3 - 0.1 * i}, start)
            stored(run, new, {"map": 0.1 * i, "P_10": 0.1 * i}, start)
        stored(runs[0], new, {"map": 0.05}, start + timedelta(hours=1))  # narrow and newer
        (p10,) = leaderboard_diff(old=old, new=new, measures=["P@10"]).measures
        assert p10.measure == "P_10" and p10.runs_compared == 3
        assert p10.kendall_tau == pytest.approx(-1.0)
        assert [row.new.value for row in p10.rows if row.new] == pytest.approx([0.2, 0.1, 0.0])

    def test_it_reads_many_evaluations_per_run_in_a_fixed_number_of_queries(
        self, viewer: Client, team: Team, sources: Any, django_assert_max_num_queries: Any
    ) -> None:
        qrels = sources[0]
        runs = [Run.objects.create(team=team, name=f"run{i}", file=f"runs/r{i}.run") for i in range(20)]
        start = timezone.now() - timedelta(days=1)
        for run in runs[:2]:
            stored(run, qrels, {"map": 0.2, "P_10": 0.3}, start)
        url = f"/teams/search/leaderboard/{qrels.pk}/"
        with django_assert_max_num_queries(9) as few:
            viewer.get(url)
        for i, run in enumerate(runs):
            stored(run, qrels, {"map": 0.2, "P_10": 0.3, "recip_rank": 0.4}, start)
            for hours in range(1, 6):  # narrower and newer, five times
                stored(run, qrels, {"map": 0.1 * hours + 0.01 * i}, start + timedelta(hours=hours))
        with django_assert_max_num_queries(len(few.captured_queries)):
            page = viewer.get(url).content.decode()
        assert header_keys(page) == ["map", "P_10", "recip_rank"] and "run19" in page
        with django_assert_max_num_queries(len(few.captured_queries)):
            viewer.get(url + "leaderboard.csv")


class TestOneNamePerMeasure:
    def test_it_shows_ndcg_at_10_and_ndcg_cut_10_as_one_column(self, viewer: Client, sources: Any) -> None:
        qrels, good, weak = sources
        evaluate_now(good, qrels, ("map", "ndcg_cut_10"))
        asked = evaluate_now(weak, qrels, ("map", "nDCG@10"))
        both = selectors.leaderboard(qrels=qrels)
        assert both.measures == ["map", "ndcg_cut_10"]
        weak_row = next(row for row in both.rows if row.run == weak)
        assert weak_row.results["ndcg_cut_10"].value == evaluation_row(asked, "nDCG@10").value
        page = viewer.get(
            f"/teams/search/leaderboard/{qrels.pk}/?measures=nDCG@10&sort=nDCG@10"
        ).content.decode()
        assert header_keys(page) == ["ndcg_cut_10"] and 'aria-sort="descending"' in page
        whole = viewer.get(f"/teams/search/leaderboard/{qrels.pk}/").content.decode()
        assert (
            header_keys(whole) == ["map", "ndcg_cut_10"]
            and "nDCG@10" not in whole[whole.index('id="chart-heading"') :]
        )

    def test_it_shows_one_column_for_an_evaluation_asking_both_names(self, sources: Any) -> None:
        qrels, good, _ = sources
        evaluation = evaluate_now(good, qrels, ("nDCG@10", "ndcg_cut_10", "P@10"))
        (row,) = selectors.leaderboard(qrels=qrels).rows
        assert list(row.results)[:2] == ["ndcg_cut_10", "P_10"]
        assert row.results["ndcg_cut_10"].value == evaluation_row(evaluation, "ndcg_cut_10").value

    def test_the_run_page_links_one_measure_once_and_older_evaluations_measures(
        self, viewer: Client, narrowed: dict[str, Any]
    ) -> None:
        good, full, narrow = narrowed["good"], narrowed["full"], narrowed["narrow"]
        page = viewer.get(f"/teams/search/runs/{good.pk}/").content.decode()
        start = page.index('class="measure-picker"')
        picker = page[start : page.index("</nav>", start)]
        assert f"Evaluation #{narrow.pk}" in page  # the newest, by default
        assert picker.count(">ndcg_cut_10</a>") == 1 and "nDCG@10" not in picker
        older = picker[picker.index('id="older-measures"') :]
        assert re.findall(r">([\w@]+) \(#(\d+)\)</a>", older) == [
            ("P_10", str(full.pk)),
            ("recip_rank", str(full.pk)),
        ]
        assert f"?evaluation={full.pk}&amp;measure=P_10" in older
        asked = viewer.get(f"/teams/search/runs/{good.pk}/?measure=recip_rank").content.decode()
        assert (
            f"Evaluation #{full.pk}" in asked and '<strong aria-current="true">recip_rank</strong>' in asked
        )
        alias = viewer.get(f"/teams/search/runs/{good.pk}/?evaluation={narrow.pk}&measure=ndcg_cut_10")
        value = evaluation_row(narrow, "nDCG@10").value
        assert f'id="run-value">{value:.4f}' in alias.content.decode()

    def test_the_series_page_charts_one_measure_once(self, viewer: Client, team: Team, sources: Any) -> None:
        qrels, good, _ = sources
        first = evaluate_now(good, qrels, ("map", "ndcg_cut_10"))
        second = evaluate_now(good, qrels, ("nDCG@10", "ndcg_cut_10"))
        series = run_series(qrels, good.name)
        page = viewer.get(f"/teams/search/series/{series.pk}/").content.decode()
        assert page.count('id="metric-ndcg_cut_10"') == 1 and 'id="metric-nDCG@10"' not in page
        assert page.count('id="metric-map"') == 1
        values = [evaluation_row(first, "ndcg_cut_10").value, evaluation_row(second, "nDCG@10").value]
        assert all(f"{value:.4f}" in page for value in values)
