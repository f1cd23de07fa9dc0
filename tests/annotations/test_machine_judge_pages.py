"""Machine judges through the web, the API and the command (issue 24)."""

from __future__ import annotations

import csv
import io
import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client

from annotations import qrels
from annotations.machine_judges import services
from annotations.models import MachineJudge, MachineLabel, MachineRouting, Project, QrelsBuild, Task
from tests.annotations.conftest import build_project, record_answers

pytestmark = pytest.mark.django_db

LABELS = "".join(
    json.dumps({"qid": f"q{i}", "doc_id": f"d{i}-{j}", "label": (i + j) % 4, "confidence": 0.1 + 0.15 * j})
    + "\n"
    for i in range(2)
    for j in range(5)
)


@pytest.fixture
def project(lena: User, alice: User) -> Project:
    project = build_project(
        lead=lena,
        annotators=[alice],
        topics=2,
        docs_per_topic=5,
        gold_per_topic=2,
        min_gold_items=0,
        min_gold_accuracy=0.0,
    )
    record_answers(project, [(alice, task, 2) for task in Task.objects.filter(project=project)])
    build = qrels.qrels_build_create(project=project, created_by=None, enqueue=False, min_labels=1)
    qrels.qrels_build_run(build_id=build.pk)
    return project


def upload(text: str = LABELS, name: str = "judge.jsonl") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="application/x-ndjson")


class TestPages:
    def test_it_uploads_labels_and_shows_the_calibration(self, lead_client: Client, project: Project) -> None:
        response = lead_client.post(
            f"/projects/{project.slug}/machine-judges/",
            {"file": upload(), "name": "gpt", "version": "1", "kind": "llm", "model": "gpt-4o"},
        )
        judge = MachineJudge.objects.get(project=project)
        assert response.status_code == 302 and response["Location"] == judge.get_absolute_url()
        page = lead_client.get(judge.get_absolute_url())
        assert page.status_code == 200
        html = page.content.decode()
        expected = services.judge_calibration(judge)
        assert expected["gold"]["pairs"] == 4 and expected["consensus"]["pairs"] == 10
        for block in ("consensus", "gold"):
            assert f'id="calibration-{block}"' in html and f'id="{block}-confusion-table"' in html
        assert 'id="consensus-confusion"' in html  # the figure's json_script

    def test_it_names_the_bad_line_and_imports_nothing(self, lead_client: Client, project: Project) -> None:
        bad = LABELS + '{"qid": "q0", "doc_id": "d0-9", "label": 1, "confidence": 3}\n'
        response = lead_client.post(
            f"/projects/{project.slug}/machine-judges/",
            {"file": upload(bad), "name": "gpt", "version": "1", "kind": "llm"},
        )
        assert response.status_code == 400
        assert "judge.jsonl</code>, line 11" in response.content.decode()
        assert not MachineJudge.objects.exists()

    def test_it_downloads_each_table_as_csv(
        self, lead_client: Client, project: Project, tmp_path: Path
    ) -> None:
        judge = self.judge(project, tmp_path)
        block = services.judge_calibration(judge)["consensus"]
        response = lead_client.get(
            f"/projects/{project.slug}/machine-judges/{judge.pk}/calibration.csv?table=topics"
        )
        rows = list(csv.reader(io.StringIO(response.content.decode())))
        assert rows[0][0] == "topic" and [r[0] for r in rows[1:]] == [t["topic"] for t in block["per_topic"]]
        confusion = lead_client.get(
            f"/projects/{project.slug}/machine-judges/{judge.pk}/calibration.csv?table=confusion"
        )
        body = list(csv.reader(io.StringIO(confusion.content.decode())))
        assert [[int(c) for c in row[1:]] for row in body[1:]] == block["confusion"]

    def test_it_routes_and_lists_the_routed_pairs(
        self, lead_client: Client, project: Project, tmp_path: Path
    ) -> None:
        judge = self.judge(project, tmp_path)
        form = {
            "budget": 3,
            "confidence_below": 0.5,
            "topic_agreement_below": 0.0,
            "sample_share": 0.0,
            "seed": 0,
        }
        response = lead_client.post(f"/projects/{project.slug}/machine-judges/{judge.pk}/route/", form)
        assert response.status_code == 302
        assert MachineRouting.objects.filter(judge=judge).count() == 3
        page = lead_client.get(judge.get_absolute_url()).content.decode()
        assert 'id="routed-table"' in page and "3 pairs routed" in page

    def test_it_keeps_annotators_out(
        self, client: Client, alice: User, project: Project, tmp_path: Path
    ) -> None:
        judge = self.judge(project, tmp_path)
        client.force_login(alice)
        assert client.get(f"/projects/{project.slug}/machine-judges/").status_code == 403
        assert client.get(judge.get_absolute_url()).status_code == 403
        assert "machine" not in client.get(f"/projects/{project.slug}/judge/").content.decode().lower()

    def test_it_builds_qrels_from_both_sources_on_the_quality_page(
        self, lead_client: Client, project: Project, tmp_path: Path
    ) -> None:
        judge = self.judge(project, tmp_path)
        form = {"aggregation": "mean", "tolerance": 1, "min_labels": 1, "min_accuracy": 0, "min_gold": 0,
                "sources": "both", "machine_judge": judge.pk}  # fmt: skip
        assert lead_client.post(f"/projects/{project.slug}/qrels/", form).status_code == 302
        build = QrelsBuild.objects.filter(project=project).latest("version")
        assert (build.sources, build.machine_judge_id) == ("both", judge.pk)
        refused = {**form, "sources": "machine", "machine_judge": ""}
        lead_client.post(f"/projects/{project.slug}/qrels/", refused)
        assert QrelsBuild.objects.filter(project=project).count() == 2  # the refused form made no build

    @staticmethod
    def judge(project: Project, tmp_path: Path) -> MachineJudge:
        path = tmp_path / "judge.jsonl"
        path.write_text(LABELS)
        result = services.judge_labels_import(project=project, name="gpt", path=path)
        return MachineJudge.objects.select_related("project").get(pk=result.judge)


