"""A search log as a machine judge: `evalcore.clicks` fits a click model, and its graded pairs become the
labels of a judge of kind `click_model` (see docs/clicks.md, "A click model as a machine judge").

- `ClickImportParams`: the model, the log's format, the relevance boundaries of grades 1-4 and the grade
  mapping from the model's grades (0-4) onto the project's scale, with the judge's name and version.
- `click_log_derive`: read and fit (no database writes): the rows to store and the judge's configuration,
  a JSON object naming the model, its parameters, the mapping, the log (file, size, rows) and the fit.
- `click_labels_store`: write them as the judge's labels, in one transaction. A judge (name, version)
  holds the labels of one log fitted one way: the same log and parameters again change nothing, another
  log or other parameters under the same version are refused (a new version is a new judge).

A log's query is matched to a topic by its qid, else by its title (the query as typed, compared without
case and extra spaces), before the fit: the spellings of one topic are one query to the model. A judged
pair whose query matches no topic, or whose document the project lacks, is counted and left out, as in an
upload of labels.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from django.db import transaction

from annotations.machine_judges.services import LabelRow, LabelsImported, judge_labels_store
from annotations.models import MachineJudge, Project
from evalcore.clicks import FORMATS, ClickJudgments, ClickLog, ClickModelParams, fit, read_click_log
from evalcore.errors import FormatError
from evalcore.jsonable import json_number
from evalplatform.auth import User
from evalplatform.jobs import JobError, ProgressFn

#: The grades a click model gives (0-4), which `grade_map` sends onto the project's scale.
CLICK_GRADES = (0, 1, 2, 3, 4)
DEFAULT_MIN_IMPRESSIONS = 10


def default_grade_map(project: Project) -> tuple[int, ...]:
    """Each click grade onto the project's largest grade not above it (the smallest where none is): the
    identity on the default 0-4 scale, 0,1,2,3,3 on a 0-3 one."""
    scale = sorted(project.grades)
    return tuple(max((g for g in scale if g <= click), default=scale[0]) for click in CLICK_GRADES)


def grade_map_error(project: Project, grade_map: tuple[int, ...]) -> str | None:
    """Why a grade mapping does not fit the project (None when it does)."""
    scale = set(project.grades)
    if len(grade_map) != len(CLICK_GRADES):
        return "give five grades, for the click grades 0 to 4"
    if any(g not in scale for g in grade_map):
        return f"every grade must be on the project's scale ({', '.join(map(str, sorted(scale)))})"
    if any(b < a for a, b in zip(grade_map, grade_map[1:], strict=False)):
        return "the grades must not decrease (a higher click grade never maps lower)"
    return None


@dataclass(frozen=True)
class ClickImportParams:
    """How to turn a log into a judge's labels (see `evalcore.clicks.ClickModelParams`); `name` empty:
    `clicks-<model>`; `thresholds` and `grade_map` None: the model's and the project's defaults."""

    model: str
    log_format: str = "csv"
    name: str = ""
    version: str = "1"
    min_impressions: int = DEFAULT_MIN_IMPRESSIONS
    thresholds: tuple[float, ...] | None = None
    grade_map: tuple[int, ...] | None = None
    min_dwell: float | None = None
    max_iterations: int | None = None

    def __post_init__(self) -> None:
        if self.log_format not in FORMATS:
            raise ValueError(f"unknown log format {self.log_format!r}; choose from {', '.join(FORMATS)}")
        self.click_params()  # the model's own checks

    @property
    def judge_name(self) -> str:
        return self.name or f"clicks-{self.model}"

    def click_params(self) -> ClickModelParams:
        return ClickModelParams(
            self.model,  # type: ignore[arg-type]
            min_impressions=self.min_impressions,
            thresholds=self.thresholds,
            max_iterations=self.max_iterations,
            min_dwell=self.min_dwell,
        )

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("thresholds", "grade_map"):
            data[key] = None if data[key] is None else list(data[key])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClickImportParams:
        values = dict(data)
        for key in ("thresholds", "grade_map"):
            values[key] = None if values.get(key) is None else tuple(values[key])
        return cls(**values)


@dataclass(frozen=True)
class DerivedClicks:
    """What a fit gives the judge: its rows (qid, doc_id, project grade, None, rationale), its
    configuration (JSON text) and the log's figures."""

    params: ClickImportParams
    rows: list[LabelRow]
    configuration: str
    summary: dict[str, Any]


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def _queries_as_topics(project: Project, log: ClickLog) -> ClickLog:
    """The log with each query that names a topic (by qid, else by a title only one topic has) renamed to
    its qid, so that spellings of one topic are one query to the model; other queries keep their text."""
    rows = list(project.topics.values_list("qid", "title"))
    by_title: dict[str, list[str]] = {}
    for qid, title in rows:
        by_title.setdefault(_normal(title), []).append(qid)
    titles = {title: qids[0] for title, qids in by_title.items() if len(qids) == 1}
    qids = {qid for qid, _ in rows}
    names = [query if query in qids else titles.get(_normal(query), query) for query in log.queries]
    distinct = list(dict.fromkeys(names))
    code = {name: i for i, name in enumerate(distinct)}
    recode = np.fromiter((code[name] for name in names), dtype=np.int32, count=len(names))
    return replace(log, query=recode[log.query], queries=distinct)


