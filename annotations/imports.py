"""Import topics, documents, pools and gold labels into a project, atomically and idempotently.

Parsing is framework-free (`evalcore.trec`, `evalcore.documents`, `evalcore.pools`); this module maps
records onto rows in bulk. Each import runs in one transaction: a file with one bad line imports nothing
and raises `FormatError(file, line, reason)`. Importing the same file again changes nothing. A file over
UPLOAD_MAX_BYTES is refused before it is read, and a gzipped one once it expands past
UPLOAD_MAX_DECOMPRESSED_BYTES (`evalplatform.uploads`); a document over DOCUMENT_MAX_BYTES at its line.

Documents are written in batches of at most BATCH_SIZE rows and about BATCH_BYTES of text, so memory is
bounded by a batch, not by the file. From the web and the API (`import_request`), an upload that holds, or
expands to, more than IMPORT_SYNC_MAX_BYTES is not imported in the request: it is kept under MEDIA_ROOT and
an `ImportJob` imports it on the heavy queue (`evalplatform.jobs`: a lease, progress, one redo after a lost
worker); smaller ones are imported at once, as before.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import zlib
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from django.conf import settings
from django.db import transaction
from django.db.models import TextField, Value
from django.db.models.functions import MD5, Concat

from annotations import hotpath
from annotations.models import Document, GoldLabel, ImportJob, Project, Task, Topic
from evalcore.documents import detect_document_format, document_size, read_documents
from evalcore.errors import FormatError
from evalcore.pools import find_line, pool_run, read_pairs
from evalcore.trec import detect_format, read_qrels, read_run, read_topics
from evalplatform.auth import User
from evalplatform.jobs import Job, JobOutcome, ProgressFn, job_enqueue_on_commit, job_run
from evalplatform.uploads import (
    max_decompressed_bytes,
    stored_file,
    upload_name,
    upload_size,
    upload_too_large,
)

ImportKind = Literal["topics", "documents", "pool", "gold"]
Progress = Callable[[int], None]

KINDS: dict[str, str] = {
    "topics": "Topics",
    "documents": "Documents",
    "pool": "Pool",
    "gold": "Gold labels",
}
FORMATS: dict[str, tuple[str, ...]] = {
    "topics": ("trec", "tsv", "jsonl"),
    "documents": ("jsonl", "tsv"),
    "pool": ("trec", "jsonl", "tsv"),
    "gold": ("trec", "tsv", "jsonl"),
}
#: What one record of each kind is called in messages, singular and plural.
NOUNS: dict[str, tuple[str, str]] = {
    "topics": ("topic", "topics"),
    "documents": ("document", "documents"),
    "pool": ("pool row", "pool rows"),
    "gold": ("gold label", "gold labels"),
}
DEFAULT_DEPTH = 10
BATCH_SIZE = 2000
#: A batch of documents is written once it holds this much text (or BATCH_SIZE rows): 2,000 documents of
#: 1 MB each would otherwise be one 2 GB statement.
BATCH_BYTES = 8 << 20
#: The task's hard time limit; the job's lease is renewed while it runs.
IMPORT_TIME_LIMIT = 60 * 60
MAX_ID_LENGTH = 256


@dataclass(frozen=True)
class ImportResult:
    """What an import did: `records` read, of which `created` were new, `updated` changed an existing row
    and `unchanged` were already there as they are (a re-import of the same file: all of them)."""

    kind: str
    file: str
    records: int
    created: int
    updated: int
    unchanged: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def _count(self, n: int) -> str:
        singular, plural = NOUNS[self.kind]
        return f"{n} {singular if n == 1 else plural}"

    @property
    def summary(self) -> str:
        """In plain words: "6 pool rows added.", "1 topic added, 2 updated.", "Nothing changed: ..."."""
        singular, plural = NOUNS[self.kind]
        if not self.created and not self.updated:
            if not self.unchanged:
                return f"Nothing changed: the file holds no {plural}."
            if self.unchanged == 1:
                return f"Nothing changed: the {singular} was already there."
            return f"Nothing changed: all {self.unchanged} {plural} were already there."
        parts = []
        if self.created:
            parts.append(f"{self._count(self.created)} added")
        if self.updated:
            parts.append(f"{self.updated} updated" if parts else f"{self._count(self.updated)} updated")
        if self.unchanged:
            parts.append(f"{self.unchanged} already there")
        return ", ".join(parts) + "."


def import_file(
    *,
    project: Project,
    kind: str,
    path: str | Path,
    fmt: str | None = None,
    depth: int | None = None,
    display_name: str | None = None,
    progress: Progress | None = None,
) -> ImportResult:
    """Import one file of `kind`; `fmt` None detects the format. Errors name `display_name` (or the path)."""
    if kind not in KINDS:
        raise ValueError(f"unknown import kind {kind!r}; expected one of {', '.join(KINDS)}")
    if fmt is not None and fmt not in FORMATS[kind]:
        raise ValueError(f"{kind} can be read as {', '.join(FORMATS[kind])}, not {fmt!r}")
    name = display_name or str(path)
    too_large = upload_too_large(upload_size(path))
    if too_large:
        raise FormatError(name, None, too_large)
    try:
        if kind == "topics":
            result = topics_import(project=project, path=path, fmt=fmt)
        elif kind == "documents":
            result = documents_import(project=project, path=path, fmt=fmt, progress=progress)
        elif kind == "pool":
            result = pool_import(project=project, path=path, fmt=fmt, depth=depth or DEFAULT_DEPTH)
        else:
            result = gold_import(project=project, path=path, fmt=fmt)
    except FormatError as exc:
        if exc.path == name:
            raise
        raise FormatError(name, exc.line, exc.reason) from None
    return ImportResult(kind, name, result.records, result.created, result.updated, result.unchanged)


def _unknown(path: str | Path, line: int | None, qid: str, doc_id: str, what: str) -> FormatError:
    where = line if line is not None else find_line(path, qid, doc_id)
    return FormatError(str(path), where, what)


# --- topics ---------------------------------------------------------------------------------------------


def topics_import(*, project: Project, path: str | Path, fmt: str | None = None) -> ImportResult:
    fmt = fmt or detect_format(path, "topics")
    titles = read_topics(path, fmt=fmt)  # type: ignore[arg-type]
    descriptions: dict[str, str] = {}
    if fmt == "trec":
        try:
            descriptions = read_topics(path, fmt="trec", field="description")
        except FormatError:
            descriptions = {}  # descriptions are optional
    for qid, title in titles.items():
        if not title.strip():
            raise _unknown(path, None, qid, qid, f"topic {qid} has no text")
        if "\x00" in qid or "\x00" in title or "\x00" in descriptions.get(qid, ""):
            raise _unknown(path, None, qid, qid, f"topic {qid!r} contains a NUL character")
        if len(qid) > 128:
            raise _unknown(path, None, qid, qid, f"qid {qid[:20]!r}... is longer than 128 characters")
    existing = dict(Topic.objects.filter(project=project).values_list("qid", "title"))
    rows = [
        Topic(project=project, qid=q, title=t, description=descriptions.get(q, "")) for q, t in titles.items()
    ]
    with transaction.atomic():
        Topic.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["project", "qid"],
            update_fields=["title", "description"],
            batch_size=BATCH_SIZE,
        )
    created = sum(1 for q in titles if q not in existing)
    updated = sum(1 for q, t in titles.items() if q in existing and existing[q] != t)
    return ImportResult("topics", str(path), len(titles), created, updated, len(titles) - created - updated)


# --- documents ------------------------------------------------------------------------------------------


def documents_import(
    *, project: Project, path: str | Path, fmt: str | None = None, progress: Progress | None = None
) -> ImportResult:
    """Stream the file into the database in batches, inside one transaction."""
    limit = max_decompressed_bytes()
    fmt = fmt or detect_document_format(path, max_decompressed_bytes=limit)
    # A digest per stored document (computed by the database), so a re-import can tell a changed document
    # from one already there as it is without reading every text back.
    existing = dict(
        Document.objects.filter(project=project)
        .annotate(digest=MD5(Concat("title", Value("\x1f"), "text", output_field=TextField())))
        .values_list("doc_id", "digest")
    )
    records = created = unchanged = batch_bytes = 0
    batch: list[Document] = []
    records_read = read_documents(
        path,
        fmt=fmt,  # type: ignore[arg-type]
        max_decompressed_bytes=limit,
        max_document_bytes=document_max_bytes(),
    )
    with transaction.atomic():
        for record in records_read:
            if len(record.doc_id) > MAX_ID_LENGTH:
                raise FormatError(str(path), record.line, f"doc_id is longer than {MAX_ID_LENGTH} characters")
            if "\x00" in record.text or "\x00" in record.title or "\x00" in record.doc_id:
                raise FormatError(str(path), record.line, "the text contains a NUL character")
            batch.append(
                Document(project=project, doc_id=record.doc_id, title=record.title, text=record.text)
            )
            known = existing.get(record.doc_id)
            created += known is None
            unchanged += known is not None and known == _digest(record.title, record.text)
            records += 1
            batch_bytes += document_size(record)
            if len(batch) >= BATCH_SIZE or batch_bytes >= BATCH_BYTES:
                _save_documents(batch)
                if progress:
                    progress(len(batch))
                batch, batch_bytes = [], 0
        _save_documents(batch)
        if progress and batch:
            progress(len(batch))
    return ImportResult("documents", str(path), records, created, records - created - unchanged, unchanged)


def document_max_bytes() -> int:
    return int(settings.DOCUMENT_MAX_BYTES)


def _digest(title: str, text: str) -> str:
    return hashlib.md5(f"{title}\x1f{text}".encode(), usedforsecurity=False).hexdigest()


def _save_documents(batch: list[Document]) -> None:
    if batch:
        Document.objects.bulk_create(
            batch, update_conflicts=True, unique_fields=["project", "doc_id"], update_fields=["title", "text"]
        )


# --- pools and gold -------------------------------------------------------------------------------------


def _is_pair_file(path: str | Path) -> bool:
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.strip():
                return len(line.rstrip("\r\n").split("\t")) == 2
    return False


def _pool_pairs(path: str | Path, fmt: str | None, depth: int) -> list[tuple[str, str, int | None]]:
    if fmt == "tsv" or (fmt is None and _is_pair_file(path)):
        return list(read_pairs(path))
    run = read_run(path, fmt=fmt)  # type: ignore[arg-type]
    return [(qid, doc_id, None) for qid, doc_id in pool_run(run, depth)]


def _lookups(project: Project) -> tuple[dict[str, int], dict[str, int]]:
    topics = dict(Topic.objects.filter(project=project).values_list("qid", "id"))
    documents = dict(Document.objects.filter(project=project).values_list("doc_id", "id"))
    return topics, documents


def _resolve(
    path: str | Path, project: Project, pairs: Iterable[tuple[str, str, int | None]]
) -> list[tuple[int, int]]:
    """(topic id, document id) per pair; a pair naming an unknown topic or document is an error."""
    topics, documents = _lookups(project)
    resolved = []
    for qid, doc_id, line in pairs:
        if qid not in topics:
            raise _unknown(path, line, qid, doc_id, f"unknown topic {qid!r}: import the topics first")
        if doc_id not in documents:
            raise _unknown(
                path, line, qid, doc_id, f"unknown document {doc_id!r}: import the documents first"
            )
        resolved.append((topics[qid], documents[doc_id]))
    return resolved


def _ensure_tasks(project: Project, pairs: list[tuple[int, int]], *, is_gold: bool = False) -> int:
    """Create the missing tasks; returns how many were new."""
    existing = set(Task.objects.filter(project=project).values_list("topic_id", "document_id"))
    new = [
        Task(project=project, topic_id=topic_id, document_id=document_id, is_gold=is_gold)
        for topic_id, document_id in dict.fromkeys(pairs)
        if (topic_id, document_id) not in existing
    ]
    Task.objects.bulk_create(new, ignore_conflicts=True, batch_size=BATCH_SIZE)
    hotpath.tasks_analyze_after(len(new))
    return len(new)


def pool_import(
    *, project: Project, path: str | Path, fmt: str | None = None, depth: int = DEFAULT_DEPTH
) -> ImportResult:
    """Tasks for a pool: a run file cut at `depth` per topic, or a `qid<TAB>doc_id` list."""
    pairs = _pool_pairs(path, fmt, depth)
    resolved = _resolve(path, project, pairs)
    with transaction.atomic():
        created = _ensure_tasks(project, resolved)
    distinct = len(dict.fromkeys(resolved))
    return ImportResult("pool", str(path), distinct, created, 0, distinct - created)


@dataclass(frozen=True)
class PairsAdded:
    """What `pairs_add` did with the (qid, doc_id) pairs it was given (counted once each)."""

    requested: int
    created: int
    existing: int  # already tasks of the project
    missing_topic: int  # skipped: the project has no such topic
    missing_document: int  # skipped: the project has the topic but no such document

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def pairs_add(*, project: Project, pairs: Iterable[tuple[str, str]]) -> PairsAdded:
    """Tasks for (qid, doc_id) pairs that another part of the platform chose (a run's unjudged top ranks),
    skipping the pairs whose topic or document the project lacks, where `pool_import` refuses the whole
    file. Idempotent: a pair that is a task already is counted, not added again."""
    topics, documents = _lookups(project)
    distinct = list(dict.fromkeys(pairs))
    no_topic = sum(1 for qid, _ in distinct if qid not in topics)
    no_document = sum(1 for qid, doc_id in distinct if qid in topics and doc_id not in documents)
    resolved = [
        (topics[qid], documents[doc_id]) for qid, doc_id in distinct if qid in topics and doc_id in documents
    ]
    with transaction.atomic():
        created = _ensure_tasks(project, resolved)
    return PairsAdded(len(distinct), created, len(resolved) - created, no_topic, no_document)


def gold_import(*, project: Project, path: str | Path, fmt: str | None = None) -> ImportResult:
    """Gold labels from qrels; their pairs become (or stay) tasks, marked gold."""
    qrels = read_qrels(path, fmt=fmt)  # type: ignore[arg-type]
    qids = [str(qrels.qids[code]) for code in qrels.qid_codes.tolist()]
    rows = list(zip(qids, qrels.docno_strings(), qrels.rels.tolist(), strict=True))
    grades = set(project.grades)
    for qid, doc_id, grade in rows:
        if grade not in grades:
            raise _unknown(
                path, None, qid, doc_id, f"grade {grade} is not on the project's scale {sorted(grades)}"
            )
    resolved = _resolve(path, project, ((qid, doc_id, None) for qid, doc_id, _ in rows))
    with transaction.atomic():
        _ensure_tasks(project, resolved, is_gold=True)
        task_ids = {
            (topic_id, document_id): task_id
            for task_id, topic_id, document_id in Task.objects.filter(project=project).values_list(
                "id", "topic_id", "document_id"
            )
        }
        wanted = {task_ids[pair]: grade for pair, (_, _, grade) in zip(resolved, rows, strict=True)}
        before = dict(GoldLabel.objects.filter(task__project=project).values_list("task_id", "grade"))
        hotpath.tasks_mark_gold(sorted(wanted), batch=BATCH_SIZE)
        GoldLabel.objects.bulk_create(
            [GoldLabel(task_id=task_id, grade=grade) for task_id, grade in wanted.items()],
            update_conflicts=True,
            unique_fields=["task"],
            update_fields=["grade"],
            batch_size=BATCH_SIZE,
        )
    created = sum(1 for task_id in wanted if task_id not in before)
    updated = sum(1 for task_id, grade in wanted.items() if task_id in before and before[task_id] != grade)
    return ImportResult("gold", str(path), len(wanted), created, updated, len(wanted) - created - updated)


def count_lines(path: str | Path) -> int:
    """Lines in a file, fast (for a progress bar's total)."""
    if str(path).endswith(".gz"):
        return 0
    lines = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            lines += chunk.count(b"\n")
    return lines if os.path.getsize(path) else 0


# --- from the web and the API: at once, or in a job ---------------------------------------------------


def sync_max_bytes() -> int:
    return int(settings.IMPORT_SYNC_MAX_BYTES)


def import_request(
    *,
    project: Project,
    kind: str,
    upload: Any,
    fmt: str | None = None,
    depth: int | None = None,
    created_by: User | None = None,
) -> ImportResult | ImportJob:
    """Import an upload in the request if it is small (IMPORT_SYNC_MAX_BYTES, as uploaded and as it
    expands), else keep it and queue an `ImportJob`: no web request holds a large file's documents in
    memory, nor a worker for a minute. Raises FormatError for what is refused before a job would start."""
    name = upload_name(upload)
    size = upload_size(upload)
    too_large = upload_too_large(size)
    if too_large:  # before a byte of it is copied
        raise FormatError(name, None, too_large)
    limit = sync_max_bytes()
    if size is not None and size > limit:
        return import_job_create(
            project=project, kind=kind, upload=upload, fmt=fmt, depth=depth, created_by=created_by
        )
    suffixes = "".join(Path(name).suffixes[-2:])
    with tempfile.NamedTemporaryFile(suffix=suffixes) as handle:
        for chunk in upload.chunks():
            handle.write(chunk)
        handle.flush()
        # Where no gzipped file may expand past the limit (UPLOAD_MAX_DECOMPRESSED_BYTES below it), every
        # file is small enough here; one that expands too far is refused at once, with its 400.
        if max_decompressed_bytes() >= limit and _expands_past(handle.name, limit):
            return import_job_create(
                project=project, kind=kind, upload=upload, fmt=fmt, depth=depth, created_by=created_by
            )
        return import_file(
            project=project, kind=kind, path=handle.name, fmt=fmt or None, depth=depth, display_name=name
        )


def _expands_past(path: str, limit: int) -> bool:
    """Whether a `.gz` file decompresses to more than `limit` bytes (reading at most that much). A file
    that is not readable gzip answers False: the import in the request then names its error."""
    if not path.endswith(".gz"):
        return False
    expanded = 0
    try:
        with gzip.open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                expanded += len(chunk)
                if expanded > limit:
                    return True
    except (OSError, EOFError, zlib.error):
        return False
    return False


@transaction.atomic
def import_job_create(
    *,
    project: Project,
    kind: str,
    upload: Any,
    fmt: str | None = None,
    depth: int | None = None,
    created_by: User | None = None,
    enqueue: bool = True,
) -> ImportJob:
    """Keep the upload under MEDIA_ROOT and queue its import (on commit unless `enqueue` is False)."""
    if kind not in KINDS:
        raise ValueError(f"unknown import kind {kind!r}; expected one of {', '.join(KINDS)}")
    job = ImportJob(
        project=project, kind=kind, format=fmt or "", depth=depth, original_name=upload_name(upload)[:255],
        size=upload_size(upload) or 0, created_by=created_by,
    )  # fmt: skip
    return upload_job_keep(job, upload, enqueue=enqueue)


JobWithFile = TypeVar("JobWithFile", bound=Job)


def upload_job_keep(job: JobWithFile, upload: Any, *, enqueue: bool) -> JobWithFile:
    """Save a new job that reads an upload later (an import off the request): the upload kept under
    MEDIA_ROOT in the job's `file`, the job saved and, unless `enqueue` is False, queued on commit."""
    job.file.save(upload_name(upload), stored_file(upload), save=False)  # type: ignore[attr-defined]
    job.save()
    if enqueue:
        job_enqueue_on_commit(job)
    return job


def import_job_run(*, job_id: int, now: Any = None) -> JobOutcome:
    """Claim and run an import job. Idempotent: safe to run twice, or after a lost worker."""
    return job_run(ImportJob, pk=job_id, compute=_import_compute, store=_import_store, now=now)


def _import_compute(job: ImportJob, progress: ProgressFn) -> ImportResult:
    """The import itself, in its own transaction (all or nothing). A redo after a lost worker reads the
    file again: upserts on the same keys make a second run find the rows the first one committed."""
    path = job.file.path
    total = count_lines(path)  # 0 for a gzipped file: the note then counts without a fraction
    _, plural = NOUNS[job.kind]
    done = 0

    def advance(records: int) -> None:
        nonlocal done
        done += records
        progress(min(done / total, 0.99) if total else None, f"{done:,} {plural} imported")

    progress(0.0 if total else None, f"reading {job.original_name}")
    try:
        return import_file(
            project=job.project, kind=job.kind, path=path, fmt=job.format or None, depth=job.depth,
            display_name=job.original_name, progress=advance,
        )  # fmt: skip
    except FormatError:  # refused for good (the job fails with the reason): the file is not needed again
        job.file.storage.delete(str(job.file.name))
        raise


def _import_store(job: ImportJob, result: ImportResult) -> None:
    job.result = {**result.as_dict(), "summary": result.summary}
    stored = job.file.name
    if stored:  # the upload is no longer needed once imported
        transaction.on_commit(lambda: job.file.storage.delete(stored))
