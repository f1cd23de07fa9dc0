"""Machine judges' imports in a job (issue 24): a search log's click-model judgments stored as a judge's
labels, and a large file of labels off the request. The job stores exactly what `evalcore.clicks` fits,
refuses a bad line naming the file, line and reason with nothing stored, and is idempotent."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotations.machine_judges.clicks import ClickImportParams, click_log_import
from annotations.machine_judges.imports import judge_import_run
from annotations.models import MachineJudge, MachineJudgeImport, MachineLabel, Project
from evalcore.clicks import ClickModelParams, fit, read_click_log
from evalplatform.jobs import Claim, job_claim
from tests.annotations.conftest import build_project
from tests.conftest import QueuedTasks

pytestmark = pytest.mark.django_db

API = "/api/projects/web/machine-judges/"


def click_log() -> str:
    """Sessions over q0 (by qid) and q1 (by its title, in other case and spacing), a query on no topic,
    and a document the project lacks: three ways a log meets a project."""
    rows = ["session,query,doc,position,clicked"]
    pages = [
        ("q0", ["d0-0", "d0-1", "d0-2"], [1, 0, 0]),
        ("q0", ["d0-1", "d0-0", "d0-2"], [1, 1, 0]),
        ("q0", ["d0-2", "d0-0", "d0-1"], [0, 1, 0]),
        ("q0", ["d0-0", "d0-2", "d0-1"], [1, 0, 1]),
        ("Query  Number 1 about Python", ["d1-0", "d1-1", "nope"], [0, 1, 1]),
        ("query number 1 about python", ["d1-1", "d1-0", "nope"], [1, 0, 0]),
        ("query number 1 about python", ["nope", "d1-1", "d1-0"], [1, 0, 1]),
        ("no such topic", ["d0-0", "d0-1", "d0-2"], [1, 1, 0]),
        ("no such topic", ["d0-1", "d0-0", "d0-2"], [0, 0, 1]),
    ]
    for s, (query, docs, clicks) in enumerate(pages):
        rows += [
            f"s{s},{query},{doc},{r + 1},{c}" for r, (doc, c) in enumerate(zip(docs, clicks, strict=True))
        ]
    return "\n".join(rows) + "\n"


@pytest.fixture
def project(lena: User) -> Project:
    return build_project(lead=lena, topics=3, docs_per_topic=3)


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    path = tmp_path / "clicks.csv"
    path.write_text(click_log(), encoding="utf-8")
    return path


def post_log(client: Client, data: str = "", filename: str = "clicks.csv", **fields: Any) -> Any:
    body = {"file": SimpleUploadedFile(filename, (data or click_log()).encode()), "model": "dbn", **fields}
    return client.post(f"{API}click-logs/", body)


def expected_labels(path: Path, model: str, **options: Any) -> dict[tuple[str, str], tuple[int, str]]:
    """What evalcore.clicks derives from the log with q1's spellings named by its qid, on the project's
    pairs."""
    named = path.with_name("named.csv")
    text = (
        path.read_text()
        .replace("Query  Number 1 about Python", "q1")
        .replace("query number 1 about python", "q1")
    )
    named.write_text(text)
    judgments = fit(read_click_log(named), ClickModelParams(model, **options))  # type: ignore[arg-type]
    found = {}
    for i in range(judgments.pair_query.size):
        query = judgments.queries[int(judgments.pair_query[i])]
        doc = judgments.docs[int(judgments.pair_doc[i])]
        if judgments.grade[i] < 0 or query not in ("q0", "q1") or doc == "nope":
            continue
        rationale = (
            f"{model} relevance {judgments.relevance[i]:.4f}: {judgments.clicks[i]} clicks in "
            f"{judgments.impressions[i]} impressions"
        )
        found[(query, doc)] = (int(judgments.grade[i]), rationale)
    return found


def stored(judge: MachineJudge) -> dict[tuple[str, str], tuple[int, str]]:
    rows = MachineLabel.objects.filter(judge=judge).values_list(
        "topic__qid", "document__doc_id", "grade", "rationale", "confidence"
    )
    assert {row[4] for row in rows} == {None}  # a click model gives no confidence
    return {(q, d): (g, r) for q, d, g, r, _ in rows}


class TestTheJob:
    @pytest.mark.parametrize("model", ["coec", "pbm", "dbn"])
    def test_it_stores_exactly_what_evalcore_clicks_derives(
        self, lead_client: Client, project: Project, log_path: Path, queued: QueuedTasks, model: str
    ) -> None:
        response = post_log(lead_client, model=model, min_impressions=2)
        assert response.status_code == 202, response.content
        job = response.json()
        assert (job["status"], job["source"], job["judge"]) == ("pending", "click_log", None)
        assert judge_import_run(job_id=job["id"]).status == "done"
        done = lead_client.get(job["url"]).json()
        judge = MachineJudge.objects.get(pk=done["judge"])
        assert (judge.name, judge.version, judge.kind, judge.model) == (
            f"clicks-{model}",
            "1",
            "click_model",
            model,
        )
        want = expected_labels(log_path, model, min_impressions=2)
        assert len(want) >= 4 and stored(judge) == want
        # Pairs on no topic, or on a document the project lacks, are counted and left out.
        assert done["result"]["created"] == len(want) and done["result"]["missing_document"] == 1
        assert done["result"]["log"]["unknown_queries"] == 3

    def test_it_keeps_the_model_its_parameters_the_mapping_and_the_log_as_metadata(
        self, lead_client: Client, project: Project, queued: QueuedTasks
    ) -> None:
        response = post_log(
            lead_client, model="pbm", name="shop", version="7", min_impressions=3, thresholds=[0.2, 0.4, 0.6, 0.8],
            grade_map=[0, 0, 1, 2, 4], min_dwell=5, max_iterations=50,
        )  # fmt: skip
        assert judge_import_run(job_id=response.json()["id"]).status == "done", (
            MachineJudgeImport.objects.get().error
        )
        judge = MachineJudge.objects.get(name="shop", version="7")
        config = json.loads(judge.configuration)
        assert config["click_model"] == "pbm" and config["thresholds"] == [0.2, 0.4, 0.6, 0.8]
        assert config["grade_map"] == {"0": 0, "1": 0, "2": 1, "3": 2, "4": 4}
        assert (config["min_impressions"], config["min_dwell"], config["max_iterations"]) == (3, 5.0, 50)
        assert config["log"] == {
            "file": "clicks.csv", "size": len(click_log().encode()), "format": "csv", "rows": 27, "sessions": 9,
            "pairs": 9,
        }  # fmt: skip
        assert set(config["fit"]) == {"iterations", "converged", "positions"}

    def test_the_grade_mapping_sends_click_grades_onto_the_projects_scale(
        self, lead_client: Client, project: Project, log_path: Path, queued: QueuedTasks
    ) -> None:
        response = post_log(lead_client, model="coec", min_impressions=1, grade_map=[0, 0, 1, 1, 3])
        assert judge_import_run(job_id=response.json()["id"]).status == "done"
        mapping = [0, 0, 1, 1, 3]
        want = {
            pair: mapping[g] for pair, (g, _) in expected_labels(log_path, "coec", min_impressions=1).items()
        }
        got = {pair: g for pair, (g, _) in stored(MachineJudge.objects.get()).items()}
        assert got == want and len(set(want.values())) > 1

    def test_a_bad_line_fails_the_job_naming_the_file_line_and_reason_and_stores_nothing(
        self, lead_client: Client, project: Project, queued: QueuedTasks
    ) -> None:
        bad = click_log().replace("s1,q0,d0-0,2,1", "s1,q0,d0-0,0,1")
        job = post_log(lead_client, bad, filename="bad.csv").json()
        assert judge_import_run(job_id=job["id"]).status == "failed"
        body = lead_client.get(job["url"]).json()
        assert body["error"].startswith("bad.csv:6: ") and "position" in body["error"]
        assert (body["result"], body["judge"]) == (None, None)
        assert not MachineJudge.objects.exists() and not MachineLabel.objects.exists()
        assert not MachineJudgeImport.objects.get().file.storage.exists(
            MachineJudgeImport.objects.get().file.name
        )

    def test_the_same_log_again_changes_nothing_and_other_settings_need_a_new_version(
        self, lead_client: Client, project: Project, queued: QueuedTasks
    ) -> None:
        first = post_log(lead_client, min_impressions=2).json()
        assert judge_import_run(job_id=first["id"]).status == "done"
        before = list(MachineLabel.objects.order_by("pk").values())
        again = post_log(lead_client, min_impressions=2).json()
        assert judge_import_run(job_id=again["id"]).status == "done"
        result = lead_client.get(again["url"]).json()["result"]
        assert (result["judge_created"], result["created"], result["updated"], result["unchanged"]) == (
            False, 0, 0, len(before),
        )  # fmt: skip
        assert list(MachineLabel.objects.order_by("pk").values()) == before
        other = post_log(lead_client, min_impressions=3).json()
        assert judge_import_run(job_id=other["id"]).status == "failed"
        assert "give a new version" in lead_client.get(other["url"]).json()["error"]
        newer = post_log(lead_client, min_impressions=3, version="2").json()
        assert judge_import_run(job_id=newer["id"]).status == "done"
        assert (
            MachineJudge.objects.count() == 2
            and list(MachineLabel.objects.filter(judge__version="1").order_by("pk").values()) == before
        )

    def test_it_is_redone_once_after_a_lost_worker_and_never_twice(
        self, lead_client: Client, project: Project, queued: QueuedTasks
    ) -> None:
        job_id = post_log(lead_client, min_impressions=2).json()["id"]
        assert isinstance(job_claim(MachineJudgeImport, pk=job_id), Claim)  # a worker took it and died
        later = timezone.now() + timedelta(hours=1)
        assert judge_import_run(job_id=job_id, now=later).status == "done"
        assert judge_import_run(job_id=job_id, now=later).status == "finished"
        job = MachineJudgeImport.objects.get(pk=job_id)
        assert (job.status, job.attempts) == ("done", 2) and job.result[
            "created"
        ] == MachineLabel.objects.count()

    def test_it_refuses_a_grade_mapping_off_the_scale_before_any_job(
        self, lead_client: Client, project: Project, queued: QueuedTasks
    ) -> None:
        response = post_log(lead_client, grade_map=[0, 1, 2, 3, 9])
        assert response.status_code == 400 and "scale" in response.json()["grade_map"][0]
        assert post_log(lead_client, thresholds=[0.5, 0.4, 0.6, 0.7]).status_code == 400
        assert not MachineJudgeImport.objects.exists() and queued.sent == []


class TestTheWeb:
    def test_the_form_shows_the_defaults_and_queues_a_job_the_next_page_follows(
        self,
        lead_client: Client,
        project: Project,
        queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:
        url = f"/projects/{project.slug}/machine-judges/click-log/"
        page = lead_client.get(url).content.decode()
        assert 'value="0,1,2,3,4"' in page and "dbn 0.1,0.3,0.5,0.7" in page and "coec 0.5,1,1.5,2.5" in page
        form = {
            "file": SimpleUploadedFile("clicks.csv", click_log().encode()), "log_format": "csv", "model": "pbm",
            "name": "", "version": "1", "min_impressions": 2, "thresholds": "", "grade_map": "0,1,2,3,4",
        }  # fmt: skip
        with django_capture_on_commit_callbacks(execute=True):
            response = lead_client.post(url, form)
        job = MachineJudgeImport.objects.get()
        assert response.status_code == 302 and response["Location"] == job.get_absolute_url()
        assert queued.names() == ["annotations.tasks.machine_judge_import"]
        assert 'http-equiv="refresh"' in lead_client.get(response["Location"]).content.decode()
        assert judge_import_run(job_id=job.pk).status == "done"
        page = lead_client.get(response["Location"]).content.decode()
        assert (
            "clicks-pbm v1" in page
            and 'id="click-log-figures"' in page
            and 'http-equiv="refresh"' not in page
        )
        listing = lead_client.get(f"/projects/{project.slug}/machine-judges/").content.decode()
        assert "clicks.csv" in listing and "clicks-pbm" in listing

    def test_a_bad_mapping_is_named_beside_its_field(self, lead_client: Client, project: Project) -> None:
        form = {
            "file": SimpleUploadedFile("clicks.csv", b"x"), "log_format": "csv", "model": "dbn", "version": "1",
            "min_impressions": 10, "grade_map": "0,1,2,3",
        }  # fmt: skip
        response = lead_client.post(f"/projects/{project.slug}/machine-judges/click-log/", form)
        assert response.status_code == 400 and "Give five grades" in response.content.decode()
        assert not MachineJudgeImport.objects.exists()

    def test_others_cannot_see_a_projects_imports(
        self, client: Client, lead_client: Client, alice: User, project: Project, queued: QueuedTasks
    ) -> None:
        job_id = post_log(lead_client).json()["id"]
        client.force_login(alice)
        assert client.get(f"{API}import-jobs/{job_id}/").status_code == 404
        assert client.get(f"/projects/web/machine-judges/import-jobs/{job_id}/").status_code == 404
        assert post_log(client).status_code == 404

    def test_the_judges_page_reads_its_imports_in_a_fixed_number_of_queries(
        self, lead_client: Client, project: Project, queued: QueuedTasks
    ) -> None:
        url = f"/projects/{project.slug}/machine-judges/"

        def count() -> int:
            with CaptureQueriesContext(connection) as queries:
                assert lead_client.get(url).status_code == 200
            return len(queries)

        post_log(lead_client)
        one = count()
        for _ in range(3):
            post_log(lead_client)
        assert count() == one <= 12


class TestLargeLabels:
    @pytest.fixture(autouse=True)
    def small_threshold(self, settings: Any) -> None:
        settings.IMPORT_SYNC_MAX_BYTES = 50

    def labels(self) -> bytes:
        return "".join(f"q{i} 0 d{i}-{j} {j}\n" for i in range(3) for j in range(3)).encode()

    def test_a_large_file_of_labels_is_imported_by_a_job_atomically_and_idempotently(
        self, lead_client: Client, project: Project, queued: QueuedTasks
    ) -> None:
        upload = {"file": SimpleUploadedFile("m.qrels", self.labels()), "name": "gpt", "kind": "llm"}
        response = lead_client.post(API, upload)
        assert response.status_code == 202 and response.json()["source"] == "labels"
        assert not MachineLabel.objects.exists()
        assert judge_import_run(job_id=response.json()["id"]).status == "done"
        body = lead_client.get(response.json()["url"]).json()
        assert (body["result"]["created"], body["result"]["pairs"]) == (9, 9)
        judge = MachineJudge.objects.get(pk=body["judge"])
        assert (judge.kind, sorted(judge.labels.values_list("grade", flat=True))) == (
            "llm",
            [0, 0, 0, 1, 1, 1, 2, 2, 2],
        )
        again = lead_client.post(API, {"file": SimpleUploadedFile("m.qrels", self.labels()), "name": "gpt"})
        assert judge_import_run(job_id=again.json()["id"]).status == "done"
        assert lead_client.get(again.json()["url"]).json()["result"]["unchanged"] == 9

    def test_a_bad_line_in_a_large_file_stores_nothing_and_says_where(
        self, lead_client: Client, project: Project, queued: QueuedTasks
    ) -> None:
        data = self.labels() + b"q0 0 d0-0 x\n"
        response = lead_client.post(API, {"file": SimpleUploadedFile("m.qrels", data), "name": "gpt"})
        assert judge_import_run(job_id=response.json()["id"]).status == "failed"
        assert lead_client.get(response.json()["url"]).json()["error"].startswith("m.qrels:10: ")
        assert not MachineJudge.objects.exists()

    def test_the_web_form_follows_the_job(
        self, lead_client: Client, project: Project, queued: QueuedTasks
    ) -> None:
        form = {
            "file": SimpleUploadedFile("m.qrels", self.labels()),
            "name": "gpt",
            "version": "1",
            "kind": "llm",
        }
        response = lead_client.post(f"/projects/{project.slug}/machine-judges/", form)
        job = MachineJudgeImport.objects.get()
        assert response.status_code == 302 and response["Location"] == job.get_absolute_url()


class TestTheCommand:
    def test_it_stores_the_judge_and_prints_json(self, project: Project, log_path: Path) -> None:
        out = StringIO()
        call_command(
            "import_click_log", "--project", "web", "--log", str(log_path), "--model", "dbn", "--judge", "logs",
            "--min-impressions", "2", "--json", stdout=out,
        )  # fmt: skip
        body = json.loads(out.getvalue())
        judge = MachineJudge.objects.get(pk=body["judge"])
        assert (judge.name, judge.kind, body["created"]) == ("logs", "click_model", len(stored(judge)))
        assert stored(judge) == expected_labels(log_path, "dbn", min_impressions=2)
        assert body["log"]["rows"] == 27

    def test_it_refuses_a_bad_line_and_stores_nothing(self, project: Project, tmp_path: Path) -> None:
        path = tmp_path / "bad.csv"
        path.write_text("session,query,doc,position,clicked\ns1,q0,d0-0,1,maybe\n")
        out = StringIO()
        with pytest.raises(CommandError, match="nothing was imported"):
            call_command(
                "import_click_log",
                "--project",
                "web",
                "--log",
                str(path),
                "--model",
                "coec",
                "--json",
                stdout=out,
            )
        assert json.loads(out.getvalue())["error"]["line"] == 2
        assert not MachineJudge.objects.exists()

    def test_the_demo_path_is_idempotent(self, project: Project, log_path: Path) -> None:
        params = ClickImportParams(model="coec", min_impressions=1)
        first, _ = click_log_import(project=project, path=log_path, params=params)
        again, _ = click_log_import(project=project, path=log_path, params=params)
        assert first.created > 0 and (again.created, again.updated, again.unchanged) == (0, 0, first.created)


def test_the_demo_click_judge_agrees_with_people_and_loads_once(demo: Project) -> None:
    from annotations.demo import DEMO_CLICK_JUDGE, demo_annotations_simulate, demo_click_judge_load
    from annotations.machine_judges import services
    from tests.annotations.test_machine_judges import human_build

    demo_annotations_simulate(demo)
    human_build(demo)
    judge = demo_click_judge_load(demo)
    assert (judge.name, judge.kind, judge.model) == (DEMO_CLICK_JUDGE, "click_model", "dbn")
    assert json.loads(judge.configuration)["log"]["file"] == "python-help-clicks.csv"
    figures = services.judge_calibration(judge)
    assert figures["labels"] > 50 and figures["with_confidence"] == 0
    assert figures["consensus"]["pairs"] > 20 and figures["consensus"]["cohen_kappa_quadratic"] > 0.8
    labels = list(MachineLabel.objects.filter(judge=judge).order_by("pk").values())
    demo_click_judge_load(demo)  # loading the demo again changes nothing
    assert list(MachineLabel.objects.filter(judge=judge).order_by("pk").values()) == labels
