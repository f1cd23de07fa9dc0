"""Machine judges' write paths and figures: importing labels, calibrating against people, routing to them.

- `judge_labels_import`: a file of labels (TREC qrels or JSON Lines, `evalcore.machine_judges.
  read_machine_labels`) into one judge (project, name, version), in one transaction: a bad line imports
  nothing and names the file, the line and the reason; the same file again changes nothing (labels are
  keyed by (judge, topic, document): a pair's label is created, updated or left as it is). Pairs whose
  topic or document the project lacks are counted and left out, never made tasks.
- `judge_calibration`: the judge against gold (`GoldLabel`) and against the human consensus (the latest
  done human-only qrels build), with `evalcore.machine_judges.calibrate_judge`, and Krippendorff's alpha
  with every annotator's label (`krippendorff_alpha_with_humans`). Computed on request: one query per
  source and one vectorised pass, linear in the judge's labels (see docs/machine-judges.md).
- `judge_route`: see `annotations.machine_judges.routing`.
"""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from django.db import transaction

from annotations.models import (
    Annotation,
    Document,
    GoldLabel,
    MachineJudge,
    MachineLabel,
    Project,
    QrelsBuild,
    QrelsJudgment,
    Topic,
)
from evalcore.agreement import LongLabels
from evalcore.errors import FormatError
from evalcore.jsonable import json_number
from evalcore.machine_judges import (
    JudgeCalibration,
    MachineLabels,
    calibrate_judge,
    krippendorff_alpha_with_humans,
    read_machine_labels,
)
from evalcore.machine_judges import calibration_json as evalcore_calibration_json
from evalplatform.auth import User
from evalplatform.jobs import JobStatus
from evalplatform.uploads import upload_chunks, upload_name, upload_size, upload_too_large

BATCH_SIZE = 2000

Pair = tuple[str, str]
#: One label as read: (qid, doc_id, grade, confidence or None, rationale).
LabelRow = tuple[str, str, int, float | None, str]


@dataclass(frozen=True)
class LabelsImported:
    """What `judge_labels_import` did: the judge, and the file's pairs counted once each."""

    judge: int
    name: str
    version: str
    judge_created: bool
    pairs: int  # graded pairs in the file
    created: int
    updated: int
    unchanged: int
    unjudged: int  # negative grades: pooled but not judged, left out
    missing_topic: int  # the project has no such topic: left out
    missing_document: int  # the project has the topic but no such document: left out

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def summary(self) -> str:
        missing = self.missing_topic + self.missing_document
        return (
            f"{self.name} v{self.version}: {self.pairs} labels, {self.created} new, {self.updated} changed, "
            f"{self.unchanged} unchanged; {missing} pairs outside the project left out "
            f"({self.missing_topic} unknown topics, {self.missing_document} unknown documents)"
        )


def _rows(labels: MachineLabels) -> list[LabelRow]:
    qrels = labels.qrels
    qids = np.asarray(qrels.qids)[qrels.qid_codes]
    docnos = [d.decode() if isinstance(d, bytes) else str(d) for d in qrels.docnos.to_pylist()]
    confidence = [None if not np.isfinite(c) else float(c) for c in labels.confidence]
    return [
        (str(q), d, int(g), c, r or "")
        for q, d, g, c, r in zip(qids, docnos, qrels.rels.tolist(), confidence, labels.rationale, strict=True)
    ]


def _check_scale(project: Project, path: str, rows: list[LabelRow]) -> None:
    scale = set(project.grades)
    for qid, doc_id, grade, _, _ in rows:
        if grade >= 0 and grade not in scale:
            raise FormatError(
                path,
                None,
                f"pair {qid} {doc_id}: grade {grade} is not on the project's scale ({min(scale)}-{max(scale)})",
            )


def judge_labels_import(
    *,
    project: Project,
    name: str,
    path: str | Path,
    version: str = "1",
    kind: str = MachineJudge.Kind.OTHER,
    model: str = "",
    configuration: str = "",
    created_by: User | None = None,
) -> LabelsImported:
    """Import a file of labels into the judge (project, name, version), made if new; see the module
    docstring. Raises `FormatError` (file, line, reason) for a bad file, with nothing saved."""
    rows = judge_labels_read(project=project, path=path)
    return judge_labels_store(
        project=project, rows=rows, name=name, version=version, kind=kind, model=model,
        configuration=configuration, created_by=created_by,
    )  # fmt: skip


