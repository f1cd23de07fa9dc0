"""One service per kind of thing a team makes: its edit (name, description, tags, archived), what else goes
when it is deleted (`delete_consequences`, with counts), and its deletion (`item_delete`).

The metric table names a job's values by (label, id), so deleting an evaluation forgets its values (the
post-delete hook of `series.services.metric_values_follow`) and the leaderboards, charts and alert rules
that read the table stop seeing them. A rename moves the values of the object's evaluations to the series of
the new name (series are keyed by a run's or a set's name), so the history follows the object; alert
rules keep watching the series they named. Files in storage are removed once the deletion commits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.db import models, transaction
from django.db.models.fields.files import FieldFile
from django.template.defaultfilters import filesizeformat

from evalplatform.errors import InputError
from evalplatform.jobs import JobStatus
from evalplatform.models import Team
from monitoring.evaluations import selectors as evaluation_selectors
from monitoring.models import (
    AlertRule,
    Comparison,
    Evaluation,
    FraudScoreEvaluation,
    FraudScoreSet,
    QrelsSource,
    RecommendationEvaluation,
    RecommendationSet,
    Run,
)
from monitoring.recsys_fraud import selectors as recsys_fraud_selectors
from series.models import MetricValue, Series
from series.services import job_type_of
from series.subjects import fraud_series, recsys_series, run_series

#: The most tags an object keeps, and the longest tag.
MAX_TAGS = 50
MAX_TAG_LENGTH = 100


@dataclass(frozen=True)
class Consequence:
    """One line of what goes with a deletion: `what` names it for tests and the API, `count` says how many."""

    what: str
    count: int
    text: str


@dataclass(frozen=True)
class Kind:
    """A kind of object a team edits: `slug` is its URL part, `noun` how pages name it."""

    slug: str
    noun: str
    prefix: str  # of its URL names: "<prefix>-edit", "-archive", "-delete"
    model: type[models.Model]
    get: Callable[[Team, Any], Any]
    consequences: Callable[[Any], list[Consequence]]
    files: Callable[[Any], list[FieldFile]]
    list_anchor: str  # where the team page lists it
    archivable: bool = True  # False: renamed and deleted, never archived (no `archived` field)

    @property
    def actions(self) -> tuple[str, ...]:
        return ("edit", "archive", "delete") if self.archivable else ("edit", "delete")

    def title(self, item: Any) -> str:
        return f"{self.noun} {display_name(item)}"


#: Kinds whose name may be blank (named by what they are made of).
NAME_OPTIONAL = (Evaluation, Comparison, RecommendationEvaluation, FraudScoreEvaluation)


def display_name(item: Any) -> str:
    """An object's name as pages show it (an evaluation without a name of its own: its run on its qrels; a
    comparison: its number)."""
    if isinstance(item, Evaluation) and not item.name:
        return f"#{item.pk} ({item.run.name} on {item.qrels.name})"
    if isinstance(item, Comparison | RecommendationEvaluation | FraudScoreEvaluation) and not item.name:
        return f"#{item.pk}"
    return str(item.name)


def archived_refusal(item: Any, noun: str) -> str:
    """Why an archived run or qrels source is refused for new work (evaluations, comparisons, fusions and
    pools list only those not archived; the forms and the API say this of one chosen anyway)."""
    return (
        f"The {noun} {item.name} (#{item.pk}) is archived: unarchive it (on its page, or PATCH "
        '{"archived": false}) to use it again.'
    )


def _plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


def _values_of(jobs: models.QuerySet[Any]) -> int:
    return MetricValue.objects.filter(
        job_type=job_type_of(jobs.model()), job_id__in=jobs.values("pk")
    ).count()


def _file_line(files: list[tuple[str, int]]) -> Consequence:
    """`files`: (name, bytes) of each stored file."""
    names = ", ".join(f"{name} ({filesizeformat(size)})" for name, size in files)
    return Consequence("files", len(files), f"Its stored {'file' if len(files) == 1 else 'files'}: {names}.")


# --- what goes with each kind -------------------------------------------------------------------------


def _run_consequences(run: Run) -> list[Consequence]:
    evaluations = Evaluation.objects.filter(run=run)
    boards = evaluations.filter(status=JobStatus.DONE).values("qrels").distinct().count()
    comparisons = Comparison.objects.filter(runs=run).distinct().count()
    pools = run.judging_pools.count()
    values = _values_of(evaluations)
    return [
        Consequence("evaluations", evaluations.count(), f"{_plural(evaluations.count(), 'evaluation')} of it, with "
                    f"{_plural(values, 'metric value')} in the team's series and charts."),
        Consequence("leaderboards", boards, f"Its row on {_plural(boards, 'leaderboard')}."),
        Consequence("comparisons", comparisons, f"{_plural(comparisons, 'comparison')} it took part in "
                    "(with every other run's results in them)."),
        Consequence("pools", pools, f"Its place in the provenance of {_plural(pools, 'judging pool')} (the pools "
                    "and their documents stay)."),
        _file_line([(run.original_name or str(run.file.name), run.size)]),
    ]  # fmt: skip


def _run_files(run: Run) -> list[FieldFile]:
    return [run.file] if run.file else []


def _qrels_consequences(source: QrelsSource) -> list[Consequence]:
    evaluations = Evaluation.objects.filter(qrels=source)
    runs = evaluations.values("run").distinct().count()
    comparisons = source.comparisons.count()
    analyses = source.reuse_analyses.count()
    series = Series.objects.filter(kind=Series.Kind.RUN, object_id=source.pk)
    rules = AlertRule.objects.filter(series__in=series).count()
    lines = [
        Consequence("evaluations", evaluations.count(), f"{_plural(evaluations.count(), 'evaluation')} on it "
                    f"({_plural(runs, 'run')}; the runs stay), with {_plural(_values_of(evaluations), 'metric value')}."),
        Consequence("leaderboards", 1, f"Its leaderboard of {_plural(runs, 'run')}."),
        Consequence("comparisons", comparisons, f"{_plural(comparisons, 'comparison')} on it."),
        Consequence("analyses", analyses, f"{_plural(analyses, 'reusability analysis', 'reusability analyses')}."),
        Consequence("series", series.count(), f"{_plural(series.count(), 'series', 'series')} of its runs, and "
                    f"{_plural(rules, 'alert rule')} watching them."),
    ]  # fmt: skip
    if source.build is not None:
        lines.append(Consequence("build", 0, f"The judging project's build v{source.build.version} stays."))
    else:
        lines.append(_file_line([(source.original_name or str(source.file.name), source.size)]))
    return lines


def _qrels_files(source: QrelsSource) -> list[FieldFile]:
    return [source.file] if source.file else []


def _evaluation_consequences(evaluation: Evaluation) -> list[Consequence]:
    values = _values_of(Evaluation.objects.filter(pk=evaluation.pk))
    newest = (
        Evaluation.objects.filter(
            run_id=evaluation.run_id, qrels_id=evaluation.qrels_id, status=JobStatus.DONE
        )
        .order_by("-finished_at", "-pk")
        .values_list("pk", flat=True)
        .first()
    )
    shown = int(newest == evaluation.pk)
    board = (
        f"The run's row on the leaderboard of {evaluation.qrels.name} (an older evaluation of it takes its place, "
        "if any)." if shown else f"Nothing on the leaderboard of {evaluation.qrels.name} (it shows a newer one)."
    )  # fmt: skip
    return [
        Consequence("values", values, f"{_plural(values, 'metric value')} in the series of run {evaluation.run.name} "
                    "(its charts and alert rules stop reading them)."),
        Consequence("leaderboards", shown, board),
        Consequence("run", 0, f"The run {evaluation.run.name} and the qrels {evaluation.qrels.name} stay."),
    ]  # fmt: skip


def _comparison_consequences(comparison: Comparison) -> list[Consequence]:
    values = _values_of(Comparison.objects.filter(pk=comparison.pk))
    pairs = comparison.pairs.count()
    runs = ", ".join(sorted(run.name for run in comparison.runs.all()))
    return [
        Consequence("pairs", pairs, f"{_plural(pairs, 'paired test')} (every pair of runs on every measure) "
                    "with their per-query differences, and its overlap and many-systems statistics."),
        Consequence("values", values, f"{_plural(values, 'metric value')} (each run's mean and interval); the "
                    "runs' own evaluations and their series keep theirs."),
        Consequence("runs", 0, f"The runs ({runs}) and the qrels {comparison.qrels.name} stay."),
    ]  # fmt: skip


def _set_evaluation_consequences(
    evaluation: RecommendationEvaluation | FraudScoreEvaluation,
) -> list[Consequence]:
    values = _values_of(type(evaluation).objects.filter(pk=evaluation.pk))
    comparisons = evaluation.comparisons_as_a.count() + evaluation.comparisons_as_b.count()
    owner = (
        evaluation.recommendation_set
        if isinstance(evaluation, RecommendationEvaluation)
        else evaluation.score_set
    )
    return [
        Consequence("values", values, f"{_plural(values, 'metric value')} in the series of {owner.name} (its "
                    "charts and alert rules stop reading them)."),
        Consequence("comparisons", comparisons, f"{_plural(comparisons, 'comparison')} it takes part in."),
        Consequence("set", 0, f"The set {owner.name} and its other evaluations stay."),
    ]  # fmt: skip


def _no_files(item: Any) -> list[FieldFile]:
    return []


def _set_consequences(
    item: RecommendationSet | FraudScoreSet, evaluations: models.QuerySet[Any]
) -> list[Consequence]:
    if isinstance(item, RecommendationSet):
        files = [
            (item.display_name(role), int(item.files.get(role, {}).get("size") or 0))
            for role in item.stored()
        ]
    else:
        files = [(item.original_name or str(item.file.name), item.size)]
    return [
        Consequence("evaluations", evaluations.count(), f"{_plural(evaluations.count(), 'evaluation')} of it, with "
                    f"{_plural(_values_of(evaluations), 'metric value')} in the team's series and charts."),
        _file_line(files),
    ]  # fmt: skip


def _set_files(item: RecommendationSet | FraudScoreSet) -> list[FieldFile]:
    if isinstance(item, RecommendationSet):
        return list(item.stored().values())
    return [item.file] if item.file else []


KINDS: dict[str, Kind] = {
    kind.slug: kind
    for kind in (
        Kind("runs", "run", "run", Run, lambda team, pk: evaluation_selectors.get_run(team=team, pk=pk),
             _run_consequences, _run_files, "run-table"),
        Kind("qrels", "qrels", "qrels", QrelsSource, lambda team, pk: evaluation_selectors.get_qrels_source(team=team, pk=pk),
             _qrels_consequences, _qrels_files, "qrels-table"),
        Kind("evaluations", "evaluation", "evaluation", Evaluation,
             lambda team, pk: evaluation_selectors.get_evaluation(team=team, pk=pk),
             _evaluation_consequences, _no_files, "evaluation-table"),
        Kind("comparisons", "comparison", "comparison", Comparison,
             lambda team, pk: evaluation_selectors.get_comparison(team=team, pk=pk),
             _comparison_consequences, _no_files, "comparison-table", archivable=False),
        Kind("recommendations/evaluations", "recommendation evaluation", "recsys-evaluation",
             RecommendationEvaluation,
             lambda team, pk: recsys_fraud_selectors.get_recommendation_evaluation(team=team, pk=pk),
             _set_evaluation_consequences, _no_files, "recsys-fraud-table", archivable=False),
        Kind("fraud-scores/evaluations", "fraud evaluation", "fraud-evaluation", FraudScoreEvaluation,
             lambda team, pk: recsys_fraud_selectors.get_fraud_evaluation(team=team, pk=pk),
             _set_evaluation_consequences, _no_files, "recsys-fraud-table", archivable=False),
        Kind("recommendations", "recommendation set", "recsys", RecommendationSet,
             lambda team, pk: recsys_fraud_selectors.get_recommendation_set(team=team, pk=pk),
             lambda item: _set_consequences(item, RecommendationEvaluation.objects.filter(recommendation_set=item)),
             _set_files, "recsys-fraud-table"),
        Kind("fraud-scores", "fraud score set", "fraud", FraudScoreSet,
             lambda team, pk: recsys_fraud_selectors.get_fraud_score_set(team=team, pk=pk),
             lambda item: _set_consequences(item, FraudScoreEvaluation.objects.filter(score_set=item)),
             _set_files, "recsys-fraud-table"),
    )
}  # fmt: skip


def kind_of(item: models.Model) -> Kind:
    return next(kind for kind in KINDS.values() if isinstance(item, kind.model))


def delete_consequences(item: models.Model) -> list[Consequence]:
    """What else goes when `item` is deleted, with counts (the confirmation page and the tests read it)."""
    return kind_of(item).consequences(item)


# --- edit ---------------------------------------------------------------------------------------------


def clean_tags(tags: Iterable[str]) -> list[str]:
    """Tags stripped, blanks and repeats dropped; too many or too long is an `InputError`."""
    cleaned = list(dict.fromkeys(tag.strip() for tag in tags if tag.strip()))
    if len(cleaned) > MAX_TAGS:
        raise InputError(f"At most {MAX_TAGS} tags.")
    if any(len(tag) > MAX_TAG_LENGTH for tag in cleaned):
        raise InputError(f"A tag has at most {MAX_TAG_LENGTH} characters.")
    return cleaned


@transaction.atomic
def item_update(
    *,
    item: Any,
    name: str | None = None,
    description: str | None = None,
    tags: Iterable[str] | None = None,
    archived: bool | None = None,
) -> Any:
    """Change what is given of an object's name, description, tags and archived flag (None: unchanged).

    A run or set renamed takes its evaluations' values to the series of its new name."""
    changed: list[str] = []
    old_name = item.name
    if name is not None:
        name = name.strip()
        if not name and not isinstance(item, NAME_OPTIONAL):
            raise InputError("Give a name.")
        if len(name) > 200:
            raise InputError("A name has at most 200 characters.")
        item.name = name
        changed.append("name")
    if description is not None:
        item.description = description.strip()
        changed.append("description")
    if tags is not None:
        item.tags = clean_tags(tags)
        changed.append("tags")
    if archived is not None:
        if not kind_of(item).archivable:
            raise InputError(f"A {kind_of(item).noun} is not archived: delete it, or keep it.")
        item.archived = bool(archived)
        changed.append("archived")
    if changed:
        item.save(update_fields=changed)
    if "name" in changed and item.name != old_name:
        _values_follow_rename(item)
    return item


