"""`upload_run TEAM FILE` and `upload_qrels TEAM FILE`: a team's uploads from the shell."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command, load_command_class
from django.core.management.base import CommandError

from evalplatform.models import Team
from monitoring.models import QrelsSource, Run
from tests.monitoring.conftest import synthetic_collection

QRELS, RUN = synthetic_collection()


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def command(name: str, *args: str) -> str:
    out = StringIO()
    call_command(name, *args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.mark.django_db
class TestUploadRun:
    def test_it_uploads_a_run_as_the_user_with_its_name_and_tags(
        self, team: Team, theo: User, tmp_path: Path
    ) -> None:
        path = write(tmp_path, "bm25.run", RUN(1, 1.0, "bm25"))
        data = json.loads(
            command("upload_run", "search", path, "--name", "BM25 baseline", "--description", "k1=0.9",
                    "--tag", "bm25", "--tag", "v1", "--user", "theo", "--json")
        )  # fmt: skip
        run = Run.objects.get(team=team)
        assert data == {
            "run": run.pk, "team": "search", "name": "BM25 baseline", "description": "k1=0.9",
            "tags": ["bm25", "v1"], "run_tag": "bm25", "format": "trec", "num_queries": 20, "num_rows": 600,
            "size": len(RUN(1, 1.0, "bm25")), "sha256": run.sha256, "uploaded_by": "theo",
        }  # fmt: skip
        assert Path(run.file.path).read_text() == RUN(1, 1.0, "bm25")

    def test_it_prints_the_runs_id_for_evaluate(self, team: Team, tmp_path: Path) -> None:
        out = command("upload_run", "search", write(tmp_path, "dense.run", RUN(2, 0.5, "dense")))
        run = Run.objects.get()
        assert out.strip() == (
            f"Uploaded run {run.pk} 'dense' to the team search (trec, 20 queries, 600 rows). "
            f"Evaluate it with `evaluate search --run {run.pk} --qrels ...`."
        )
        assert run.uploaded_by is None

    def test_it_refuses_a_malformed_file_naming_the_line_and_keeps_nothing(
        self, team: Team, tmp_path: Path, media_root: Path
    ) -> None:
        path = write(tmp_path, "broken.run", "q1 Q0 d1 1 2.0 tag\nq1 Q0 d2 2 high tag\n")
        with pytest.raises(CommandError) as refused:
            command("upload_run", "search", path)
        assert str(refused.value).startswith("broken.run:2: ") and "\n" not in str(refused.value)
        assert not Run.objects.exists() and not list(media_root.rglob("*broken*"))

    @pytest.mark.parametrize(
        ("arguments", "message"),
        [
            (["nope", "{run}"], "There is no team 'nope'."),
            (["search", "{missing}"], "{missing}: no such file"),
            (["search", "{run}", "--user", "nobody"], "There is no account 'nobody'."),
            (["search", "{run}", "--user", "vera"], "vera is a viewer of the team search; only its editors can do this."),
            (["search", "{run}", "--user", "otto"], "otto is not a member of the team search."),
        ],
    )  # fmt: skip
    def test_it_refuses_in_one_line(
        self, team: Team, other_team: Team, tmp_path: Path, arguments: list[str], message: str
    ) -> None:
        paths = {"run": write(tmp_path, "a.run", RUN(1, 1.0)), "missing": str(tmp_path / "missing.run")}
        with pytest.raises(CommandError) as refused:
            command("upload_run", *[argument.format(**paths) for argument in arguments])
        assert str(refused.value) == message.format(**paths)
        assert not Run.objects.exists()

    def test_it_lets_a_superuser_upload_to_any_team(self, team: Team, tmp_path: Path) -> None:
        User.objects.create_superuser("root", "root@example.org", "root-password-123")
        command("upload_run", "search", write(tmp_path, "a.run", RUN(1, 1.0)), "--user", "root")
        assert Run.objects.get().uploaded_by.username == "root"


@pytest.mark.django_db
class TestUploadQrels:
    def test_it_uploads_qrels_as_a_source_of_the_team(self, team: Team, theo: User, tmp_path: Path) -> None:
        path = write(tmp_path, "judged.qrels", QRELS)
        data = json.loads(
            command("upload_qrels", "search", path, "--name", "judged", "--user", "theo", "--json")
        )
        source = QrelsSource.objects.get(team=team)
        assert data["qrels"] == source.pk and data["num_queries"] == 20
        assert (source.kind, source.name, source.uploaded_by) == ("upload", "judged", theo)

    def test_it_refuses_a_run_given_as_qrels(self, team: Team, tmp_path: Path) -> None:
        path = write(tmp_path, "oops.qrels", RUN(1, 1.0))
        with pytest.raises(CommandError, match=r"^oops.qrels:1: "):
            command("upload_qrels", "search", path, "--format", "trec")
        assert not QrelsSource.objects.exists()


@pytest.mark.parametrize("name", ["upload_run", "upload_qrels"])
def test_it_explains_its_options_in_help(name: str) -> None:
    text = load_command_class("monitoring", name).create_parser("manage.py", name).format_help()
    for option in ("TEAM", "FILE", "--name", "--format", "--user USERNAME", "--json"):
        assert option in text
