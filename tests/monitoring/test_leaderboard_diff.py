"""The leaderboard diff between two qrels sources of a team (issue 23): the service's scores, ranks and
rank correlations against scipy and a direct loop over tau_ap's definition; the page, its CSV, the API and
`manage.py leaderboard_diff`."""

from __future__ import annotations

import csv
import io
import json
from io import StringIO
from typing import Any

import pytest
import scipy.stats
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from evalplatform.models import Team
from monitoring.evaluations.diffs import leaderboard_diff
from monitoring.models import QrelsSource, Run
from tests.monitoring import test_judging_loop
from tests.monitoring.test_pages import stored_evaluation

# The linked judging project and its versions, shared with the loop's tests.
linked, carol, build_version = (
    test_judging_loop.linked,
    test_judging_loop.carol,
    test_judging_loop.build_version,
)

#: map on the old and the new qrels per run: "c" and "d" swap at the top, "e" ties "b" on the old ones,
#: "f" is on the new board only.
OLD = {"a": 0.30, "b": 0.25, "c": 0.50, "d": 0.45, "e": 0.25}
NEW = {"a": 0.32, "b": 0.20, "c": 0.40, "d": 0.52, "e": 0.26, "f": 0.10}


@pytest.fixture
def boards(team: Team) -> dict[str, Any]:
    old = QrelsSource.objects.create(team=team, name="v-old", kind="upload", file="qrels/old.qrels")
    new = QrelsSource.objects.create(team=team, name="v-new", kind="upload", file="qrels/new.qrels")
    runs = {name: Run.objects.create(team=team, name=name, file=f"runs/{name}.run") for name in NEW}
    for name, run in runs.items():
        if name in OLD:
            stored_evaluation(run, old, {"map": OLD[name], "P_10": 0.1})
        stored_evaluation(run, new, {"map": NEW[name], "P_10": 0.1 + 0.01 * len(name)})
    return {"old": old, "new": new, "runs": runs}


