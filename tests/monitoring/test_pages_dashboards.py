"""The dashboards: the leaderboard, a run's page and a comparison's page. Each shows stored rows (charts
with the vendored plotly.js, the numbers beside them) and downloads them as CSV, equal to those rows."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.utils.html import escape

from evalplatform.charts import plotly_js_version
from evalplatform.models import Team
from monitoring.evaluations import charts
from monitoring.evaluations import services as evaluations
from monitoring.evaluations.selectors import HistogramBin, measure_column
from monitoring.evaluations.views.leaderboard import COVERAGE_HEADER
from monitoring.files import uploads
from monitoring.models import ComparisonPair, Evaluation, QrelsSource, Run
from tests.conftest import QueuedTasks, remote_assets
from tests.monitoring.conftest import upload
from tests.monitoring.stored import comparison_rows, evaluation_row, evaluation_rows
from tests.monitoring.test_pages import (
    RUN,
    add_sources,
    compare_now,
    evaluate_now,
    figure,
    logged_in,
    many_runs,
    stored_evaluation,
)


@pytest.fixture
def viewer(client: Client, team: Team, vera: User) -> Client:
    return logged_in(client, vera)


@pytest.fixture
def sources(team: Team, theo: User) -> tuple[QrelsSource, Run, Run]:
    return add_sources(team, theo)


def rows_of(response: Any) -> list[dict[str, str]]:
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def number(text: str) -> float | None:
    return None if text == "" else float(text)


@pytest.mark.django_db
class TestLeaderboard:
    @pytest.fixture
    def board(self, sources: Any) -> tuple[QrelsSource, Run, Run]:
        qrels, good, weak = sources
        evaluate_now(good, qrels, ("map", "P_10", "ndcg_cut_10", "num_ret"))
        evaluate_now(weak, qrels, ("map", "P_10", "ndcg_cut_10", "num_ret"))
        return qrels, good, weak

    def test_it_charts_the_sorted_measure_with_its_confidence_intervals(
        self, viewer: Client, board: Any
    ) -> None:
        qrels, good, weak = board
        page = viewer.get(f"/teams/search/leaderboard/{qrels.pk}/?sort=P_10").content.decode()
        bars = figure(page, "figure-leaderboard")["data"][0]
        stored = {
            evaluation.run.name: evaluation_row(evaluation, "P_10")
            for evaluation in Evaluation.objects.filter(qrels=qrels).select_related("run")
        }
        assert bars["type"] == "bar" and bars["x"] == ["bm25", "dense"]  # higher is better: best first
        assert bars["y"] == [stored["bm25"].value, stored["dense"].value]
        assert bars["error_y"]["array"][0] == pytest.approx(stored["bm25"].ci_high - stored["bm25"].value)
        assert bars["error_y"]["arrayminus"][1] == pytest.approx(
            stored["dense"].value - stored["dense"].ci_low
        )
        layout = figure(page, "figure-leaderboard")["layout"]
        assert layout["yaxis"]["range"] == pytest.approx([-0.04, 1.04])  # the registry's range, padded
        assert f'<script src="/vendor/plotly-{plotly_js_version()}.min.js" defer></script>' in page
        assert remote_assets(page) == [] and "https://" not in page
        assert 'id="chart-numbers"' in page and f"{stored['bm25'].value:.4f}" in page

    def test_it_sorts_by_a_column_in_the_registrys_direction_or_by_name(
        self, viewer: Client, board: Any
    ) -> None:
        qrels, good, weak = board
        base = f"/teams/search/leaderboard/{qrels.pk}/"
        page = viewer.get(base + "?sort=map").content.decode()
        assert page.index(">bm25</a>") < page.index(">dense</a>")
        assert 'aria-sort="descending"' in page and "?sort=ndcg_cut_10&amp;measures=" in page
        by_name = viewer.get(base + "?sort=run").content.decode()
        assert by_name.index(">bm25</a>") < by_name.index(">dense</a>") and 'aria-sort="ascending"' in by_name
        # An unknown sort key falls back to the first measure.
        assert viewer.get(base + "?sort=nonsense").status_code == 200

    def test_it_shows_the_chosen_measures_only(self, viewer: Client, board: Any) -> None:
        qrels = board[0]
        page = viewer.get(
            f"/teams/search/leaderboard/{qrels.pk}/?measures=P_10,map&sort=map"
        ).content.decode()
        head = page[
            page.index('id="leaderboard-table"') : page.index(
                "</thead>", page.index('id="leaderboard-table"')
            )
        ]
        assert '<span class="key">P_10</span>' in head and '<span class="key">map</span>' in head
        assert "ndcg_cut_10" not in head and head.index("P_10") < head.index(">map<")
        assert 'name="measures" value="ndcg_cut_10">' in page  # offered, unchecked

    def test_its_csv_equals_the_stored_rows(self, viewer: Client, board: Any) -> None:
        qrels = board[0]
        rows = rows_of(viewer.get(f"/teams/search/leaderboard/{qrels.pk}/leaderboard.csv?sort=map"))
        assert [row["run"] for row in rows] == ["bm25", "dense"] and [row["rank"] for row in rows] == [
            "1",
            "2",
        ]
        for row in rows:
            for result in evaluation_rows(int(row["evaluation_id"])):
                # The coverage measures have columns of their own (judged_10, judged_100).
                column = {"Judged@10": "judged_10", "Judged@100": "judged_100"}.get(
                    result.measure, result.measure
                )
                assert number(row[column]) == result.value  # exactly: repr round-trips a float
                assert number(row[f"{column}_ci_low"]) == result.ci_low
                assert number(row[f"{column}_ci_high"]) == result.ci_high
        assert rows[0]["num_ret_ci_low"] == ""  # a sum has no bootstrap interval
        chosen = rows_of(viewer.get(f"/teams/search/leaderboard/{qrels.pk}/leaderboard.csv?measures=P_10"))
        assert list(chosen[0]) == [
            "rank",
            "run_id",
            "run",
            "label",
            "evaluation_id",
            "P_10",
            "P_10_ci_low",
            "P_10_ci_high",
            *COVERAGE_HEADER,
        ]

    def test_it_draws_and_lists_runs_of_one_name_apart(
        self, viewer: Client, team: Team, sources: Any
    ) -> None:
        qrels = sources[0]
        for value in (0.354, 0.340):  # nightly runs, uploaded under one name
            run = Run.objects.create(team=team, name="bm25-noisy", file="runs/nightly.run")
            stored_evaluation(run, qrels, {"map": value})
        page = viewer.get(f"/teams/search/leaderboard/{qrels.pk}/?sort=map").content.decode()
        bars = figure(page, "figure-leaderboard")
        assert bars["layout"].get("barmode") in (None, "group") and len(bars["data"]) == 1
        noisy = [
            (x, y) for x, y in zip(bars["data"][0]["x"], bars["data"][0]["y"], strict=True) if "noisy" in x
        ]
        assert [y for _, y in noisy] == [0.354, 0.340] and len({x for x, _ in noisy}) == 2
        assert len(set(bars["data"][0]["x"])) == len(bars["data"][0]["x"]) == 2
        labels = [x for x, _ in noisy]
        table = page[
            page.index('id="leaderboard-table"') : page.index(
                "</table>", page.index('id="leaderboard-table"')
            )
        ]
        numbers = page[
            page.index('id="chart-numbers"') : page.index("</table>", page.index('id="chart-numbers"'))
        ]
        for label in labels:
            assert table.count(f">{escape(label)}</a>") == 1 and numbers.count(f">{escape(label)}</th>") == 1
        rows = rows_of(viewer.get(f"/teams/search/leaderboard/{qrels.pk}/leaderboard.csv?sort=map"))
        assert [row["label"] for row in rows if row["run"] == "bm25-noisy"] == labels
        api = viewer.get(f"/api/teams/search/leaderboard/{qrels.pk}/?sort=map").json()
        assert [row["label"] for row in api["rows"] if row["run"]["name"] == "bm25-noisy"] == labels

    def test_it_says_when_nothing_is_evaluated_yet(self, viewer: Client, sources: Any) -> None:
        page = viewer.get(f"/teams/search/leaderboard/{sources[0].pk}/").content.decode()
        assert "No finished evaluation on these qrels yet." in page and "plotly" not in page

    def test_it_reads_many_runs_in_a_fixed_number_of_queries(
        self, viewer: Client, team: Team, sources: Any, django_assert_max_num_queries: Any
    ) -> None:
        qrels = sources[0]
        many_runs(team, qrels, 3)
        url = f"/teams/search/leaderboard/{qrels.pk}/"
        with django_assert_max_num_queries(9) as few:
            viewer.get(url)
        many_runs(team, qrels, 60, start=3)
        with django_assert_max_num_queries(len(few.captured_queries)):
            page = viewer.get(url).content.decode()
        assert page.count('<td class="num">') >= 63 and "run62" in page
        with django_assert_max_num_queries(len(few.captured_queries)):
            assert len(rows_of(viewer.get(url + "leaderboard.csv"))) == 63


@pytest.mark.django_db
class TestRunPage:
    def test_it_shows_the_distribution_and_the_worst_queries(self, viewer: Client, sources: Any) -> None:
        qrels, good, _ = sources
        evaluation = evaluate_now(good, qrels)
        page = viewer.get(f"/teams/search/runs/{good.pk}/?measure=P_10").content.decode()
        result = evaluation_row(evaluation, "P_10")
        bars = figure(page, "figure-histogram")["data"][0]
        assert sum(bars["y"]) == evaluation.num_queries == 20 and len(bars["y"]) == 10
        assert figure(page, "figure-histogram")["layout"]["xaxis"]["range"] == pytest.approx([-0.04, 1.04])
        worst = sorted(zip(result.per_query, evaluation.qids, strict=True))[:20]
        table = page[page.index('id="worst-table"') :]
        positions = [table.index(f'<th scope="row">{qid}</th>') for _, qid in worst]
        assert positions == sorted(positions)
        assert f"{result.value:.4f}" in page and 'id="histogram-table"' in page

    def test_its_histogram_ticks_whole_numbers_where_the_values_are_whole(
        self, viewer: Client, sources: Any
    ) -> None:
        qrels, good, _ = sources
        evaluation = evaluate_now(good, qrels, ("num_rel_ret", "P_1", "map"))
        base = f"/teams/search/runs/{good.pk}/?evaluation={evaluation.pk}"

        def axes(measure: str) -> tuple[dict[str, Any], dict[str, Any], list[int]]:
            drawn = figure(viewer.get(f"{base}&measure={measure}").content.decode(), "figure-histogram")
            return drawn["layout"]["xaxis"], drawn["layout"]["yaxis"], drawn["data"][0]["y"]

        def ticks(axis: dict[str, Any]) -> dict[str, Any]:
            return {key: axis[key] for key in ("tickformat", "tick0", "dtick") if key in axis}

        # A count over 0..17: whole-number labels, plotly's own spacing (5 or so).
        counts = evaluation_row(evaluation, "num_rel_ret").per_query
        assert all(float(v).is_integer() for v in counts) and max(counts) > 10
        assert ticks(axes("num_rel_ret")[0]) == {"tickformat": "d"}
        # 0 or 1 per query: a tick at 0 and at 1, not every 0.2.
        assert set(evaluation_row(evaluation, "P_1").per_query) == {0.0, 1.0}
        assert ticks(axes("P_1")[0]) == {"tickformat": "d", "tick0": 0, "dtick": 1}
        # A continuous measure's axis keeps plotly's ticks; the query counts are whole numbers on every one.
        x, y, bars = axes("map")
        assert ticks(x) == {}
        assert ticks(y) == {"tickformat": "d", **({"tick0": 0, "dtick": 1} if max(bars) <= 10 else {})}
        column = measure_column("map")
        for counts, expected in (([3, 1], {"tick0": 0, "dtick": 1}), ([40, 1], {})):
            drawn = charts.histogram_figure(
                [HistogramBin(0.0, 0.5, counts[0]), HistogramBin(0.5, 1.0, counts[1])],
                column=column,
                run=good,
            )
            assert ticks(drawn["layout"]["yaxis"]) == {"tickformat": "d", **expected}

    def test_it_switches_measure_and_evaluation(self, viewer: Client, sources: Any) -> None:
        qrels, good, _ = sources
        first = evaluate_now(good, qrels, ("map",))
        second = evaluate_now(good, qrels, ("recip_rank",))
        page = viewer.get(f"/teams/search/runs/{good.pk}/").content.decode()
        assert "Per-query" in page and f"?evaluation={first.pk}" in page
        newest = figure(page, "figure-histogram")["layout"]["title"]["text"]
        assert "recip_rank" in newest  # the newest done evaluation by default
        older = viewer.get(f"/teams/search/runs/{good.pk}/?evaluation={first.pk}").content.decode()
        assert "(map)" in figure(older, "figure-histogram")["layout"]["title"]["text"]
        assert second.pk != first.pk

    def test_it_follows_an_unfinished_evaluation_and_shows_a_failed_ones_error(
        self, viewer: Client, team: Team, sources: Any
    ) -> None:
        qrels, good, _ = sources
        pending = evaluations.evaluation_create(run=good, qrels=qrels, enqueue=False)
        page = viewer.get(f"/teams/search/runs/{good.pk}/?evaluation={pending.pk}").content.decode()
        assert f'data-job-url="/teams/search/jobs/evaluation/{pending.pk}.json" data-reload-when-done' in page
        assert "plotly" not in page
        evaluations.evaluation_run(evaluation_id=pending.pk)  # fine: this run matches the qrels
        stranger = uploads.run_upload(team=team, upload=upload("other.run", "x1 Q0 d1 1 1.0 t\n"))
        failed = evaluations.evaluation_create(run=stranger, qrels=qrels, enqueue=False)
        evaluations.evaluation_run(evaluation_id=failed.pk)
        failed.refresh_from_db()
        page = viewer.get(f"/teams/search/runs/{stranger.pk}/").content.decode()  # the failed one, by default
        assert failed.status == "failed" and 'status-failed">Failed' in page and "no query" in failed.error
        assert escape(failed.error) in page

    def test_it_refuses_another_runs_evaluation(self, viewer: Client, sources: Any) -> None:
        qrels, good, weak = sources
        other = evaluate_now(weak, qrels, ("map",))
        assert viewer.get(f"/teams/search/runs/{good.pk}/?evaluation={other.pk}").status_code == 404
        assert viewer.get(f"/teams/search/runs/{good.pk}/?evaluation=x").status_code == 404

    def test_its_csv_equals_the_stored_per_query_values(self, viewer: Client, sources: Any) -> None:
        qrels, good, _ = sources
        evaluation = evaluate_now(good, qrels, ("map", "P_10", "num_ret"))
        rows = rows_of(viewer.get(f"/teams/search/evaluations/{evaluation.pk}/per-query.csv"))
        assert [row["qid"] for row in rows] == evaluation.qids
        for result in evaluation_rows(evaluation):
            assert [number(row[result.measure]) for row in rows] == result.per_query

    def test_it_reads_a_run_with_many_evaluations_in_a_fixed_number_of_queries(
        self, viewer: Client, sources: Any, django_assert_max_num_queries: Any
    ) -> None:
        qrels, good, _ = sources
        evaluate_now(good, qrels, ("map",))
        with django_assert_max_num_queries(12) as few:
            viewer.get(f"/teams/search/runs/{good.pk}/")
        for level in range(2, 8):
            evaluations.evaluation_create(
                run=good, qrels=qrels, measures=["map"], rel_level=level, enqueue=False
            )
        with django_assert_max_num_queries(len(few.captured_queries)):
            viewer.get(f"/teams/search/runs/{good.pk}/")


@pytest.mark.django_db
class TestComparisonPage:
    def test_it_shows_two_runs_differences_counts_and_test_result(self, viewer: Client, sources: Any) -> None:
        qrels, good, weak = sources
        comparison = compare_now(qrels, [good, weak], test="randomization")
        pair = ComparisonPair.objects.get(comparison=comparison, measure="map")
        page = viewer.get(f"/teams/search/comparisons/{comparison.pk}/?pair={pair.pk}").content.decode()
        a, b = Run.objects.get(pk=pair.run_a_id), Run.objects.get(pk=pair.run_b_id)
        assert f'id="wins">{pair.wins}<' in page and f'id="ties">{pair.ties}<' in page
        assert f'id="losses">{pair.losses}<' in page
        verdict = "Significant" if pair.significant else "Not significant"
        assert f"{verdict} at α = 0.05" in page and f"p = {pair.p_adjusted:.3g}" in page
        assert f"by {abs(pair.diff):.4f} in mean map" in page
        bars = figure(page, "figure-differences")["data"][0]
        assert bars["y"] == sorted(bars["y"], reverse=True) and len(bars["y"]) == 20
        a_values = comparison_rows(comparison)[(a.pk, "map")].per_query
        b_values = comparison_rows(comparison)[(b.pk, "map")].per_query
        assert sorted(bars["y"]) == sorted(x - y for x, y in zip(a_values, b_values, strict=True))
        assert sum(y > 0 for y in bars["y"]) == pair.wins and sum(y < 0 for y in bars["y"]) == pair.losses
        assert 'id="difference-table"' in page and "figure-pairs" not in page  # one pair: no pairs chart

    def test_its_csvs_equal_the_stored_rows(self, viewer: Client, sources: Any) -> None:
        qrels, good, weak = sources
        comparison = compare_now(qrels, [good, weak], correction="bh")
        rows = rows_of(viewer.get(f"/teams/search/comparisons/{comparison.pk}/significance.csv"))
        stored = {(p.measure, p.run_a_id, p.run_b_id): p for p in comparison.pairs.all()}
        assert len(rows) == len(stored) == 2
        for row in rows:
            pair = stored[(row["measure"], int(row["run_a_id"]), int(row["run_b_id"]))]
            assert (number(row["diff"]), number(row["p_value"]), number(row["p_adjusted"])) == (
                pair.diff, pair.p_value, pair.p_adjusted,
            )  # fmt: skip
            assert row["significant"] == str(pair.significant).lower() and row["correction"] == "bh"
            assert (int(row["wins"]), int(row["ties"]), int(row["losses"])) == (
                pair.wins,
                pair.ties,
                pair.losses,
            )
        pair = comparison.pairs.get(measure="ndcg_cut_10")
        per_query = rows_of(viewer.get(f"/teams/search/comparisons/{comparison.pk}/pairs/{pair.pk}.csv"))
        a = dict(
            zip(
                comparison.qids,
                comparison_rows(comparison)[(pair.run_a_id, "ndcg_cut_10")].per_query,
                strict=True,
            )
        )
        b = dict(
            zip(
                comparison.qids,
                comparison_rows(comparison)[(pair.run_b_id, "ndcg_cut_10")].per_query,
                strict=True,
            )
        )
        assert len(per_query) == 20
        for row in per_query:
            values = list(row.values())
            assert (number(values[1]), number(values[2])) == (a[row["qid"]], b[row["qid"]])
            assert number(row["diff"]) == a[row["qid"]] - b[row["qid"]]

    def test_it_tables_every_pair_of_three_runs(self, viewer: Client, team: Team, sources: Any) -> None:
        qrels, good, weak = sources
        third = add_sources(team)[1]
        comparison = compare_now(qrels, [good, weak, third], measures=("map", "P_10"))
        page = viewer.get(f"/teams/search/comparisons/{comparison.pk}/").content.decode()
        table = page[
            page.index('id="significance-table"') : page.index(
                "</table>", page.index('id="significance-table"')
            )
        ]
        assert table.count("<tr") == 1 + 6  # the header, and 3 pairs x 2 measures
        for pair in comparison.pairs.all():
            assert f"{pair.p_adjusted:.3g}" in table
        pairs = figure(page, "figure-pairs")["data"][0]
        assert len(pairs["x"]) == 3 and "significant: %{customdata[2]}" in pairs["hovertemplate"]

    def test_it_tells_runs_of_one_name_apart(self, viewer: Client, team: Team, sources: Any) -> None:
        qrels, good, weak = sources
        again = uploads.run_upload(team=team, upload=upload("bm25.run", RUN(3, 1.2, "bm25")))
        assert good.name == again.name == "bm25"
        comparison = compare_now(qrels, [good, again, weak], measures=("map",))
        page = viewer.get(f"/teams/search/comparisons/{comparison.pk}/").content.decode()
        pairs = figure(page, "figure-pairs")["data"][0]
        assert len(set(pairs["x"])) == len(pairs["x"]) == 3
        summary = page[page.index('id="mean-table"') : page.index("</table>", page.index('id="mean-table"'))]
        good_row = re.search(rf'/runs/{good.pk}/">([^<]*)</a>', summary)
        again_row = re.search(rf'/runs/{again.pk}/">([^<]*)</a>', summary)
        assert good_row and again_row and good_row[1] != again_row[1]
        assert good_row[1].startswith("bm25 (") and again_row[1].startswith("bm25 (")
        pair = comparison.pairs.get(run_a__in=[good, again], run_b__in=[good, again])
        differences = figure(
            viewer.get(f"/teams/search/comparisons/{comparison.pk}/?pair={pair.pk}").content.decode(),
            "figure-differences",
        )
        assert good_row[1] in differences["layout"]["title"]["text"]
        assert again_row[1] in differences["layout"]["title"]["text"]
        rows = rows_of(viewer.get(f"/teams/search/comparisons/{comparison.pk}/significance.csv"))
        assert all(row["run_a_label"] != row["run_b_label"] for row in rows)
        per_query = viewer.get(f"/teams/search/comparisons/{comparison.pk}/pairs/{pair.pk}.csv")
        header = next(csv.reader(io.StringIO(per_query.content.decode())))
        assert len(set(header)) == len(header) == 4

    def test_it_says_which_queries_the_means_and_the_tests_average_over(
        self, viewer: Client, sources: Any
    ) -> None:
        qrels, good, weak = sources
        comparison = compare_now(qrels, [good, weak], measures=("map",))
        page = viewer.get(f"/teams/search/comparisons/{comparison.pk}/").content.decode()
        assert "averages over the qrels queries the run answered (trec_eval&#x27;s default)" in page
        assert "2000 resamples, seed 0, as the run's evaluation and <code>compare_runs</code>" in page
        assert "compare 20 queries: the qrels queries any of the runs answered" in page
        # two runs' means, and the overlap's τ over the queries both answered
        assert page.count('<span class="key">20 q</span>') == 3

    def test_it_follows_an_unfinished_comparison(self, viewer: Client, sources: Any) -> None:
        qrels, good, weak = sources
        comparison = evaluations.comparison_create(qrels=qrels, runs=[good, weak], enqueue=False)
        page = viewer.get(f"/teams/search/comparisons/{comparison.pk}/").content.decode()
        assert (
            f'data-job-url="/teams/search/jobs/comparison/{comparison.pk}.json" data-reload-when-done' in page
        )
        assert viewer.get(f"/teams/search/comparisons/{comparison.pk}/significance.csv").status_code == 404
        assert viewer.get(f"/teams/search/comparisons/{comparison.pk}/?pair=1").status_code == 200

    def test_it_404s_an_unknown_pair(self, viewer: Client, sources: Any) -> None:
        qrels, good, weak = sources
        comparison = compare_now(qrels, [good, weak])
        assert viewer.get(f"/teams/search/comparisons/{comparison.pk}/?pair=9999").status_code == 404
        assert viewer.get(f"/teams/search/comparisons/{comparison.pk}/pairs/9999.csv").status_code == 404

    def test_it_reads_the_page_in_a_fixed_number_of_queries(
        self, viewer: Client, team: Team, sources: Any, django_assert_max_num_queries: Any
    ) -> None:
        qrels, good, weak = sources
        small = compare_now(qrels, [good, weak], measures=("map",))
        with django_assert_max_num_queries(12) as few:
            viewer.get(f"/teams/search/comparisons/{small.pk}/")
        extra = [add_sources(team)[1] for _ in range(2)]
        large = compare_now(qrels, [good, weak, *extra], measures=("map", "P_10", "ndcg_cut_10"))
        with django_assert_max_num_queries(len(few.captured_queries)):
            viewer.get(f"/teams/search/comparisons/{large.pk}/")


@pytest.mark.django_db
def test_the_demo_analyst_uploads_two_runs_and_sees_the_leaderboard_and_the_comparison(
    client: Client, queued: QueuedTasks, django_capture_on_commit_callbacks: Any
) -> None:
    """The demo walk of docs/evaluation.md (The demo's search team), with the worker's calls made here: the
    analyst downloads the demo's two runs from their pages, uploads them again through the form, evaluated
    on the team's qrels, then compares them."""
    call_command("load_demo", stdout=io.StringIO())
    logged_in(client, User.objects.get(username="analyst"))
    assert 'href="/teams/search/"' in client.get("/").content.decode()
    qrels = QrelsSource.objects.get(team__slug="search", build__version=1)  # v2 came from the judging loop
    uploaded = []
    for demo_run in Run.objects.filter(team__slug="search").order_by("pk"):
        page = client.get(f"/teams/search/runs/{demo_run.pk}/").content.decode()
        download = client.get(re.search(r'href="([^"]+)" id="run-download"', page)[1])
        text = b"".join(download.streaming_content) if download.streaming else download.content
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                "/teams/search/runs/new/",
                {"file": upload(f"{demo_run.name}-again.run", text.decode()), "name": f"{demo_run.name} again",
                 "tags": "re-upload", "evaluate_on": qrels.pk},
            )  # fmt: skip
        assert response.status_code == 302, response.content.decode()[-2000:]
        evaluation_id = queued.sent[-1][1][0]
        assert (
            evaluations.evaluation_run(evaluation_id=evaluation_id).status == "done"
        )  # what the worker does
        uploaded.append(Run.objects.get(name=f"{demo_run.name} again"))
    board = client.get(f"/teams/search/leaderboard/{qrels.pk}/").content.decode()
    assert all(f">{run.name}</a>" in board for run in uploaded) and board.count('<td class="num">') >= 4
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/teams/search/comparisons/new/",
            {"qrels": qrels.pk, "runs": [run.pk for run in uploaded], "measures": ["map", "ndcg_cut_10"],
             "test": "randomization", "correction": "holm", "alpha": "0.05", "rel_level": "1"},
        )  # fmt: skip
    comparison_id = queued.sent[-1][1][0]
    assert evaluations.comparison_run(comparison_id=comparison_id).status == "done"
    page = client.get(response["Location"]).content.decode()
    assert "significant at α = 0.05" in page.lower() and 'id="significance-table"' in page
