# ruff: noqa: F401, F811  (the fixtures of test_judging_loop, imported, are parameters here)
"""A leaderboard scored on a machine judge's labels (issue 24, points 2 and 4): the job's values against
evalcore's functions on the same files, its idempotence and staleness, the leaderboard's PPI columns (page,
CSV, API, query ceiling), who may start it, and the ranking comparison on the judge's calibration page."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotations.models import Document, MachineJudge, MachineJudgeRanking, MachineLabel, Topic
from evalcore.machine_judges import ppi_evaluate, queries_restricted, ranking_agreement
from monitoring.evaluations import services as evaluations
from monitoring.files import uploads
from monitoring.machine_judges import services
from monitoring.machine_judges.models import MachineJudgeEvaluation
from tests.conftest import QueuedTasks
from tests.monitoring.conftest import upload
from tests.monitoring.test_judging_loop import DOCS, TOPICS, carol, linked, run_text, signed_in

MEASURES = ["map", "P_5"]


def judge_create(project: Any, *, shift: int = 1) -> MachineJudge:
    """A lenient machine judge grading every document of every topic: (doc index + shift) % 3, seeded."""
    judge = MachineJudge.objects.create(project=project, name="sim", kind=MachineJudge.Kind.LLM)
    topics = {t.qid: t for t in Topic.objects.filter(project=project)}
    docs = {d.doc_id: d for d in Document.objects.filter(project=project)}
    MachineLabel.objects.bulk_create(
        [
            MachineLabel(judge=judge, topic=topics[f"q{i}"], document=docs[f"d{i}-{j}"], grade=(j + i + shift) % 3,
                         confidence=0.5 + j / 20)
            for i in range(TOPICS) for j in range(DOCS)
        ]
    )  # fmt: skip
    return judge


@pytest.fixture
def judge(linked: dict[str, Any]) -> MachineJudge:
    return judge_create(linked["project"])


def computed(linked: dict[str, Any], judge: MachineJudge, **params: Any) -> MachineJudgeEvaluation:
    job = services.machine_judge_evaluation_create(
        qrels=linked["source"], judge=judge, enqueue=False, **params
    )
    assert services.machine_judge_evaluation_run(job_id=job.pk).status == "done", (
        MachineJudgeEvaluation.objects.get(pk=job.pk).error
    )
    job.refresh_from_db()
    return job


@pytest.mark.django_db
class TestTheJob:
    def test_it_stores_evalcores_ppi_values_for_every_run_and_measure(
        self,
        linked: dict[str, Any],
        judge: MachineJudge,
    ) -> None:
        job = computed(linked, judge, sample="random", sample_size=2, seed=3)
        source = linked["source"]
        human = evaluations.read_qrels(source)
        machine = services.machine_qrels(judge)
        sample = job.human_sample
        assert len(sample["queries"]) == 2 and sample["random"] and sample["random_over_machine"]
        assert sample["machine_queries"] == TOPICS and sample["human_judged"] == TOPICS
        assert job.measures == MEASURES
        for run in linked["runs"]:
            data = evaluations.read_run(run)
            for measure in MEASURES:
                want = ppi_evaluate(data, machine, queries_restricted(human, sample["queries"]), measure)
                got = job.estimates_of(run.pk)[measure]
                for name in ("ppi", "ppi_plus_plus", "human_only", "machine_only"):
                    for field in ("estimate", "ci_low", "ci_high", "std_error"):
                        assert got[name][field] == getattr(getattr(want, name), field), (run, measure, name)
                assert got["lambda"] == want.tuning and got["human_queries"] == 2 and got["queries"] == TOPICS

    def test_it_compares_the_rankings_as_evalcore_does_and_stores_them_for_the_judge(
        self,
        linked: dict[str, Any],
        judge: MachineJudge,
    ) -> None:
        job = computed(linked, judge)
        runs = linked["runs"]
        want = ranking_agreement(
            [evaluations.read_run(run) for run in sorted(runs, key=lambda r: r.name)],
            evaluations.read_qrels(linked["source"]), services.machine_qrels(judge), measure="map",
        )  # fmt: skip
        got = job.ranking["map"]
        assert [row["human"] for row in got["runs"]] == want.human_scores.tolist()
        assert [row["machine"] for row in got["runs"]] == want.machine_scores.tolist()
        assert got["kendall_tau"] == want.kendall_tau and got["tau_ap"] == want.tau_ap
        stored = MachineJudgeRanking.objects.get(judge=judge)
        assert stored.build == linked["v1"] and stored.data["by_measure"]["map"] == got
        assert job.human_sample["random"] is False and "not chosen at random" in job.human_sample["rule"]


@pytest.mark.django_db
class TestTheLeaderboard:
    def test_it_shows_the_three_estimates_of_the_sorted_measure_beside_each_run(
        self, linked: dict[str, Any], judge: MachineJudge, vera: User
    ) -> None:
        job = computed(linked, judge)
        source = linked["source"]
        page = signed_in(vera).get(f"/teams/search/leaderboard/{source.pk}/?sort=map&judge={judge.pk}")
        html = page.content.decode()
        assert page.status_code == 200 and "Machine only" in html and 'id="ppi-table"' in html
        good = linked["runs"][0]
        ppi = job.estimates_of(good.pk)["map"]["ppi"]
        assert f"{ppi['estimate']:.4f}" in html and f"[{ppi['ci_low']:.4f}, {ppi['ci_high']:.4f}]" in html
        assert 'id="ppi-not-random"' in html and "ppi-stale" not in html
        assert 'id="ppi-form"' not in html  # vera views: no compute button

    def test_it_picks_the_judge_of_the_newest_job_and_none_on_request(
        self, linked: dict[str, Any], judge: MachineJudge, vera: User
    ) -> None:
        computed(linked, judge)
        url = f"/teams/search/leaderboard/{linked['source'].pk}/"
        assert 'id="ppi-table"' in signed_in(vera).get(url).content.decode()
        assert 'id="ppi-table"' not in signed_in(vera).get(url + "?judge=none").content.decode()

    def test_it_says_stale_once_the_judges_labels_change(
        self, linked: dict[str, Any], judge: MachineJudge, vera: User
    ) -> None:
        computed(linked, judge)
        label = MachineLabel.objects.filter(judge=judge).order_by("pk").first()
        assert label is not None
        MachineLabel.objects.filter(pk=label.pk).update(grade=(label.grade + 1) % 3)
        html = signed_in(vera).get(f"/teams/search/leaderboard/{linked['source'].pk}/?judge={judge.pk}")
        assert 'id="ppi-stale"' in html.content.decode()

    def test_its_csv_and_api_carry_every_estimate_without_nan(
        self, linked: dict[str, Any], judge: MachineJudge, vera: User
    ) -> None:
        job = computed(linked, judge)
        source, good = linked["source"], linked["runs"][0]
        client = signed_in(vera)
        response = client.get(f"/teams/search/leaderboard/{source.pk}/leaderboard.csv?judge={judge.pk}")
        rows = list(csv.DictReader(io.StringIO(response.content.decode())))
        row = next(row for row in rows if row["run_id"] == str(good.pk))
        want = job.estimates_of(good.pk)
        assert float(row["map_ppi"]) == want["map"]["ppi"]["estimate"]
        assert float(row["P_5_machine_only_ci_high"]) == want["P_5"]["machine_only"]["ci_high"]
        assert row["human_sample_random"] == "false" and row["human_queries"] == str(TOPICS)
        api = client.get(f"/api/teams/search/leaderboard/{source.pk}/?machine_judge={judge.pk}")
        body = json.loads(api.content, parse_constant=lambda name: pytest.fail(f"{name} in JSON"))
        got = next(r for r in body["rows"] if r["run"]["id"] == good.pk)["machine_judge"]
        assert got["map"]["ppi"] == want["map"]["ppi"] and body["machine_judge"]["job"]["id"] == job.pk

    def test_its_queries_do_not_grow_with_the_runs(
        self, linked: dict[str, Any], judge: MachineJudge, vera: User, theo: User
    ) -> None:
        computed(linked, judge)
        client = signed_in(vera)
        url = f"/teams/search/leaderboard/{linked['source'].pk}/?judge={judge.pk}"
        client.get(url)
        with CaptureQueriesContext(connection) as before:
            assert client.get(url).status_code == 200

        for tag in ("third", "fourth"):
            run = uploads.run_upload(team=linked["source"].team, upload=upload(f"{tag}.run", run_text([3, 2, 1, 0, 4, 5], tag)), uploaded_by=theo)  # fmt: skip
            evaluation = evaluations.evaluation_create(
                run=run, qrels=linked["source"], measures=MEASURES, enqueue=False
            )
            evaluations.evaluation_run(evaluation_id=evaluation.pk)
        computed(linked, judge)
        with CaptureQueriesContext(connection) as after:
            assert client.get(url).status_code == 200
        assert len(after) == len(before) <= 16, [q["sql"][:120] for q in after.captured_queries]


@pytest.mark.django_db
class TestTheJudgesPage:
    def test_it_shows_the_stored_ranking_comparison_with_its_numbers_and_csv(
        self, linked: dict[str, Any], judge: MachineJudge, lena: User
    ) -> None:
        client = signed_in(lena)
        url = f"/projects/web/machine-judges/{judge.pk}/"
        assert 'id="no-ranking"' in client.get(url).content.decode()
        job = computed(linked, judge)
        html = client.get(url + "?ranking_measure=P_5").content.decode()
        block = job.ranking["P_5"]
        assert 'id="ranking-table"' in html and "P_5 per run" in html
        tau = block["kendall_tau"]
        assert (f"{tau:.3f}" if tau is not None else "—") in html
        assert f"/teams/search/leaderboard/{linked['source'].pk}/?judge={judge.pk}" in html
        rows = list(csv.DictReader(io.StringIO(client.get(url + "ranking.csv").content.decode())))
        assert len(rows) == len(MEASURES) * len(linked["runs"])
        first = next(
            r
            for r in rows
            if r["measure"] == "map" and r["run_id"] == str(job.ranking["map"]["runs"][0]["run"])
        )
        assert (
            float(first["human"]) == job.ranking["map"]["runs"][0]["human"] and first["qrels_version"] == "1"
        )


@pytest.mark.django_db
class TestStartingIt:
    def test_an_editor_starts_it_once_and_the_same_state_finds_the_same_job(
        self, linked: dict[str, Any], judge: MachineJudge, theo: User, queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:  # fmt: skip
        source = linked["source"]
        client = signed_in(theo)
        url = f"/api/teams/search/leaderboard/{source.pk}/ppi/"
        body = {"machine_judge": judge.pk, "sample": "random", "sample_size": 2, "seed": 1}
        with django_capture_on_commit_callbacks(execute=True):
            first = client.post(url, body, content_type="application/json")
            again = client.post(url, body, content_type="application/json")
        assert first.status_code == again.status_code == 202 and first.json()["id"] == again.json()["id"]
        assert queued.names() == ["monitoring.tasks.machine_judge_evaluation_run"]
        state = client.get(url + f"?machine_judge={judge.pk}").json()
        assert state["job"]["id"] == first.json()["id"] and state["done"] is None
        assert state["job"]["status"] == "pending" and state["job"]["sample_size"] == 2

    def test_it_refuses_a_random_sample_without_a_size_beside_the_field(
        self, linked: dict[str, Any], judge: MachineJudge, theo: User
    ) -> None:
        source = linked["source"]
        url = f"/api/teams/search/leaderboard/{source.pk}/ppi/"
        body = {"machine_judge": judge.pk, "sample": "random"}
        answer = signed_in(theo).post(url, body, content_type="application/json")
        assert answer.status_code == 400 and "sample_size" in answer.json()
        page = signed_in(theo).post(
            f"/teams/search/leaderboard/{source.pk}/ppi/",
            {"judge": judge.pk, "sample": "random"},
            follow=True,
        )
        assert "Queries drawn: Say how many queries to draw" in page.content.decode()
        assert not MachineJudgeEvaluation.objects.exists()

    def test_a_viewer_may_not_start_it(self, linked: dict[str, Any], judge: MachineJudge, vera: User) -> None:
        url = f"/teams/search/leaderboard/{linked['source'].pk}/ppi/"
        answer = signed_in(vera).post(url, {"judge": judge.pk, "sample": "all"})
        assert answer.status_code == 403 and not MachineJudgeEvaluation.objects.exists()