def click_log_derive(
    *,
    project: Project,
    path: str | Path,
    params: ClickImportParams,
    display_name: str | None = None,
    size: int | None = None,
    progress: ProgressFn | None = None,
) -> DerivedClicks:
    """Read the log, fit the model and map its judged pairs onto the project (no writes). Raises
    `FormatError` naming `display_name`, the line and the reason for a bad log."""
    name = display_name or str(path)
    grade_map = params.grade_map or default_grade_map(project)
    wrong = grade_map_error(project, grade_map)
    if wrong:
        raise JobError(f"grade mapping {','.join(map(str, grade_map))}: {wrong}")
    step = progress or (lambda fraction, note: None)
    step(0.0, f"reading {name}")
    try:
        log = read_click_log(path, params.log_format)
    except FormatError as exc:
        raise FormatError(name, exc.line, exc.reason) from None
    step(0.3, f"fitting {params.model} to {log.num_rows:,} impressions")
    judgments = fit(_queries_as_topics(project, log), params.click_params())
    step(0.9, "matching the pairs to the project's topics")
    qids = set(project.topics.values_list("qid", flat=True))
    rows, unmatched = _rows(judgments, qids, np.asarray(grade_map, dtype=np.int64))
    summary = _summary(judgments, name=name, size=size, unmatched=unmatched, log_format=params.log_format)
    configuration = {
        "click_model": params.model,
        "min_impressions": params.min_impressions,
        "thresholds": list(judgments.params.grade_thresholds),
        "grade_map": {str(click): int(grade) for click, grade in zip(CLICK_GRADES, grade_map, strict=True)},
        "min_dwell": params.min_dwell,
        "max_iterations": judgments.params.iteration_cap,
        "tolerance": judgments.params.tolerance,
        "log": {key: summary[key] for key in ("file", "size", "format", "rows", "sessions", "pairs")},
        "fit": {key: summary[key] for key in ("iterations", "converged", "positions")},
    }
    return DerivedClicks(params, rows, json.dumps(configuration, sort_keys=True), summary)


def _rows(judgments: ClickJudgments, qids: set[str], grade_map: np.ndarray) -> tuple[list[LabelRow], int]:
    """The judged pairs whose query is a topic: (qid, doc_id, mapped grade, None, rationale); and how many
    judged pairs had a query matching no topic."""
    judged = np.flatnonzero(judgments.judged)
    grade = grade_map[judgments.grade[judged].astype(np.int64)].tolist()
    relevance = judgments.relevance[judged].tolist()
    shown, clicks = judgments.impressions[judged].tolist(), judgments.clicks[judged].tolist()
    queries = [judgments.queries[q] for q in judgments.pair_query[judged].tolist()]
    docs = [judgments.docs[d] for d in judgments.pair_doc[judged].tolist()]
    model = judgments.params.model
    rows: list[LabelRow] = [
        (query, doc, g, None, f"{model} relevance {rel:.4f}: {c} clicks in {n} impressions")
        for query, doc, g, rel, n, c in zip(queries, docs, grade, relevance, shown, clicks, strict=True)
        if query in qids
    ]
    return rows, len(queries) - len(rows)


def _summary(
    judgments: ClickJudgments, *, name: str, size: int | None, unmatched: int, log_format: str
) -> dict[str, Any]:
    return {
        "file": name,
        "size": size,
        "format": log_format,
        "rows": judgments.rows,
        "sessions": judgments.sessions,
        "clicks": int(judgments.clicks.sum()),
        "pairs": int(judgments.pair_query.size),
        "judged_pairs": int(judgments.judged.sum()),
        "unknown_queries": unmatched,
        "grades": {str(grade): count for grade, count in judgments.grade_counts().items()},
        "iterations": judgments.iterations,
        "converged": judgments.converged,
        "positions": {k: [json_number(v) for v in values] for k, values in judgments.positions.items()},
    }


def judge_conflict(project: Project, derived: DerivedClicks) -> str | None:
    """Why the judge (name, version) cannot take these labels: it exists and holds another log's, or the
    same log's fitted otherwise (None when it is new, or holds exactly these)."""
    judge = MachineJudge.objects.filter(
        project=project, name=derived.params.judge_name, version=derived.params.version
    ).first()
    if judge is None or (
        judge.kind == MachineJudge.Kind.CLICK_MODEL and judge.configuration == derived.configuration
    ):
        return None
    return (
        f"the judge {judge} already holds labels from another source or configuration; "
        "give a new version (a new log or new parameters is a new judge)"
    )


def click_labels_store(
    *, project: Project, derived: DerivedClicks, created_by: User | None = None
) -> LabelsImported:
    """Write the derived labels as the judge's, all or nothing (see the module docstring)."""
    with transaction.atomic():
        conflict = judge_conflict(project, derived)
        if conflict:
            raise JobError(conflict)
        return judge_labels_store(
            project=project, rows=derived.rows, name=derived.params.judge_name, version=derived.params.version,
            kind=MachineJudge.Kind.CLICK_MODEL, model=derived.params.model, configuration=derived.configuration,
            created_by=created_by,
        )  # fmt: skip


def click_log_import(
    *,
    project: Project,
    path: str | Path,
    params: ClickImportParams,
    display_name: str | None = None,
    created_by: User | None = None,
) -> tuple[LabelsImported, DerivedClicks]:
    """Derive and store at once (the command and the demo; the web and the API queue a job)."""
    derived = click_log_derive(
        project=project, path=path, params=params, display_name=display_name, size=Path(path).stat().st_size
    )
    return click_labels_store(project=project, derived=derived, created_by=created_by), derived