def tau_ap_loop(truth: list[float], estimate: list[float]) -> float:
    """Yilmaz, Aslam and Robertson (2008), eq. 3, without ties: over the estimate's ranking, for each system
    below the first, the share of the systems above it that the truth also ranks above it."""
    n = len(truth)
    order = sorted(range(n), key=lambda i: -estimate[i])
    total = 0.0
    for position in range(1, n):
        system = order[position]
        above = order[:position]
        total += sum(1 for other in above if truth[other] > truth[system]) / position
    return 2.0 * total / (n - 1) - 1.0


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
class TestDiff:
    def test_it_pairs_each_runs_old_and_new_scores_with_their_cis_and_the_change(
        self, boards: dict[str, Any]
    ) -> None:
        diff = leaderboard_diff(old=boards["old"], new=boards["new"], measures=["map"])
        rows = {row.run.name: row for row in diff.measures[0].rows}
        for name in NEW:
            assert rows[name].new.value == NEW[name] and rows[name].new.ci_low == pytest.approx(
                NEW[name] - 0.1
            )
            if name in OLD:
                assert rows[name].change == pytest.approx(NEW[name] - OLD[name])
        assert rows["f"].old is None and rows["f"].change is None and rows["f"].old_rank is None

    def test_it_ranks_by_competition_ranks_and_orders_rows_by_the_new_rank(
        self, boards: dict[str, Any]
    ) -> None:
        measure = leaderboard_diff(old=boards["old"], new=boards["new"], measures=["map"]).measures[0]
        for row in measure.rows:
            name = row.run.name
            if name in OLD:
                assert row.old_rank == 1 + sum(1 for other in OLD.values() if other > OLD[name])
            assert row.new_rank == 1 + sum(1 for other in NEW.values() if other > NEW[name])
            assert row.rank_change == (None if name not in OLD else row.old_rank - row.new_rank)
        assert [row.run.name for row in measure.rows] == sorted(NEW, key=lambda name: -NEW[name])
        ranks = {row.run.name: (row.old_rank, row.new_rank) for row in measure.rows}
        assert ranks["b"] == (4, 5) and ranks["e"] == (4, 4)  # b and e tie for 4th on the old qrels

    def test_its_kendall_tau_is_scipys_tau_b_and_its_tau_ap_the_definitions(
        self, boards: dict[str, Any]
    ) -> None:
        measure = leaderboard_diff(old=boards["old"], new=boards["new"], measures=["map"]).measures[0]
        both = sorted(OLD)  # f has no old score
        old, new = [OLD[n] for n in both], [NEW[n] for n in both]
        assert measure.runs_compared == 5
        assert measure.kendall_tau == pytest.approx(scipy.stats.kendalltau(old, new).statistic, abs=1e-12)
        assert measure.tau_ap == pytest.approx(
            tau_ap_loop(new, old), abs=1e-12
        )  # the new ranking is the truth
        assert -1 < measure.tau_ap < measure.kendall_tau < 1  # the swap at the top costs tau_ap more

    def test_it_offers_the_measures_on_both_boards_then_coverage_and_refuses_others(
        self, boards: dict[str, Any]
    ) -> None:
        diff = leaderboard_diff(old=boards["old"], new=boards["new"])
        assert [m.measure for m in diff.measures] == ["map", "P_10", "Judged@10", "Judged@100"]
        coverage = diff.measures[2]  # these stored evaluations predate coverage: nothing to correlate
        assert coverage.runs_compared == 0 and coverage.kendall_tau is None and coverage.tau_ap is None
        with pytest.raises(Exception, match="not on both leaderboards"):
            leaderboard_diff(old=boards["old"], new=boards["new"], measures=["ndcg"])

    def test_it_reads_each_board_in_a_few_queries(
        self, boards: dict[str, Any], django_assert_max_num_queries: Any
    ) -> None:
        with django_assert_max_num_queries(8):
            leaderboard_diff(old=boards["old"], new=boards["new"])

    def test_the_new_version_compares_with_the_one_before_by_default(
        self,
        linked: dict[str, Any],
        carol: User,
        theo: User,
        team: Team,
    ) -> None:
        from annotations.models import Task
        from monitoring.evaluations import loop

        project = linked["project"]
        v2 = build_version(project, carol, list(Task.objects.filter(project=project)))
        evaluations = loop.qrels_build_rescore(build_id=v2.pk)
        from monitoring.evaluations import services

        for evaluation in evaluations:
            services.evaluation_run(evaluation_id=evaluation.pk)
        v2_source = QrelsSource.objects.get(build=v2)
        client = signed_in(theo)
        board = client.get(f"/teams/search/leaderboard/{v2_source.pk}/").content.decode()
        assert "Compare with previous version (web v1)" in board
        team_page = client.get("/teams/search/").content.decode()
        assert (
            f'/teams/search/leaderboard/{v2_source.pk}/diff/">compare with previous version</a>' in team_page
        )
        page = client.get(f"/teams/search/leaderboard/{v2_source.pk}/diff/").content.decode()
        assert "web v1 → web v2" in page and 'id="tau-table"' in page
        body = client.get(f"/api/teams/search/leaderboard/{v2_source.pk}/diff/?measure=Judged@10").json()
        judged = body["measures"][0]
        assert body["from"]["id"] == linked["source"].pk and judged["measure"] == "Judged@10"
        # Both runs rank d-3 in their top 10: judged on v2, not on v1.
        assert [row["old"]["value"] for row in judged["rows"]] == pytest.approx([3 / 7, 3 / 7])
        assert [row["new"]["value"] for row in judged["rows"]] == pytest.approx([4 / 7, 4 / 7])


