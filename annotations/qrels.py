"""Qrels builds: versioned, immutable qrels from the reliable annotators' labels (seed 004 §21.3.2, see docs/sources.md).

A build is a job (`evalplatform.jobs`):

1. `qrels_build_create`: a `pending` row with its parameters (`evalcore.judging.QrelsParams`, the
   thresholds defaulting to the project's) and the project's next version number; the task
   `annotations.tasks.qrels_build` (heavy queue) is queued when the transaction commits.
2. `qrels_build_run`, the task's one call: claim, read the answers and pairs in one snapshot, compute
   with `evalcore.judging.qrels_compute` (see there for the filtering and aggregation), and write the
   judgments, counts and hash in one transaction, only while the claim holds. A finished build is never
   claimed again, so running the task twice, or after a crashed worker, gives the same rows.

Exports list the judgments sorted by (qid, doc_id) in code point order, whatever the database
collation, so the same answers and parameters give byte-identical files. `content_hash` is the sha256 of
the TREC file.

Adjudicated grades (`annotations.adjudication`) enter every build whose `use_adjudications` is on (the
default) as their own source: the pair's rel is the adjudicated grade. The flag is the build's
`use_adjudications` column, and its `counts` say how many pairs came from each source; a judgment's row keeps the
adjudication as the last entry of its `labels`, marked `"source": "adjudication"` (see `_row`).
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import CharField, Count, Func, IntegerField, Max, Sum, Value
from django.db.models.functions import Cast, Length
from django.http import HttpResponse

from annotations.models import (
    SOURCE_RULES,
    Adjudication,
    GoldLabel,
    MachineJudge,
    MachineLabel,
    Project,
    QrelsBuild,
    QrelsJudgment,
    Task,
)
from annotations.quality.services import project_answers, project_overrides, read_snapshot
from evalcore.judging import (
    DEFAULT_QRELS_PARAMS,
    EXPORT_FORMATS,
    Adjudicated,
    ExportFormat,
    Judgment,
    Pairs,
    QrelsError,
    QrelsParams,
    QrelsResult,
    qrels_compute,
    qrels_text,
    qrels_trec,
)
from evalplatform.auth import User
from evalplatform.jobs import JobOutcome, JobStatus, ProgressFn, job_enqueue_on_commit, job_run

__all__ = ["EXPORT_FORMATS", "QrelsError"]

# The task's hard time limit; the job's lease is renewed while it runs.
BUILD_TIME_LIMIT = 20 * 60


# --- creating -----------------------------------------------------------------------------------------


@transaction.atomic
def qrels_build_create(
    *,
    project: Project,
    created_by: User | None,
    tolerance: float = DEFAULT_QRELS_PARAMS.tolerance,
    aggregation: str = DEFAULT_QRELS_PARAMS.aggregation,
    min_accuracy: float | None = None,
    min_gold: int | None = None,
    min_labels: int = DEFAULT_QRELS_PARAMS.min_labels,
    use_adjudications: bool = DEFAULT_QRELS_PARAMS.use_adjudications,
    sources: str = "human",
    machine_judge: MachineJudge | None = None,
    enqueue: bool = True,
) -> QrelsBuild:
    """A pending build with the project's next version; queued on commit unless `enqueue` is False.

    The thresholds default to the project's (`min_gold_accuracy`, `min_gold_items`). `sources` is
    `human` (people only, the default), `machine` or `both` with `machine_judge` (`SOURCE_RULES`). Raises
    `QrelsError` for parameters a build refuses.
    """
    if sources not in SOURCE_RULES:
        raise QrelsError(f"Unknown sources {sources!r}; choose human, machine or both.")
    if (sources == "human") != (machine_judge is None):
        raise QrelsError("A build from machine labels names its machine judge; a human build names none.")
    if machine_judge is not None and machine_judge.project_id != project.pk:
        raise QrelsError("The machine judge belongs to another project.")
    params = QrelsParams(
        tolerance=float(tolerance),
        aggregation=aggregation,  # type: ignore[arg-type]
        min_accuracy=project.min_gold_accuracy if min_accuracy is None else float(min_accuracy),
        min_gold=project.min_gold_items if min_gold is None else int(min_gold),
        min_labels=int(min_labels),
        use_adjudications=bool(use_adjudications),
    )
    columns = params.as_dict()
    # Version numbers are taken under the project's row lock; the unique constraint backs it up.
    # FOR NO KEY UPDATE: annotators' answers (foreign-key checks on the project row) do not wait for it.
    Project.objects.select_for_update(no_key=True).filter(pk=project.pk).order_by().first()
    latest = QrelsBuild.objects.filter(project=project).aggregate(latest=Max("version"))["latest"] or 0
    build = QrelsBuild.objects.create(
        project=project, version=latest + 1, created_by=created_by, sources=sources,
        machine_judge=machine_judge, **columns,
    )  # fmt: skip
    if enqueue:
        job_enqueue_on_commit(build)
    return build


# --- running ------------------------------------------------------------------------------------------


def qrels_build_run(*, build_id: int, now: datetime | None = None) -> JobOutcome:
    """Claim, compute and store a build. Idempotent: safe to run twice, or after a crashed run."""
    return job_run(QrelsBuild, pk=build_id, compute=_compute, store=_store, now=now)


def project_pairs(project: Project) -> Pairs:
    return Pairs.from_rows(
        list(Task.objects.filter(project=project).values_list("id", "topic__qid", "document__doc_id"))
    )


def _compute(build: QrelsBuild, progress: ProgressFn) -> QrelsResult:
    progress(None, "reading the answers")
    with read_snapshot():
        answers = project_answers(build.project, with_times=True)
        pairs = project_pairs(build.project)
        overrides = project_overrides(build.project)
        adjudications = project_adjudications(build.project)
        gold = project_gold(build.project)
        machine = machine_judgments(build.machine_judge) if build.machine_judge is not None else []
    progress(0.5, "filtering and aggregating the labels")
    result = qrels_compute(
        answers, pairs=pairs, overrides=overrides, params=build.params, adjudications=adjudications, gold=gold
    )
    return result if build.sources == "human" else with_machine(result, machine, sources=build.sources)


def machine_judgments(judge: MachineJudge) -> list[Judgment]:
    """A machine judge's labels as judgments, sorted; each keeps its provenance as its one label, marked
    `"source": "machine"` (a machine's label is never counted as an annotator's)."""
    rows = MachineLabel.objects.filter(judge=judge).values_list(
        "topic__qid", "document__doc_id", "grade", "confidence"
    )
    provenance = {"source": "machine", "judge": judge.name, "version": judge.version}
    judgments = [
        Judgment(qid=qid, doc_id=doc_id, rel=grade, score=float(grade),
                 labels=[{**provenance, "grade": grade, "confidence": confidence}])
        for qid, doc_id, grade, confidence in rows
    ]  # fmt: skip
    return sorted(judgments, key=lambda judgment: (judgment.qid, judgment.doc_id))


def with_machine(result: QrelsResult, machine: list[Judgment], *, sources: str) -> QrelsResult:
    """The build's judgments by its sources' rule (`SOURCE_RULES`): the machine's alone, or people's
    where the human computation judged the pair and the machine's elsewhere. The counts say how many
    pairs came from each source (`sources.machine`) and the rule."""
    if sources == "machine":
        judgments = machine
        crowd = adjudication = 0
    else:
        human = {(j.qid, j.doc_id) for j in result.judgments}
        judgments = sorted(
            result.judgments + [j for j in machine if (j.qid, j.doc_id) not in human],
            key=lambda judgment: (judgment.qid, judgment.doc_id),
        )
        crowd, adjudication = result.counts["sources"]["crowd"], result.counts["sources"]["adjudication"]
    counts: Any = {
        **result.counts,
        "sources": {
            "crowd": crowd,
            "adjudication": adjudication,
            "machine": len(judgments) - crowd - adjudication,
        },
        "rule": SOURCE_RULES[sources],
    }
    counts["pairs"] = {**result.counts["pairs"], "kept": len(judgments)}
    return replace(result, judgments=judgments, counts=counts)


def project_gold(project: Project) -> dict[tuple[str, str], int]:
    """The gold grades by (qid, doc_id) (one query): the build lists the pairs it exports otherwise."""
    rows = GoldLabel.objects.filter(task__project=project).values_list(
        "task__topic__qid", "task__document__doc_id", "grade"
    )
    return {(qid, doc_id): grade for qid, doc_id, grade in rows}


def project_adjudications(project: Project) -> dict[int, Adjudicated]:
    """The project's adjudicated grades by task id, with who set them (one query)."""
    rows = Adjudication.objects.filter(project=project).values_list(
        "task_id", "grade", "adjudicator__username", "note", "updated_at"
    )
    return {
        task_id: Adjudicated(grade=grade, adjudicator=username or "", note=note, at=at)
        for task_id, grade, username, note, at in rows
    }