def _move(jobs: models.QuerySet[Any], kind: str, to: Callable[[Any], Series]) -> None:
    for job in jobs:
        MetricValue.objects.filter(job_type=job_type_of(job), job_id=job.pk, series__kind=kind).update(
            series=to(job)
        )


def _values_follow_rename(item: Any) -> None:
    if isinstance(item, Run):
        _move(
            item.evaluations.select_related("qrels"),
            Series.Kind.RUN,
            lambda job: run_series(job.qrels, item.name, url=item.get_absolute_url()),
        )
    elif isinstance(item, RecommendationSet):
        series = recsys_series(item.team_id, item.name, url=item.get_absolute_url())
        _move(item.evaluations.all(), Series.Kind.RECSYS, lambda job: series)
    elif isinstance(item, FraudScoreSet):
        series = fraud_series(item.team_id, item.name, url=item.get_absolute_url())
        _move(item.evaluations.all(), Series.Kind.FRAUD, lambda job: series)
    elif isinstance(item, QrelsSource):
        # Its runs' series are keyed by its id: only their labels ("run X on <qrels>") change.
        for name in Series.objects.filter(kind=Series.Kind.RUN, object_id=item.pk).values_list(
            "name", flat=True
        ):
            run_series(item, name)
    # An evaluation's name is no part of any series key.


# --- delete -------------------------------------------------------------------------------------------


@transaction.atomic
def item_delete(*, item: Any) -> None:
    """Delete an object with what goes with it (`delete_consequences`), and its stored files once the
    deletion commits. A worker still computing one of its jobs finds its row gone when it stores, and
    discards its result."""
    kind = kind_of(item)
    stored = [(f.storage, f.name) for f in kind.files(item) if f.name]
    if isinstance(item, Run):
        # A comparison without one of its runs would be left with some of its rows gone.
        Comparison.objects.filter(runs=item).delete()
    if isinstance(item, QrelsSource):
        # Its runs' series name it; the alert rules watching them go with them.
        Series.objects.filter(kind=Series.Kind.RUN, object_id=item.pk).delete()
    item.delete()
    for storage, name in stored:
        transaction.on_commit(partial(storage.delete, name))