class TestApi:
    def test_it_uploads_lists_calibrates_and_routes(self, lead_client: Client, project: Project) -> None:
        base = f"/api/projects/{project.slug}/machine-judges/"
        created = lead_client.post(base, {"file": upload(), "name": "gpt", "kind": "llm"})
        assert created.status_code == 201 and created.json()["created"] == 10
        again = lead_client.post(base, {"file": upload(), "name": "gpt", "kind": "llm"})
        assert again.json()["unchanged"] == 10 and MachineLabel.objects.count() == 10
        listed = lead_client.get(base).json()
        assert [(j["name"], j["labels"]) for j in listed] == [("gpt", 10)]
        judge = MachineJudge.objects.get()
        calibration = lead_client.get(f"{base}{judge.pk}/").json()
        assert calibration == json.loads(json.dumps(services.judge_calibration(judge)))
        routed = lead_client.post(
            f"{base}{judge.pk}/route/", {"budget": 2, "sample_share": 0}, content_type="application/json"
        )
        assert routed.status_code == 200 and sum(routed.json()["routed"].values()) == 2
        assert len(lead_client.get(f"{base}{judge.pk}/routed/").json()) == 2

    def test_it_answers_a_bad_line_with_file_line_and_reason(
        self, lead_client: Client, project: Project
    ) -> None:
        response = lead_client.post(
            f"/api/projects/{project.slug}/machine-judges/",
            {"file": upload('{"qid": "q0", "doc_id": "d0-0", "lable": 1}\n'), "name": "gpt"},
        )
        body = response.json()
        assert response.status_code == 400 and (body["file"], body["line"]) == ("judge.jsonl", 1)
        assert not MachineJudge.objects.exists()

    def test_it_builds_qrels_from_the_machine(
        self, lead_client: Client, project: Project, tmp_path: Path
    ) -> None:
        judge = TestPages.judge(project, tmp_path)
        response = lead_client.post(
            f"/api/projects/{project.slug}/qrels/", {"sources": "machine", "machine_judge": judge.pk},
            content_type="application/json",
        )  # fmt: skip
        assert response.status_code in (202, 503)
        build = QrelsBuild.objects.filter(project=project).latest("version")
        assert response.json()["sources"] == "machine" and build.machine_judge_id == judge.pk
        missing = lead_client.post(
            f"/api/projects/{project.slug}/qrels/", {"sources": "machine"}, content_type="application/json"
        )
        assert missing.status_code == 400