# The marker of the adjudication entry appended to a judgment row's `labels`.
_ADJUDICATION = {"source": "adjudication"}


def _row(build: QrelsBuild, judgment: Judgment) -> QrelsJudgment:
    """A judgment as a row: the crowd's labels, then the adjudication (if any) as a marked last entry."""
    extra = [{**_ADJUDICATION, **judgment.adjudication}] if judgment.adjudication is not None else []
    return QrelsJudgment(
        build=build, qid=judgment.qid, doc_id=judgment.doc_id, rel=judgment.rel, score=judgment.score,
        n_labels=len(judgment.labels), labels=judgment.labels + extra,
    )  # fmt: skip


def _judgment(qid: str, doc_id: str, rel: int, score: float, stored: list[dict[str, Any]]) -> Judgment:
    """The inverse of `_row`."""
    labels = [entry for entry in stored if entry.get("source") != "adjudication"]
    marked = [entry for entry in stored if entry.get("source") == "adjudication"]
    adjudication = {k: v for k, v in marked[0].items() if k != "source"} if marked else None
    return Judgment(qid=qid, doc_id=doc_id, rel=rel, score=score, labels=labels, adjudication=adjudication)


def _store(build: QrelsBuild, result: QrelsResult) -> None:
    QrelsJudgment.objects.filter(build=build).delete()
    QrelsJudgment.objects.bulk_create(
        [_row(build, judgment) for judgment in result.judgments], batch_size=2000
    )
    build.pairs_kept = len(result.judgments)
    build.counts = result.counts
    build.agreement = result.agreement
    build.annotators = result.annotators
    build.content_hash = hashlib.sha256(qrels_trec(result.judgments).encode()).hexdigest()