@pytest.mark.django_db
class TestDiffPages:
    def test_the_page_shows_the_tables_the_taus_and_a_chart_with_its_numbers(
        self, boards: dict[str, Any], theo: User
    ) -> None:
        old, new = boards["old"], boards["new"]
        response = signed_in(theo).get(f"/teams/search/leaderboard/{new.pk}/diff/?from={old.pk}")
        page = response.content.decode()
        measure = leaderboard_diff(old=old, new=new, measures=["map"]).measures[0]
        assert response.status_code == 200 and "v-old → v-new" in page
        assert f"{measure.kendall_tau:.4f}" in page and f"{measure.tau_ap:.4f}" in page
        assert 'id="figure-diff"' in page and 'id="chart-numbers"' in page and "▲1" in page

    def test_a_source_without_an_earlier_version_asks_which_to_compare_with(
        self, boards: dict[str, Any], theo: User
    ) -> None:
        page = signed_in(theo).get(f"/teams/search/leaderboard/{boards['new'].pk}/diff/").content.decode()
        assert 'id="no-previous"' in page and "v-old</option>" in page
        api = signed_in(theo).get(f"/api/teams/search/leaderboard/{boards['new'].pk}/diff/")
        assert api.status_code == 200 and api.json() == {"from": None, "to": {"id": boards["new"].pk, "name": "v-new"},
                                                         "measures": []}  # fmt: skip

    def test_the_csv_has_a_row_per_measure_and_run(self, boards: dict[str, Any], theo: User) -> None:
        old, new = boards["old"], boards["new"]
        response = signed_in(theo).get(f"/teams/search/leaderboard/{new.pk}/diff.csv?from={old.pk}")
        rows = list(csv.DictReader(io.StringIO(response.content.decode())))
        assert len(rows) == 4 * len(NEW)
        c = next(row for row in rows if row["measure"] == "map" and row["run"] == "c")
        assert float(c["old"]) == 0.5 and float(c["new"]) == 0.4 and c["rank_change"] == "-1"
        assert float(c["kendall_tau"]) == pytest.approx(scipy.stats.kendalltau(
            [OLD[n] for n in sorted(OLD)], [NEW[n] for n in sorted(OLD)]).statistic)  # fmt: skip

    def test_the_api_answers_the_services_diff_and_refuses_an_unknown_measure(
        self, boards: dict[str, Any], vera: User
    ) -> None:
        old, new = boards["old"], boards["new"]
        url = f"/api/teams/search/leaderboard/{new.pk}/diff/?from={old.pk}"
        body = signed_in(vera).get(url + "&measure=map").json()
        assert body == json.loads(json.dumps(leaderboard_diff(old=old, new=new, measures=["map"]).as_dict()))
        assert signed_in(vera).get(url + "&measure=ndcg").status_code == 400

    def test_another_teams_source_is_not_found(
        self, boards: dict[str, Any], other_team: Team, otto: User
    ) -> None:
        theirs = QrelsSource.objects.create(team=other_team, name="x", kind="upload", file="qrels/x.qrels")
        response = signed_in(otto).get(f"/teams/fraud/leaderboard/{theirs.pk}/diff/?from={boards['old'].pk}")
        assert response.status_code == 404


@pytest.mark.django_db
class TestCommand:
    def test_it_prints_the_services_diff_as_json(self, boards: dict[str, Any]) -> None:
        out = StringIO()
        call_command("leaderboard_diff", "--team", "search", "--from", str(boards["old"].pk), "--to", "v-new",
                     "-m", "map", "--json", stdout=out)  # fmt: skip
        data = json.loads(out.getvalue())
        assert data == json.loads(
            json.dumps(leaderboard_diff(old=boards["old"], new=boards["new"], measures=["map"]).as_dict())
        )

    def test_it_prints_a_table_per_measure(self, boards: dict[str, Any]) -> None:
        out = StringIO()
        call_command("leaderboard_diff", "--team", "search", "--from", "v-old", "--to", "v-new", stdout=out)
        text = out.getvalue()
        tau = scipy.stats.kendalltau([OLD[n] for n in sorted(OLD)], [NEW[n] for n in sorted(OLD)]).statistic
        assert text.startswith("Leaderboard diff v-old -> v-new") and f"map: Kendall's tau {tau:.4f}" in text
        assert "Judged@10: Kendall's tau -, tau_ap - over 0 runs" in text

    def test_it_refuses_an_unknown_team_source_or_measure(self, boards: dict[str, Any]) -> None:
        with pytest.raises(CommandError, match="no team"):
            call_command("leaderboard_diff", "--team", "nope", "--from", "1", "--to", "2")
        with pytest.raises(CommandError, match="no qrels source 'v9'"):
            call_command("leaderboard_diff", "--team", "search", "--from", "v9", "--to", "v-new")
        with pytest.raises(CommandError, match="not on both"):
            call_command(
                "leaderboard_diff", "--team", "search", "--from", "v-old", "--to", "v-new", "-m", "ndcg"
            )

    def test_it_has_help(self) -> None:
        from django.core.management import load_command_class

        parser = load_command_class("monitoring", "leaderboard_diff").create_parser(
            "manage.py", "leaderboard_diff"
        )
        text = parser.format_help()
        assert "--from QRELS" in text and "--to QRELS" in text and "--json" in text and "tau_ap" in text
