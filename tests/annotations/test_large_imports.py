"""Large document imports: off the web request (a job on the heavy queue, with progress), written in
batches bounded by bytes, and a per-document size limit that refuses a file naming the file, line and
reason, atomically."""

from __future__ import annotations

import gzip
import json
import time
import tracemalloc
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db.models import Sum
from django.db.models.functions import Length
from django.test import Client
from django.utils import timezone

from annotations import imports, services
from annotations.models import Document, ImportJob, Project
from evalplatform.celery import app
from evalplatform.jobs import Claim, job_claim
from tests.conftest import QueuedTasks, WorkerProcess

API = "/api/projects/news/imports/"


@pytest.fixture
def project(lena: User) -> Project:
    return services.project_create(creator=lena, slug="news", name="News")


def collection(count: int, size: int, *, bad: dict[int, int] | None = None) -> bytes:
    """JSONL of `count` documents of `size` bytes of text each (line i+1 holds d{i}); `bad` gives some a
    different size."""
    lines = []
    for i in range(count):
        length = (bad or {}).get(i, size)
        stem = f"document {i} "
        text = (stem + "lorem ipsum dolor sit amet " * (length // 27 + 1))[:length]
        lines.append(json.dumps({"doc_id": f"d{i}", "text": text}))
    return ("\n".join(lines) + "\n").encode()


def api_post(client: Client, name: str, data: bytes) -> Any:
    return client.post(API, {"kind": "documents", "file": SimpleUploadedFile(name, data)})


def wait_for_job(client: Client, url: str, timeout: float = 180.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body: dict[str, Any] = client.get(url).json()
        if body["status"] in ("done", "failed"):
            return body
        time.sleep(0.1)
    raise AssertionError(f"the import job did not finish within {timeout} s: {body}")


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
class TestInTheWorker:
    def test_a_large_gzipped_collection_is_accepted_at_once_and_imported_by_the_worker(
        self, celery_worker_process: WorkerProcess, lena: User, project: Project
    ) -> None:
        count, size = 120, 1_000_000  # 120 MB of text in a gzip of well under 1 MB
        data = gzip.compress(collection(count, size), compresslevel=6)
        assert len(data) < 2 << 20
        client = Client()
        client.force_login(lena)
        app.loader.import_default_modules()  # as a web process has, after its first queued job
        tracemalloc.start()
        try:
            started = time.perf_counter()
            response = api_post(client, "big.jsonl.gz", data)
            seconds = time.perf_counter() - started
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert response.status_code == 202, response.content
        # The request kept the file and looked at its first 4 MiB; it held no document batch.
        assert peak < 40 << 20, f"the request peaked at {peak / 2**20:.1f} MiB"
        assert seconds < 30, f"the request took {seconds:.1f} s (under tracemalloc)"
        accepted = response.json()
        assert (accepted["status"], accepted["file"], accepted["kind"]) == (
            "pending",
            "big.jsonl.gz",
            "documents",
        )
        finished = wait_for_job(client, accepted["url"])
        assert finished["status"] == "done", (finished, celery_worker_process.log())
        assert finished["result"]["records"] == count and finished["result"]["created"] == count
        assert finished["result"]["summary"] == f"{count} documents added."
        documents = Document.objects.filter(project=project)
        assert documents.count() == count
        assert documents.aggregate(total=Sum(Length("text")))["total"] == count * size
        job = ImportJob.objects.get(pk=accepted["id"])
        assert (job.attempts, job.file.storage.exists(job.file.name)) == (1, False)


@pytest.mark.django_db
class TestBatches:
    def test_the_command_writes_documents_in_batches_bounded_by_bytes(
        self, project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        batches: list[tuple[int, int]] = []
        save = imports._save_documents

        def recording(batch: list[Document]) -> None:
            if batch:
                batches.append((len(batch), sum(len(d.text) + len(d.title) for d in batch)))
            save(batch)

        monkeypatch.setattr(imports, "_save_documents", recording)
        path = tmp_path / "docs.jsonl"
        path.write_bytes(collection(40, 500_000))
        call_command("import_documents", project.slug, str(path), stdout=StringIO(), stderr=StringIO())
        assert Document.objects.filter(project=project).count() == 40
        assert sum(n for n, _ in batches) == 40 and len(batches) >= 3
        assert max(size for _, size in batches) <= imports.BATCH_BYTES + 500_000


@pytest.mark.django_db
class TestDocumentSizeLimit:
    def test_the_api_refuses_a_document_over_the_limit_naming_the_file_line_and_reason(
        self, client: Client, lena: User, project: Project, settings: Any
    ) -> None:
        settings.DOCUMENT_MAX_BYTES = 1000
        client.force_login(lena)
        response = api_post(client, "docs.jsonl", collection(3, 500, bad={1: 1001}))
        assert response.status_code == 400
        reason = "document 'd1' holds 1,001 bytes of text, more than the 1,000 bytes a document may hold"
        assert response.json() == {
            "detail": f"docs.jsonl:2: {reason}",
            "file": "docs.jsonl",
            "line": 2,
            "reason": reason,
        }
        assert not Document.objects.filter(project=project).exists()

    def test_the_command_refuses_it_too(self, project: Project, tmp_path: Path, settings: Any) -> None:
        settings.DOCUMENT_MAX_BYTES = 4096
        path = tmp_path / "docs.jsonl.gz"
        path.write_bytes(gzip.compress(collection(5, 100, bad={3: 5000})))
        with pytest.raises(
            CommandError, match=r"docs.jsonl.gz:4: document 'd3' holds 4.9 KiB of text, more than"
        ):
            call_command("import_documents", project.slug, str(path), stdout=StringIO(), stderr=StringIO())
        assert not Document.objects.filter(project=project).exists()

    def test_a_line_far_longer_than_any_allowed_document_stops_the_read_there(
        self, project: Project, tmp_path: Path, settings: Any
    ) -> None:
        settings.DOCUMENT_MAX_BYTES = 1000
        path = tmp_path / "docs.jsonl"
        path.write_bytes(collection(2, 100) + b'{"doc_id": "huge", "text": "' + b"x" * 200_000 + b'"}\n')
        with pytest.raises(CommandError, match=r"docs.jsonl:3: a line longer than"):
            call_command("import_documents", project.slug, str(path), stdout=StringIO(), stderr=StringIO())
        assert not Document.objects.filter(project=project).exists()


@pytest.mark.django_db
class TestImportJobs:
    @pytest.fixture(autouse=True)
    def small_threshold(self, settings: Any) -> None:
        settings.IMPORT_SYNC_MAX_BYTES = 2000

    def test_the_web_form_redirects_to_a_page_that_follows_the_job(
        self,
        client: Client,
        lena: User,
        project: Project,
        queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:
        client.force_login(lena)
        upload = SimpleUploadedFile("docs.jsonl", collection(5, 1000))
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                f"/projects/{project.slug}/import/", {"kind": "documents", "depth": 10, "file": upload}
            )
        job = ImportJob.objects.get()
        assert response.status_code == 302 and response["Location"] == f"/projects/news/import/{job.pk}/"
        assert queued.names() == ["annotations.tasks.import_run"]
        page = client.get(response["Location"]).content.decode()
        assert "Pending" in page and 'http-equiv="refresh"' in page
        assert not Document.objects.filter(project=project).exists()
        with django_capture_on_commit_callbacks(execute=True):
            assert imports.import_job_run(job_id=job.pk).status == "done"
        page = client.get(response["Location"]).content.decode()
        assert "docs.jsonl: 5 documents added." in page and 'http-equiv="refresh"' not in page
        assert Document.objects.filter(project=project).count() == 5
        job.refresh_from_db()
        assert not job.file.storage.exists(job.file.name)

    def test_a_job_that_meets_a_bad_line_imports_nothing_and_says_where(
        self, client: Client, lena: User, project: Project, queued: QueuedTasks
    ) -> None:
        client.force_login(lena)
        response = api_post(client, "docs.jsonl", collection(4, 1000) + b'{"doc_id": "d9"}\n')
        assert response.status_code == 202
        job_url = response.json()["url"]
        assert imports.import_job_run(job_id=response.json()["id"]).status == "failed"
        body = client.get(job_url).json()
        assert body["status"] == "failed" and body["result"] is None
        assert body["error"] == 'docs.jsonl:5: missing field "text"'
        assert not Document.objects.filter(project=project).exists()
        job = ImportJob.objects.get(pk=body["id"])
        assert not job.file.storage.exists(job.file.name)
        page = client.get(f"/projects/news/import/{body['id']}/").content.decode()
        assert "Nothing was imported." in page and "docs.jsonl:5: missing field" in page

    def test_it_is_redone_once_after_a_lost_worker_and_never_twice(
        self, client: Client, lena: User, project: Project, queued: QueuedTasks
    ) -> None:
        client.force_login(lena)
        job_id = api_post(client, "docs.jsonl", collection(5, 1000)).json()["id"]
        claim = job_claim(ImportJob, pk=job_id)  # a worker took it and died
        assert isinstance(claim, Claim)
        later = timezone.now() + timedelta(hours=1)
        assert imports.import_job_run(job_id=job_id, now=later).status == "done"
        assert imports.import_job_run(job_id=job_id, now=later).status == "finished"
        job = ImportJob.objects.get(pk=job_id)
        assert (job.status, job.attempts, job.result["created"]) == ("done", 2, 5)
        assert Document.objects.filter(project=project).count() == 5

    def test_a_small_file_is_still_imported_in_the_request(
        self, client: Client, lena: User, project: Project, queued: QueuedTasks
    ) -> None:
        client.force_login(lena)
        response = api_post(client, "docs.jsonl", collection(1, 100))
        assert response.status_code == 201 and response.json()["created"] == 1
        assert not ImportJob.objects.exists() and queued.sent == []

    def test_others_cannot_follow_a_projects_import(
        self, client: Client, lena: User, alice: User, project: Project, queued: QueuedTasks
    ) -> None:
        client.force_login(lena)
        job_id = api_post(client, "docs.jsonl", collection(5, 1000)).json()["id"]
        client.force_login(alice)
        assert client.get(f"{API}{job_id}/").status_code == 404
        assert client.get(f"/projects/news/import/{job_id}/").status_code == 404
