"""The import commands: topics, documents, pools and gold; atomic, idempotent, fast, with --json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command, load_command_class
from django.db import connection

from annotations import services
from annotations.models import Document, GoldLabel, Project, Task, Topic
from tests.conftest import ROOT, _database_url_for

TREC_TOPICS = """<top>
<num> Number: 401
<title> foreign minorities, Germany

<desc> Description:
What language and cultural differences impede the integration
of foreign minorities in Germany?

<narr> Narrative:
A relevant document will focus on the causes.
</top>

<top>
<num> Number: 402
<title> behavioral genetics
<desc> Description:
What is happening in the field of behavioral genetics?
</top>
"""

RUN = "".join(
    f"{qid} Q0 {doc} {rank} {score} run\n"
    for qid, ranking in (("401", ["a", "b", "c", "d"]), ("402", ["c", "e", "a", "b"]))
    for rank, (doc, score) in enumerate(zip(ranking, (9.0, 8.0, 7.0, 6.0), strict=True), start=1)
)


def run_command(name: str, *args: str) -> dict[str, object]:
    out = StringIO()
    call_command(name, *args, "--json", stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


@pytest.fixture
def project(lena: User) -> Project:
    return services.project_create(creator=lena, slug="news", name="News")


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "topics": tmp_path / "topics.txt",
        "documents": tmp_path / "docs.jsonl",
        "run": tmp_path / "run.trec",
        "pairs": tmp_path / "pool.tsv",
        "qrels": tmp_path / "gold.qrels",
    }
    paths["topics"].write_text(TREC_TOPICS)
    paths["documents"].write_text(
        "".join(
            json.dumps({"doc_id": d, "title": f"Title {d}", "text": f"Text of {d}."}) + "\n" for d in "abcdef"
        )
    )
    paths["run"].write_text(RUN)
    paths["pairs"].write_text("401\ta\n402\tf\n")
    paths["qrels"].write_text("401 0 a 4\n402 0 f 0\n")
    return paths


def import_everything(project: Project, files: dict[str, Path]) -> None:
    run_command("import_topics", project.slug, str(files["topics"]))
    run_command("import_documents", project.slug, str(files["documents"]))
    run_command("import_pool", project.slug, str(files["run"]), "--depth", "2")


@pytest.mark.django_db
class TestTopics:
    def test_it_imports_trec_topics_with_their_descriptions(
        self, project: Project, files: dict[str, Path]
    ) -> None:
        result = run_command("import_topics", project.slug, str(files["topics"]))
        assert result == {
            "project": "news", "kind": "topics", "file": str(files["topics"]), "records": 2, "created": 2, "updated": 0,
        }  # fmt: skip
        topic = Topic.objects.get(project=project, qid="401")
        assert topic.title == "foreign minorities, Germany"
        assert topic.description.startswith("What language and cultural differences")

    def test_it_imports_tsv_and_jsonl_topics(self, project: Project, tmp_path: Path) -> None:
        tsv = tmp_path / "topics.tsv"
        tsv.write_text("q1\tcatch multiple exceptions\n")
        jsonl = tmp_path / "topics.jsonl"
        jsonl.write_text('{"qid": "q2", "text": "f-strings"}\n')
        run_command("import_topics", project.slug, str(tsv))
        run_command("import_topics", project.slug, str(jsonl), "--format", "jsonl")
        assert dict(Topic.objects.values_list("qid", "title")) == {
            "q1": "catch multiple exceptions",
            "q2": "f-strings",
        }

    def test_it_updates_a_changed_topic_on_reimport(self, project: Project, tmp_path: Path) -> None:
        path = tmp_path / "topics.tsv"
        path.write_text("q1\told text\n")
        run_command("import_topics", project.slug, str(path))
        path.write_text("q1\tnew text\n")
        result = run_command("import_topics", project.slug, str(path))
        assert (result["created"], result["updated"]) == (0, 1)
        assert Topic.objects.get().title == "new text"


@pytest.mark.django_db
class TestDocuments:
    def test_it_imports_documents_and_is_idempotent(self, project: Project, files: dict[str, Path]) -> None:
        first = run_command("import_documents", project.slug, str(files["documents"]))
        again = run_command("import_documents", project.slug, str(files["documents"]))
        assert (first["records"], first["created"], again["created"], again["updated"]) == (6, 6, 0, 6)
        assert Document.objects.filter(project=project).count() == 6
        assert Document.objects.get(doc_id="c").title == "Title c"

    def test_it_imports_nothing_from_a_file_with_one_bad_line(self, project: Project, tmp_path: Path) -> None:
        path = tmp_path / "docs.jsonl"
        good = "".join(json.dumps({"doc_id": f"d{i}", "text": "fine"}) + "\n" for i in range(4500))
        path.write_text(good + '{"doc_id": "broken", "text": }\n')
        with pytest.raises(CommandError, match=rf"{path}:4501: Expecting value"):
            call_command("import_documents", project.slug, str(path), stdout=StringIO(), stderr=StringIO())
        assert Document.objects.count() == 0

    def test_it_imports_100k_documents_in_seconds(self, project: Project, tmp_path: Path) -> None:
        path = tmp_path / "big.jsonl"
        with path.open("w") as out:
            for i in range(100_000):
                out.write(
                    json.dumps({"doc_id": f"doc{i:06d}", "title": f"Title {i}", "text": "word " * 30}) + "\n"
                )
        started = time.perf_counter()
        result = run_command("import_documents", project.slug, str(path))
        elapsed = time.perf_counter() - started
        assert result["created"] == 100_000
        assert Document.objects.filter(project=project).count() == 100_000
        assert elapsed < 30, f"took {elapsed:.1f} s"


@pytest.mark.django_db
class TestPools:
    def test_it_pools_a_run_to_the_given_depth(self, project: Project, files: dict[str, Path]) -> None:
        import_everything(project, files)
        pairs = set(Task.objects.filter(project=project).values_list("topic__qid", "document__doc_id"))
        assert pairs == {("401", "a"), ("401", "b"), ("402", "c"), ("402", "e")}

    def test_it_adds_pairs_from_a_tsv_pool_without_duplicates(
        self, project: Project, files: dict[str, Path]
    ) -> None:
        import_everything(project, files)
        result = run_command("import_pool", project.slug, str(files["pairs"]))
        again = run_command("import_pool", project.slug, str(files["run"]), "--depth", "2")
        assert (result["records"], result["created"], again["created"]) == (2, 1, 0)
        assert Task.objects.filter(project=project).count() == 5

    def test_it_names_the_line_of_an_unknown_document(
        self, project: Project, files: dict[str, Path], tmp_path: Path
    ) -> None:
        import_everything(project, files)
        bad = tmp_path / "bad.trec"
        bad.write_text("401 Q0 a 1 3.0 r\n401 Q0 zzz 2 2.0 r\n")
        out = StringIO()
        with pytest.raises(CommandError, match=r"bad.trec:2: unknown document 'zzz'"):
            call_command("import_pool", project.slug, str(bad), "--json", stdout=out, stderr=StringIO())
        assert json.loads(out.getvalue()) == {
            "error": {
                "file": str(bad),
                "line": 2,
                "reason": "unknown document 'zzz': import the documents first",
            }
        }

    def test_it_names_the_line_of_an_unknown_topic_in_a_pair_list(
        self, project: Project, files: dict[str, Path], tmp_path: Path
    ) -> None:
        import_everything(project, files)
        bad = tmp_path / "bad.tsv"
        bad.write_text("401\tc\n999\ta\n")
        with pytest.raises(CommandError, match=r"bad.tsv:2: unknown topic '999'"):
            call_command("import_pool", project.slug, str(bad), stdout=StringIO(), stderr=StringIO())
        assert Task.objects.filter(project=project).count() == 4


@pytest.mark.django_db
class TestGold:
    def test_it_imports_gold_and_marks_those_tasks_gold(
        self, project: Project, files: dict[str, Path]
    ) -> None:
        import_everything(project, files)
        result = run_command("import_gold", project.slug, str(files["qrels"]))
        assert (result["records"], result["created"]) == (2, 2)
        gold = dict(GoldLabel.objects.values_list("task__document__doc_id", "grade"))
        assert gold == {"a": 4, "f": 0}
        assert set(Task.objects.filter(is_gold=True).values_list("document__doc_id", flat=True)) == {"a", "f"}
        assert Task.objects.filter(project=project).count() == 5, "an unpooled gold pair becomes a task"
        assert run_command("import_gold", project.slug, str(files["qrels"]))["created"] == 0

    def test_it_refuses_a_grade_off_the_scale(
        self, project: Project, files: dict[str, Path], tmp_path: Path
    ) -> None:
        import_everything(project, files)
        bad = tmp_path / "bad.qrels"
        bad.write_text("401 0 a 2\n402 0 c 7\n")
        with pytest.raises(CommandError, match=r"bad.qrels:2: grade 7 is not on the project's scale"):
            call_command("import_gold", project.slug, str(bad), stdout=StringIO(), stderr=StringIO())
        assert not GoldLabel.objects.exists()

    def test_it_refuses_a_malformed_qrels_line(
        self, project: Project, files: dict[str, Path], tmp_path: Path
    ) -> None:
        import_everything(project, files)
        bad = tmp_path / "bad.qrels"
        bad.write_text("401 0 a 2\n402 0 c\n")
        with pytest.raises(CommandError, match=r"bad.qrels:2: expected 4 columns"):
            call_command("import_gold", project.slug, str(bad), stdout=StringIO(), stderr=StringIO())


@pytest.mark.django_db
class TestCommandLine:
    def test_it_refuses_an_unknown_project(self, files: dict[str, Path]) -> None:
        with pytest.raises(CommandError, match="no project with the slug 'nope'"):
            call_command("import_topics", "nope", str(files["topics"]), stdout=StringIO())

    @pytest.mark.parametrize("name", ["import_topics", "import_documents", "import_pool", "import_gold"])
    def test_it_has_help(self, name: str) -> None:
        text = load_command_class("annotations", name).create_parser("manage.py", name).format_help()
        assert all(word in text for word in ("PROJECT", "FILE", "--format", "--json", "atomically"))
        assert ("--depth" in text) == (name == "import_pool")


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
class TestExitStatus:
    def test_it_exits_non_zero_and_reports_the_bad_line(self, lena: User, tmp_path: Path) -> None:
        project = services.project_create(creator=lena, slug="cli", name="CLI")
        path = tmp_path / "docs.tsv"
        path.write_text("d1\tgood\nd2\tgood\nd3\n")
        env = {**os.environ, "DATABASE_URL": _database_url_for(connection.settings_dict)}
        done = subprocess.run(
            [sys.executable, "manage.py", "import_documents", project.slug, str(path), "--json"],
            cwd=ROOT, env=env, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 1
        assert f"{path}:3: expected doc_id<TAB>text" in done.stderr
        assert json.loads(done.stdout)["error"]["line"] == 3
        assert Document.objects.count() == 0