def judge_labels_read(*, project: Project, path: str | Path) -> list[LabelRow]:
    """A file of labels as rows (qid, doc_id, grade, confidence, rationale), every grade on the project's
    scale; raises `FormatError` (file, line, reason) for a bad file. Reads, writes nothing."""
    rows = _rows(read_machine_labels(path))
    _check_scale(project, str(path), rows)
    return rows


def judge_labels_store(
    *,
    project: Project,
    rows: list[LabelRow],
    name: str,
    version: str = "1",
    kind: str = MachineJudge.Kind.OTHER,
    model: str = "",
    configuration: str = "",
    created_by: User | None = None,
) -> LabelsImported:
    """Write checked rows into the judge (project, name, version), made if new, in one transaction:
    a pair's label is created, updated or left as it is; pairs outside the project are counted."""
    topics = dict(Topic.objects.filter(project=project).values_list("qid", "id"))
    documents = dict(Document.objects.filter(project=project).values_list("doc_id", "id"))
    graded = [row for row in rows if row[2] >= 0]
    no_topic = sum(1 for row in graded if row[0] not in topics)
    no_document = sum(1 for row in graded if row[0] in topics and row[1] not in documents)
    known = [row for row in graded if row[0] in topics and row[1] in documents]
    with transaction.atomic():
        judge, judge_created = MachineJudge.objects.get_or_create(
            project=project,
            name=name,
            version=version,
            defaults={"kind": kind, "model": model, "configuration": configuration, "created_by": created_by},
        )
        existing = {
            (label.topic_id, label.document_id): label for label in MachineLabel.objects.filter(judge=judge)
        }
        new, changed = [], []
        for qid, doc_id, grade, confidence, rationale in known:
            key = (topics[qid], documents[doc_id])
            label = existing.get(key)
            if label is None:
                new.append(
                    MachineLabel(
                        judge=judge,
                        topic_id=key[0],
                        document_id=key[1],
                        grade=grade,
                        confidence=confidence,
                        rationale=rationale,
                    )  # fmt: skip
                )
            elif (label.grade, label.confidence, label.rationale) != (grade, confidence, rationale):
                label.grade, label.confidence, label.rationale = grade, confidence, rationale
                changed.append(label)
        MachineLabel.objects.bulk_create(new, batch_size=BATCH_SIZE)
        MachineLabel.objects.bulk_update(changed, ["grade", "confidence", "rationale"], batch_size=BATCH_SIZE)
    return LabelsImported(
        judge=judge.pk, name=judge.name, version=judge.version, judge_created=judge_created,
        pairs=len(graded), created=len(new), updated=len(changed),
        unchanged=len(known) - len(new) - len(changed), unjudged=len(rows) - len(graded),
        missing_topic=no_topic, missing_document=no_document,
    )  # fmt: skip


# --- reading the sources ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeLabels:
    """A judge's labels as aligned arrays, keyed by (qid, doc_id)."""

    pairs: list[Pair]
    grades: np.ndarray
    confidence: np.ndarray  # NaN where none

    def __len__(self) -> int:
        return len(self.pairs)


def judge_labels(judge: MachineJudge) -> JudgeLabels:
    rows = list(
        MachineLabel.objects.filter(judge=judge)
        .order_by("topic__qid", "document__doc_id")
        .values_list("topic__qid", "document__doc_id", "grade", "confidence")
    )
    return JudgeLabels(
        pairs=[(qid, doc_id) for qid, doc_id, _, _ in rows],
        grades=np.array([row[2] for row in rows], dtype=np.int64),
        confidence=np.array([np.nan if row[3] is None else row[3] for row in rows], dtype=float),
    )


def gold_grades(project: Project) -> dict[Pair, int]:
    rows = GoldLabel.objects.filter(task__project=project).values_list(
        "task__topic__qid", "task__document__doc_id", "grade"
    )
    return {(qid, doc_id): grade for qid, doc_id, grade in rows}


def consensus_build(project: Project) -> QrelsBuild | None:
    """The latest done build from people's labels alone: the human consensus a judge is measured against."""
    return (
        QrelsBuild.objects.filter(project=project, status=JobStatus.DONE, sources="human")
        .order_by("-version")
        .first()
    )


