"""Machine judges' imports off the web request: a `MachineJudgeImport` job on the heavy queue.

- A search log (`click_log_request`) is always a job: fitting a click model by EM is seconds to minutes.
- A file of labels (`labels_request`) is imported in the request while it is small (IMPORT_SYNC_MAX_BYTES
  as uploaded, the rule of the project's other imports) and is a job above it.

The job reads and checks the file in `_compute` (a bad line fails it naming the file, the line and the
reason, with nothing stored) and writes the judge and its labels in `_store`, in the transaction that
marks it done, so its rows appear whole or not at all. A redo after a lost worker (one, as for the
project's imports) reads the file again and upserts the same rows: it changes nothing a finished run
wrote. The kept upload is deleted once the job is done or refused.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from annotations.imports import sync_max_bytes, upload_job_keep
from annotations.machine_judges import services
from annotations.machine_judges.clicks import (
    ClickImportParams,
    DerivedClicks,
    click_labels_store,
    click_log_derive,
    judge_conflict,
)
from annotations.models import MachineJudgeImport, Project
from evalcore.errors import FormatError
from evalplatform.auth import User
from evalplatform.jobs import JobError, JobOutcome, ProgressFn, job_run
from evalplatform.uploads import upload_name, upload_size, upload_too_large

#: The task's hard time limit; the job's lease is renewed while it runs.
TIME_LIMIT = 60 * 60
Source = MachineJudgeImport.Source


def _refuse_too_large(upload: Any) -> None:
    too_large = upload_too_large(upload_size(upload))
    if too_large:
        raise FormatError(upload_name(upload), None, too_large)


@transaction.atomic
def judge_import_create(
    *,
    project: Project,
    source: str,
    upload: Any,
    parameters: dict[str, Any],
    created_by: User | None = None,
    enqueue: bool = True,
) -> MachineJudgeImport:
    """Keep the upload under MEDIA_ROOT and queue its import (on commit unless `enqueue` is False)."""
    _refuse_too_large(upload)
    job = MachineJudgeImport(
        project=project, source=source, parameters=parameters, original_name=upload_name(upload)[:255],
        size=upload_size(upload) or 0, created_by=created_by,
    )  # fmt: skip
    return upload_job_keep(job, upload, enqueue=enqueue)


def click_log_request(
    *, project: Project, upload: Any, params: ClickImportParams, created_by: User | None = None
) -> MachineJudgeImport:
    """Queue the derivation of a judge's labels from an uploaded search log."""
    return judge_import_create(
        project=project, source=Source.CLICK_LOG, upload=upload, parameters=params.as_dict(),
        created_by=created_by,
    )  # fmt: skip


def labels_request(
    *, project: Project, upload: Any, created_by: User | None = None, **judge: Any
) -> services.LabelsImported | MachineJudgeImport:
    """Import an upload of labels now if it is small, else queue it (`judge`: name, version, kind, model,
    configuration). Raises `FormatError` for what is refused in the request."""
    _refuse_too_large(upload)
    size = upload_size(upload)
    if size is not None and size > sync_max_bytes():
        return judge_import_create(
            project=project, source=Source.LABELS, upload=upload, parameters=judge, created_by=created_by
        )
    return services.judge_labels_upload(project=project, upload=upload, created_by=created_by, **judge)


def judge_import_run(*, job_id: int, now: Any = None) -> JobOutcome:
    """Claim and run the job. Idempotent: safe to run twice, or after a lost worker."""
    return job_run(MachineJudgeImport, pk=job_id, compute=_compute, store=_store, now=now)


Computed = DerivedClicks | list[services.LabelRow]


def _compute(job: MachineJudgeImport, progress: ProgressFn) -> Computed:
    try:
        if job.source == Source.CLICK_LOG:
            derived = click_log_derive(
                project=job.project, path=job.file.path, params=ClickImportParams.from_dict(job.parameters),
                display_name=job.original_name, size=job.size, progress=progress,
            )  # fmt: skip
            conflict = judge_conflict(job.project, derived)
            if conflict:
                raise JobError(conflict)
            return derived
        progress(None, f"reading {job.original_name}")
        try:
            return services.judge_labels_read(project=job.project, path=job.file.path)
        except FormatError as exc:
            raise FormatError(job.original_name, exc.line, exc.reason) from None
    except (FormatError, JobError):  # refused for good (the job fails with the reason)
        job.file.storage.delete(str(job.file.name))
        raise


def _store(job: MachineJudgeImport, computed: Computed) -> None:
    extra: dict[str, Any] = {}
    if isinstance(computed, DerivedClicks):
        result = click_labels_store(project=job.project, derived=computed, created_by=job.created_by)
        extra = {"log": computed.summary}
    else:
        result = services.judge_labels_store(
            project=job.project, rows=computed, created_by=job.created_by, **job.parameters
        )
    job.judge_id = result.judge
    job.result = {**result.as_dict(), "summary": result.summary, **extra}
    stored = job.file.name
    if stored:  # the upload is no longer needed once imported
        transaction.on_commit(lambda: job.file.storage.delete(stored))