# --- exporting ----------------------------------------------------------------------------------------

_EXPORT_TYPES: dict[str, tuple[str, str]] = {
    "trec": ("txt", "text/plain"),
    "jsonl": ("jsonl", "application/x-ndjson"),
}


def build_judgments(build: QrelsBuild) -> list[Judgment]:
    """A finished build's judgments, sorted by (qid, doc_id) in code point order."""
    rows = QrelsJudgment.objects.filter(build=build).values_list("qid", "doc_id", "rel", "score", "labels")
    judgments = [_judgment(*row) for row in rows]
    return sorted(judgments, key=lambda judgment: (judgment.qid, judgment.doc_id))


def qrels_export(build: QrelsBuild, *, fmt: str) -> str:
    """The build's export as text: `trec` or `jsonl`. Raises `QrelsError` for an unfinished build."""
    if fmt not in EXPORT_FORMATS:
        raise QrelsError(f"Unknown export format {fmt!r}; choose trec or jsonl.")
    if build.status != JobStatus.DONE:
        raise QrelsError(f"Build v{build.version} is {build.status}; only a done build can be exported.")
    return qrels_text(build_judgments(build), fmt=fmt)  # type: ignore[arg-type]


class _Bytes(Func):
    """A text column's length in bytes (UTF-8, the export's encoding): PostgreSQL's `octet_length`, the
    length of the text as a blob in SQLite (whose `octet_length` is newer than Python's own SQLite)."""

    function = "OCTET_LENGTH"
    output_field = IntegerField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, template="LENGTH(CAST(%(expressions)s AS BLOB))", **extra)


def qrels_export_counts(build: QrelsBuild) -> tuple[int, int]:
    """The TREC export's queries and size in bytes, without writing it (a team's qrels source of the
    build shows them as an uploaded file's: `monitoring.files.uploads.qrels_source_for_build`), summed by
    the database in one statement: each line is `qid 0 docno rel` and a newline (`qrels_trec`). An
    unfinished build has no rows: (0, 0)."""
    line = _Bytes("qid") + _Bytes("doc_id") + Length(Cast("rel", output_field=CharField())) + Value(5)
    found = QrelsJudgment.objects.filter(build=build).aggregate(
        queries=Count("qid", distinct=True), size=Sum(line, output_field=IntegerField())
    )
    return int(found["queries"]), int(found["size"] or 0)


def qrels_export_response(build: QrelsBuild, *, fmt: ExportFormat) -> HttpResponse:
    """The build's export as a download (the page and the API share it)."""
    extension, content_type = _EXPORT_TYPES[fmt]
    response = HttpResponse(qrels_export(build, fmt=fmt), content_type=f"{content_type}; charset=utf-8")
    filename = f"{build.project.slug}-qrels-v{build.version}.{extension}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def build_summary(build: QrelsBuild) -> dict[str, Any]:
    """A build as JSON-ready data: the command's `--json` output."""
    return {
        "build": build.pk,
        "project": build.project.slug,
        "version": build.version,
        "status": build.status,
        "parameters": build.params.as_dict(),
        "sources": build.sources,
        "machine_judge": str(build.machine_judge) if build.machine_judge_id else None,
        "source_rule": build.source_rule,
        "pairs_kept": build.pairs_kept,
        "adjudicated": build.adjudicated,
        "counts": build.counts,
        "agreement": build.agreement,
        "annotators": build.annotators,
        "content_hash": build.content_hash,
    }