def consensus_grades(build: QrelsBuild | None) -> dict[Pair, int]:
    if build is None:
        return {}
    rows = QrelsJudgment.objects.filter(build=build).values_list("qid", "doc_id", "rel")
    return {(qid, doc_id): rel for qid, doc_id, rel in rows}


def human_labels(project: Project) -> LongLabels | None:
    """Every annotator's counted grade (answered in time, not skipped), items keyed `qid\\tdoc_id`."""
    rows = list(
        Annotation.objects.filter(project=project, grade__isnull=False, too_fast=False).values_list(
            "task__topic__qid", "task__document__doc_id", "annotator_id", "grade"
        )
    )
    if not rows:
        return None
    return LongLabels.from_records(
        [f"{qid}\t{doc_id}" for qid, doc_id, _, _ in rows],
        [r[2] for r in rows],
        np.array([r[3] for r in rows], dtype=np.int64),
    )


# --- calibration --------------------------------------------------------------------------------------------


def calibration_against(labels: JudgeLabels, reference: dict[Pair, int]) -> JudgeCalibration | None:
    """`calibrate_judge` on the pairs both the judge and `reference` graded (None when there are none)."""
    rows = [i for i, pair in enumerate(labels.pairs) if pair in reference]
    if not rows:
        return None
    index = np.array(rows, dtype=np.int64)
    return calibrate_judge(
        np.array([reference[labels.pairs[i]] for i in rows], dtype=np.int64),
        labels.grades[index],
        topics=np.array([labels.pairs[i][0] for i in rows]),
        confidence=labels.confidence[index],
    )


def calibration_json(report: JudgeCalibration | None) -> dict[str, Any] | None:
    """The figures as JSON-ready data, the shape of `calibrate_judge --json` (undefined figures null;
    `per_topic` and `per_confidence` empty lists where undefined)."""
    if report is None:
        return None
    data = evalcore_calibration_json(report)
    data.setdefault("per_topic", [])
    data.setdefault("per_confidence", [])
    return data


def alpha_with_humans(labels: JudgeLabels, humans: LongLabels | None) -> float | None:
    """Krippendorff's alpha (ordinal) of the annotators and the judge as one more coder."""
    if humans is None or not len(labels):
        return None
    known = {str(item): i for i, item in enumerate(humans.items)}
    keys = [f"{qid}\t{doc_id}" for qid, doc_id in labels.pairs]
    rows = [i for i, key in enumerate(keys) if key in known]
    if not rows:
        return None
    value = krippendorff_alpha_with_humans(
        humans, np.array([keys[i] for i in rows]), labels.grades[np.array(rows, dtype=np.int64)]
    )
    return json_number(value)


def judge_calibration(judge: MachineJudge) -> dict[str, Any]:
    """The judge's calibration page and API: against gold, against the human consensus, alpha with the
    annotators, and how many labels each comparison had."""
    labels = judge_labels(judge)
    build = consensus_build(judge.project)
    return {
        "judge": judge.pk,
        "name": judge.name,
        "version": judge.version,
        "labels": len(labels),
        "with_confidence": int(np.isfinite(labels.confidence).sum()),
        "consensus_build": build.version if build else None,
        "gold": calibration_json(calibration_against(labels, gold_grades(judge.project))),
        "consensus": calibration_json(calibration_against(labels, consensus_grades(build))),
        "krippendorff_alpha_with_humans": alpha_with_humans(labels, human_labels(judge.project)),
    }


def judge_labels_upload(*, project: Project, upload: Any, **judge: Any) -> LabelsImported:
    """`judge_labels_import` on an uploaded file, in the request: the page and the API call it for files up
    to IMPORT_SYNC_MAX_BYTES (`imports.labels_request`; a larger one is a job). Refused above the upload
    limit. Errors name the file as uploaded."""
    name = upload_name(upload)
    too_large = upload_too_large(upload_size(upload))
    if too_large:
        raise FormatError(name, None, too_large)
    with tempfile.NamedTemporaryFile(suffix="".join(Path(name).suffixes[-2:])) as handle:
        for chunk in upload_chunks(upload):
            handle.write(chunk)
        handle.flush()
        try:
            return judge_labels_import(project=project, path=handle.name, **judge)
        except FormatError as exc:
            raise FormatError(name, exc.line, exc.reason) from exc