class TestCommand:
    def run(self, *args: str) -> dict[str, Any]:
        out = StringIO()
        call_command("import_machine_labels", *args, "--json", stdout=out, stderr=StringIO())
        return json.loads(out.getvalue())  # type: ignore[no-any-return]

    def test_it_imports_idempotently_and_routes(self, project: Project, tmp_path: Path) -> None:
        path = tmp_path / "judge.jsonl"
        path.write_text(LABELS + '{"qid": "q9", "doc_id": "d0-0", "label": 1}\n')
        first = self.run(
            str(path), "--project", project.slug, "--judge", "gpt", "--kind", "llm", "--model", "m"
        )
        assert (first["created"], first["missing_topic"]) == (10, 1)
        second = self.run(str(path), "--project", project.slug, "--judge", "gpt", "--route-budget", "4",
                          "--sample-share", "0.5", "--seed", "7")  # fmt: skip
        assert second["unchanged"] == 10 and sum(second["routing"]["routed"].values()) >= 4
        third = self.run(str(path), "--project", project.slug, "--judge", "gpt", "--route-budget", "4",
                         "--sample-share", "0.5", "--seed", "7")  # fmt: skip
        assert sum(third["routing"]["routed"].values()) == 0
        v2 = self.run(str(path), "--project", project.slug, "--judge", "gpt", "--version", "2")
        assert v2["judge_created"] and v2["version"] == "2" and v2["created"] == 10

    def test_it_fails_naming_the_line(self, project: Project, tmp_path: Path) -> None:
        path = tmp_path / "judge.qrels"
        path.write_text("q0 0 d0-0 1\nq0 0 d0-1\n")
        out = StringIO()
        with pytest.raises(CommandError, match="nothing was imported"):
            call_command(
                "import_machine_labels",
                str(path),
                "--project",
                project.slug,
                "--judge",
                "g",
                "--json",
                stdout=out,
            )
        assert json.loads(out.getvalue())["error"]["line"] == 2
        assert not MachineJudge.objects.exists()


def test_build_qrels_takes_the_sources(project: Project, tmp_path: Path) -> None:
    judge = TestPages.judge(project, tmp_path)
    out = StringIO()
    call_command(
        "build_qrels", project.slug, "--sync", "--min-labels", "1", "--sources", "both", "--machine-judge", "gpt:1",
        "--json", stdout=out,
    )  # fmt: skip
    summary = json.loads(out.getvalue())
    assert (summary["sources"], summary["machine_judge"]) == ("both", str(judge))
    assert summary["source_rule"].startswith("people where")
    with pytest.raises(CommandError, match="no machine judge"):
        call_command(
            "build_qrels", project.slug, "--sources", "machine", "--machine-judge", "nope", stdout=StringIO()
        )
    with pytest.raises(CommandError, match="names its machine judge"):
        call_command("build_qrels", project.slug, "--sources", "machine", stdout=StringIO())


def test_the_judges_list_reads_a_fixed_number_of_queries(
    lead_client: Client, project: Project, django_assert_max_num_queries: Any
) -> None:
    """The list page's queries do not grow with the judges listed (one judge, then four)."""
    url = f"/projects/{project.slug}/machine-judges/"
    lead_client.post(url, {"file": upload(), "name": "j0", "version": "1", "kind": "llm"})
    with django_assert_max_num_queries(20) as one:
        assert lead_client.get(url).status_code == 200
    ceiling = len(one.captured_queries)  # now: the next request clears the connection's query log
    for number in range(1, 4):
        lead_client.post(url, {"file": upload(), "name": f"j{number}", "version": "1", "kind": "llm"})
    assert MachineJudge.objects.filter(project=project).count() == 4
    with django_assert_max_num_queries(ceiling):
        page = lead_client.get(url)
    assert page.status_code == 200 and all(f"j{number}" in page.content.decode() for number in range(4))
