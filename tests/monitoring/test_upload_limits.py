"""The evaluation service's uploads under hostile input: every upload path refuses a file over
UPLOAD_MAX_BYTES before keeping it, ids a TREC file cannot hold, and JSON nested too deep, with a 400
that names the file (and the line), and keeps nothing."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client

from evalcore.textfiles import byte_size
from evalplatform.models import Team
from monitoring.models import EmbeddingSnapshot, FraudScoreSet, QrelsSource, RecommendationSet, Run
from tests.monitoring.conftest import synthetic_collection, upload
from tests.monitoring.test_recsys_fraud_api import RECSYS, SCORES, csv_file, recsys_files
from tests.monitoring.test_streams import embeddings, make_stream, npy_bytes

QRELS, RUN = synthetic_collection()
API = "/api/teams/search"
LIMIT = 4096


@pytest.fixture
def editor(client: Client, theo: User, team: Team) -> Client:
    client.force_login(theo)
    return client


@pytest.fixture
def small_uploads(settings: Any) -> None:
    settings.UPLOAD_MAX_BYTES = LIMIT


def too_large(name: str, size: int) -> str:
    return f"{name}: {byte_size(size)} is more than the 4 KiB an upload may be"


def nothing_kept() -> bool:
    models = (Run, QrelsSource, RecommendationSet, FraudScoreSet, EmbeddingSnapshot)
    return not any(model.objects.exists() for model in models)


@pytest.mark.django_db
@pytest.mark.usefixtures("small_uploads")
class TestSizeLimit:
    def test_it_refuses_a_run_over_the_limit_in_the_api(self, editor: Client) -> None:
        text = RUN(1, 1.0, "bm25")
        response = editor.post(f"{API}/runs/", {"file": upload("bm25.run", text)})
        assert response.status_code == 400
        assert response.json() == {"file": [too_large("bm25.run", len(text))]}
        assert nothing_kept()

    def test_it_refuses_qrels_over_the_limit_in_the_web_form(self, editor: Client) -> None:
        response = editor.post("/teams/search/qrels/new/", {"file": upload("judged.qrels", QRELS)})
        assert response.status_code == 400
        assert too_large("judged.qrels", len(QRELS)) in response.content.decode()
        assert nothing_kept()

    def test_it_refuses_a_score_set_and_a_recommendation_file_over_the_limit_on_its_field(
        self, editor: Client
    ) -> None:
        scores = editor.post(f"{API}/fraud-score-sets/", {"scores": csv_file("card.csv", SCORES)})
        assert scores.status_code == 400
        assert scores.json() == {"scores": [too_large("card.csv", len(SCORES.encode()))]}
        small_recs = "user,item,rank\nu1,item0001,1\n"
        recsys = editor.post(f"{API}/recommendation-sets/", recsys_files(recs=small_recs))
        assert recsys.status_code == 400
        interactions = RECSYS["interactions"].encode()
        assert recsys.json() == {"interactions": [too_large("interactions.csv", len(interactions))]}
        assert nothing_kept()

    def test_it_refuses_an_embedding_snapshot_over_the_limit(self, editor: Client, team: Team) -> None:
        stream = make_stream(team)
        data = npy_bytes(embeddings(40, seed=0))
        snapshot = SimpleUploadedFile("monday.npy", data, content_type="application/octet-stream")
        response = editor.post(f"{API}/streams/{stream.slug}/snapshots/", {"file": snapshot})
        assert response.status_code == 400
        assert response.json() == {"file": [too_large("monday.npy", len(data))]}
        assert nothing_kept()

    def test_the_upload_command_applies_the_limit_to_a_local_file(
        self, team: Team, theo: User, tmp_path: Path
    ) -> None:
        path = tmp_path / "bm25.run"
        path.write_text(RUN(1, 1.0, "bm25"))
        with pytest.raises(CommandError, match=too_large("bm25.run", path.stat().st_size)):
            call_command("upload_run", "search", str(path), "--user", "theo", stdout=StringIO())
        assert nothing_kept()


@pytest.mark.django_db
class TestHostileContent:
    @pytest.mark.parametrize(
        ("name", "text", "message"),
        [
            (
                "r.tsv",
                "q1\td1\t2.0\nq 1\td2\t1.0\n",
                "r.tsv:2: query id 'q 1' contains whitespace; TREC ids cannot",
            ),
            (
                "r.jsonl",
                '{"qid": "q1", "docno": "d1", "score": 2}\n{"qid": "q1", "docno": "has space", "score": 1}\n',
                "r.jsonl:2: document id 'has space' contains whitespace; TREC ids cannot",
            ),
            (
                "r.jsonl",
                '{"qid": "q1", "docno": "d1", "score": 2}\n{"qid": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
                "r.jsonl:2: JSON nested too deeply",
            ),
        ],
    )
    def test_it_refuses_a_run_naming_the_line_and_keeps_nothing(
        self, editor: Client, name: str, text: str, message: str
    ) -> None:
        response = editor.post(f"{API}/runs/", {"file": upload(name, text)})
        assert response.status_code == 400
        assert response.json() == {"file": [message]}
        assert nothing_kept()

    def test_it_refuses_qrels_with_an_empty_document_id(self, editor: Client) -> None:
        response = editor.post(f"{API}/qrels/", {"file": upload("q.tsv", "q1\td1\t1\nq1\t\t0\n")})
        assert response.status_code == 400
        assert response.json() == {"file": ["q.tsv:2: empty document id"]}
        assert nothing_kept()


def run_lines(count: int, *, long_at: int | None = None, long: str = "d" * 1001) -> str:
    """A TREC run of `count` lines, the `long_at`-th of whose document id is `long`."""
    return "".join(
        f"q{i % 7} Q0 {long if i + 1 == long_at else f'd{i}'} {i + 1} {1.0 / (i + 1)} bm25\n"
        for i in range(count)
    )


@pytest.mark.django_db
class TestIdLength:
    """Ids are bounded at upload by TREC_MAX_ID_CHARS (1,000 characters by default), on every line."""

    TOO_LONG = "document id 'dddddddddddddddddddddddddddddddddddddddd'... is 1,001 characters long, more than the 1,000 an id may have"

    @pytest.mark.parametrize("line", [2, 4_321])
    def test_it_refuses_a_run_with_a_long_document_id_naming_the_line(
        self, editor: Client, line: int
    ) -> None:
        # Line 4,321 lies past the lines checked by the reader before the file is kept.
        response = editor.post(f"{API}/runs/", {"file": upload("bm25.run", run_lines(5_000, long_at=line))})
        assert response.status_code == 400
        assert response.json() == {"file": [f"bm25.run:{line}: {self.TOO_LONG}"]}
        assert nothing_kept()

    def test_it_takes_an_id_at_the_limit_and_a_long_run_tag(self, editor: Client) -> None:
        text = run_lines(3_000, long_at=2_500, long="d" * 1000).replace(" bm25\n", " " + "t" * 5000 + "\n")
        response = editor.post(f"{API}/runs/", {"file": upload("bm25.run", text)})
        assert response.status_code == 201, response.content

    def test_it_counts_characters_not_bytes(self, editor: Client, settings: Any) -> None:
        settings.TREC_MAX_ID_CHARS = 10
        accepted = editor.post(
            f"{API}/runs/", {"file": upload("a.run", run_lines(3_000, long_at=2_999, long="é" * 10))}
        )
        assert accepted.status_code == 201, accepted.content
        refused = editor.post(
            f"{API}/qrels/", {"file": upload("q.tsv", "q1\td1\t1\n" + "q" * 11 + "\td2\t0\n")}
        )
        assert refused.status_code == 400
        reason = "query id 'qqqqqqqqqqq'... is 11 characters long, more than the 10 an id may have"
        assert refused.json() == {"file": [f"q.tsv:2: {reason}"]}

    def test_it_refuses_a_run_that_is_one_10_mb_line_naming_line_1(self, editor: Client) -> None:
        text = "q1 Q0 " + "d" * 10_000_000 + " 1 2.0 bm25"
        response = editor.post(f"{API}/runs/", {"file": upload("huge.run", text)})
        assert response.status_code == 400
        reason = "document id 'dddddddddddddddddddddddddddddddddddddddd'... is 10,000,000 characters long, more than the 1,000 an id may have"
        assert response.json() == {"file": [f"huge.run:1: {reason}"]}
        assert nothing_kept()

    def test_the_upload_command_refuses_qrels_with_a_long_id_deep_in_the_file(
        self, team: Team, theo: User, tmp_path: Path
    ) -> None:
        path = tmp_path / "judged.qrels"
        path.write_text("".join(f"q1 0 d{i} 1\n" for i in range(2_999)) + "q1 0 " + "d" * 1001 + " 1\n")
        with pytest.raises(
            CommandError,
            match=f"^judged.qrels:3000: {self.TOO_LONG}$".replace("(", r"\(")
            .replace(")", r"\)")
            .replace(".", r"\."),
        ):
            call_command("upload_qrels", "search", str(path), "--user", "theo", stdout=StringIO())
        assert nothing_kept()
