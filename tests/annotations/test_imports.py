"""The import commands: topics, documents, pools and gold; atomic, idempotent, fast, with --json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command, load_command_class
from django.db import connection
from django.http import HttpResponse
from django.test import Client
from django.utils.html import escape

from annotations import services
from annotations.imports import import_file
from annotations.models import Document, GoldLabel, Project, Task, Topic
from evalcore.errors import FormatError
from evalcore.textfiles import byte_size
from tests.conftest import ROOT, _database_url_for
from tests.evalcore.test_textfiles import gzip_of_zeros

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
            "unchanged": 0,
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
        assert (first["records"], first["created"], again["created"], again["updated"]) == (6, 6, 0, 0)
        assert again["unchanged"] == 6
        assert Document.objects.filter(project=project).count() == 6
        assert Document.objects.get(doc_id="c").title == "Title c"

    def test_it_imports_nothing_from_a_file_with_one_bad_line(self, project: Project, tmp_path: Path) -> None:
        path = tmp_path / "docs.jsonl"
        good = "".join(json.dumps({"doc_id": f"d{i}", "text": "fine"}) + "\n" for i in range(4500))
        path.write_text(good + '{"doc_id": "broken", "text": }\n')
        with pytest.raises(CommandError, match=rf"{path}:4501: invalid JSON: expecting value at column 30$"):
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


def api_import(client: Client, project: Project, kind: str, name: str, data: bytes) -> HttpResponse:
    upload = SimpleUploadedFile(name, data)
    return client.post(f"/api/projects/{project.slug}/imports/", {"kind": kind, "file": upload})


def form_import(client: Client, project: Project, kind: str, name: str, data: bytes) -> HttpResponse:
    upload = SimpleUploadedFile(name, data)
    return client.post(f"/projects/{project.slug}/import/", {"kind": kind, "depth": 10, "file": upload})


def nothing_imported(project: Project) -> bool:
    return not (
        Topic.objects.filter(project=project).exists() or Document.objects.filter(project=project).exists()
    )


@pytest.mark.django_db
class TestSizeLimits:
    def test_it_stops_a_decompression_bomb_at_the_limit_with_a_400(
        self, client: Client, lena: User, project: Project, settings: Any
    ) -> None:
        settings.UPLOAD_MAX_DECOMPRESSED_BYTES = 1 << 20
        bomb = gzip_of_zeros(16)  # 16 KiB that expand to 16 MiB
        client.force_login(lena)
        started = time.perf_counter()
        response = api_import(client, project, "documents", "bomb.jsonl.gz", bomb)
        assert time.perf_counter() - started < 1.0
        assert response.status_code == 400
        assert response.json() == {
            "detail": "bomb.jsonl.gz:1: decompresses to more than 1 MiB, the most accepted",
            "file": "bomb.jsonl.gz",
            "line": 1,
            "reason": "decompresses to more than 1 MiB, the most accepted",
        }
        assert nothing_imported(project)

    def test_it_refuses_an_upload_over_the_size_limit(
        self, client: Client, lena: User, project: Project, settings: Any
    ) -> None:
        settings.UPLOAD_MAX_BYTES = 1024
        client.force_login(lena)
        topics = "".join(f"q{i}\ttopic number {i}\n" for i in range(200)).encode()
        response = form_import(client, project, "topics", "topics.tsv", topics)
        assert response.status_code == 400
        page = response.content.decode()
        assert (
            f"<code>topics.tsv</code>: {byte_size(len(topics))} is more than the 1 KiB an upload may be"
            in page
        )
        response = api_import(client, project, "topics", "topics.tsv", topics)
        assert response.status_code == 400 and response.json()["line"] is None
        assert nothing_imported(project)

    def test_the_import_commands_apply_both_limits(
        self, project: Project, tmp_path: Path, settings: Any
    ) -> None:
        bomb = tmp_path / "bomb.jsonl.gz"
        bomb.write_bytes(gzip_of_zeros(4))
        settings.UPLOAD_MAX_DECOMPRESSED_BYTES = 1 << 20
        with pytest.raises(CommandError, match=r"bomb.jsonl.gz:1: decompresses to more than 1 MiB"):
            call_command("import_documents", project.slug, str(bomb), stdout=StringIO(), stderr=StringIO())
        settings.UPLOAD_MAX_BYTES = 1024
        with pytest.raises(
            CommandError, match=r"bomb.jsonl.gz: 4.*KiB is more than the 1 KiB an upload may be"
        ):
            call_command("import_documents", project.slug, str(bomb), stdout=StringIO(), stderr=StringIO())
        assert nothing_imported(project)


MALFORMED = [
    ("topics", "topics.tsv", b"q1\tfine\nq2\tcaf\xe9\n", 2, "not UTF-8 text (invalid continuation byte)"),
    (
        "topics",
        "topics.jsonl",
        b'{"qid": "q1", "text": "caf\\udce9"}\n',
        1,
        '"text" holds an unpaired surrogate',
    ),
    ("topics", "topics.tsv", b"q1\tfine\nq2\tnul\x00here\n", 2, "topic 'q2' contains a NUL character"),
    ("documents", "docs.jsonl.gz", b'{"doc_id": "d1", "text": "x"}\n', 1, "not a readable gzip file"),
    (
        "documents",
        "docs.jsonl",
        b'{"doc_id": "d1", "text": "ok"}\n{"doc_id": "d2", "text": '
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}\n",
        2,
        "JSON nested too deeply",
    ),
    (
        "topics",
        "topics.jsonl",
        b'{"qid": "q1", "text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
        1,
        "nested",
    ),
]


@pytest.mark.django_db
class TestMalformedUploads:
    @pytest.mark.parametrize(("kind", "name", "data", "line", "reason"), MALFORMED)
    def test_the_api_answers_400_with_the_file_line_and_reason(
        self,
        client: Client,
        lena: User,
        project: Project,
        kind: str,
        name: str,
        data: bytes,
        line: int,
        reason: str,
    ) -> None:
        client.force_login(lena)
        response = api_import(client, project, kind, name, data)
        assert response.status_code == 400
        body = response.json()
        assert (body["file"], body["line"]) == (name, line) and reason in body["reason"]
        assert nothing_imported(project)

    @pytest.mark.parametrize(("kind", "name", "data", "line", "reason"), MALFORMED)
    def test_the_web_form_shows_the_error_with_a_400(
        self,
        client: Client,
        lena: User,
        project: Project,
        kind: str,
        name: str,
        data: bytes,
        line: int,
        reason: str,
    ) -> None:
        client.force_login(lena)
        response = form_import(client, project, kind, name, data)
        assert response.status_code == 400
        page = response.content.decode()
        assert "Nothing was imported." in page and f"<code>{name}</code>, line {line}: " in page
        assert escape(reason) in page
        assert nothing_imported(project)


@pytest.mark.django_db
class TestIdsWithWhitespace:
    @pytest.mark.parametrize(
        ("kind", "name", "data", "reason"),
        [
            ("topics", "topics.tsv", b"401\tfine\nq 1\tspaced\n", "query id 'q 1' contains whitespace"),
            (
                "topics",
                "topics.jsonl",
                b'{"qid": "401", "text": "a"}\n{"qid": "q\\t1", "text": "b"}\n',
                "query id 'q\\t1'",
            ),
            (
                "topics",
                "topics.jsonl",
                b'{"qid": "401", "text": "a"}\n{"qid": "", "text": "b"}\n',
                "empty query id",
            ),
            (
                "documents",
                "docs.jsonl",
                b'{"doc_id": "a", "text": "x"}\n{"doc_id": "has space", "text": "y"}\n',
                "document id 'has space'",
            ),
            ("documents", "docs.tsv", b"a\tx\nhas space\ty\n", "document id 'has space' contains whitespace"),
            ("pool", "pool.tsv", b"401\ta\n401\thas space\n", "document id 'has space' contains whitespace"),
            ("pool", "pool.tsv", b"401\ta\nq 1\ta\n", "query id 'q 1' contains whitespace"),
            (
                "gold",
                "gold.jsonl",
                b'{"qid": "401", "doc_id": "a", "rel": 1}\n{"qid": "401", "doc_id": "a\\nb", "rel": 0}\n',
                "document id 'a\\nb'",
            ),
            ("gold", "gold.tsv", b"401\ta\t1\nq 1\tb\t0\n", "query id 'q 1' contains whitespace"),
        ],
    )
    def test_it_refuses_them_at_import_naming_the_line(
        self,
        client: Client,
        lena: User,
        project: Project,
        files: dict[str, Path],
        kind: str,
        name: str,
        data: bytes,
        reason: str,
    ) -> None:
        import_everything(project, files)
        before = (
            Topic.objects.count(),
            Document.objects.count(),
            Task.objects.count(),
            GoldLabel.objects.count(),
        )
        client.force_login(lena)
        response = api_import(client, project, kind, name, data)
        assert response.status_code == 400
        body = response.json()
        assert (body["file"], body["line"]) == (name, 2)
        assert reason in body["reason"] and body["reason"].endswith(("TREC ids cannot", "empty query id"))
        after = (
            Topic.objects.count(),
            Document.objects.count(),
            Task.objects.count(),
            GoldLabel.objects.count(),
        )
        assert after == before


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


@pytest.mark.django_db
class TestMessages:
    """What an import says, in plain words: what was added or updated, and "nothing changed" on a
    re-import of the same file."""

    def test_it_counts_what_was_added_and_says_nothing_changed_on_a_reimport(
        self, project: Project, tmp_path: Path
    ) -> None:
        topics, docs, pool = tmp_path / "topics.tsv", tmp_path / "docs.jsonl", tmp_path / "pool.tsv"
        topics.write_text("q1\tfirst\nq2\tsecond\n")
        docs.write_text(
            "".join(json.dumps({"doc_id": f"d{i}", "text": f"text {i}"}) + "\n" for i in range(3))
        )
        pool.write_text("".join(f"q{q}\td{d}\n" for q in (1, 2) for d in range(3)))
        summaries = [
            import_file(project=project, kind=kind, path=path).summary
            for kind, path in (("topics", topics), ("documents", docs), ("pool", pool))
        ]
        assert summaries == ["2 topics added.", "3 documents added.", "6 pool rows added."]
        again = [
            import_file(project=project, kind=kind, path=path).summary
            for kind, path in (("topics", topics), ("documents", docs), ("pool", pool))
        ]
        assert again == [
            "Nothing changed: all 2 topics were already there.",
            "Nothing changed: all 3 documents were already there.",
            "Nothing changed: all 6 pool rows were already there.",
        ]

    def test_it_tells_changed_rows_from_rows_already_there(self, project: Project, tmp_path: Path) -> None:
        docs = tmp_path / "docs.jsonl"
        docs.write_text(
            json.dumps({"doc_id": "d0", "text": "old"})
            + "\n"
            + json.dumps({"doc_id": "d1", "text": "same"})
            + "\n"
        )
        import_file(project=project, kind="documents", path=docs)
        docs.write_text(
            "".join(
                json.dumps({"doc_id": f"d{i}", "text": text}) + "\n"
                for i, text in enumerate(["new", "same", "x"])
            )
        )
        result = import_file(project=project, kind="documents", path=docs)
        assert (result.created, result.updated, result.unchanged) == (1, 1, 1)
        assert result.summary == "1 document added, 1 updated, 1 already there."
        topics = tmp_path / "topics.tsv"
        topics.write_text("q1\tonly\n")
        import_file(project=project, kind="topics", path=topics)
        assert import_file(project=project, kind="topics", path=topics).summary == (
            "Nothing changed: the topic was already there."
        )

    def test_it_names_the_line_of_a_json_error_once(self, project: Project, tmp_path: Path) -> None:
        path = tmp_path / "docs.jsonl"
        path.write_text(
            '{"doc_id": "a", "text": "x"}\n{"doc_id": "b", "text": "y"}\n{"doc_id": "c", "text": "z"\n'
        )
        with pytest.raises(FormatError) as error:
            import_file(project=project, kind="documents", path=path, display_name="docs.jsonl")
        assert (
            str(error.value) == "docs.jsonl:3: invalid JSON: expecting ',' delimiter at the end of the line"
        )
        assert "line 2" not in str(error.value) and "column 1" not in str(error.value)
