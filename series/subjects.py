"""The series of each kind of subject, keyed one way for every writer and reader.

The functions take the subjects by duck type (this app imports neither `annotations` nor `monitoring`):
an embedding stream, a qrels source and a run name, a team and a set name, a judging project, a project
and an annotator. Each returns the subject's series, created on first use; a writer calls it when its
job stores values, and an alert rule's form calls it to watch a series that has no value yet (a rule on
the nightly run, before the first nightly evaluation).
"""

from __future__ import annotations

from typing import Any

from series.models import Series
from series.services import series_get, series_key


def page_url(subject: Any) -> str:
    """The subject's page (`get_absolute_url`), or "" when it has none routed here."""
    try:
        return str(subject.get_absolute_url())
    except Exception:  # a subject whose pages are not routed here
        return ""


def stream_series(stream: Any) -> Series:
    """An embedding stream's monitor runs (the embedding family)."""
    return series_get(
        kind=Series.Kind.STREAM, key=series_key(stream.pk), team=stream.team_id, object_id=stream.pk,
        name=stream.slug, label=f"stream {stream.name}", url=page_url(stream),
    )  # fmt: skip


def run_series(qrels: Any, run_name: str, *, url: str = "") -> Series:
    """The evaluations of a team's runs named `run_name` on one qrels source (a nightly run)."""
    return series_get(
        kind=Series.Kind.RUN, key=series_key(qrels.pk, run_name), team=qrels.team_id, object_id=qrels.pk,
        name=run_name, label=f"run {run_name} on {qrels.name}", url=url,
    )  # fmt: skip


def recsys_series(team_id: int, set_name: str, *, url: str = "") -> Series:
    """The evaluations of a team's recommendation sets of one name (the recsys family)."""
    return series_get(
        kind=Series.Kind.RECSYS, key=series_key(team_id, set_name), team=team_id, name=set_name,
        label=f"recommendations {set_name}", url=url,
    )  # fmt: skip


def fraud_series(team_id: int, set_name: str, *, url: str = "") -> Series:
    """The evaluations of a team's fraud score sets of one name (the fraud family)."""
    return series_get(
        kind=Series.Kind.FRAUD, key=series_key(team_id, set_name), team=team_id, name=set_name,
        label=f"fraud scores {set_name}", url=url,
    )  # fmt: skip


def project_series(project: Any, *, url: str = "") -> Series:
    """A judging project's quality recomputes: its agreement and accuracy on gold (the agreement family).

    Every writer passes the same `url`, the project's quality page (`annotations.quality.services.
    project_quality_url`): the series and its alerts are read by the team's members, who may read that
    page without being members of the project; the project's own page would be a 404 to them."""
    return series_get(
        kind=Series.Kind.PROJECT, key=series_key(project.pk), team=project.team_id, object_id=project.pk,
        name=project.slug, label=f"project {project.name}", url=url,
    )  # fmt: skip


def annotator_series(project: Any, user_id: int, username: str, *, url: str = "") -> Series:
    """One annotator within a project: accuracy on gold, speed, label distribution (the annotator family);
    its `url` is the project's quality page, as `project_series`'."""
    return series_get(
        kind=Series.Kind.ANNOTATOR, key=series_key(project.pk, user_id), team=project.team_id,
        object_id=user_id, name=username, label=f"annotator {username} in {project.name}", url=url,
    )  # fmt: skip


def project_series_move(project: Any) -> int:
    """Give a project's series (its own and its annotators') to the project's team, as the project is
    linked to a team or moved to another: its members then read them. Returns how many moved."""
    return Series.objects.filter(kind=Series.Kind.PROJECT, object_id=project.pk).exclude(
        team_id=project.team_id
    ).update(team_id=project.team_id) + Series.objects.filter(
        kind=Series.Kind.ANNOTATOR, key__startswith=series_key(project.pk, "")
    ).exclude(team_id=project.team_id).update(team_id=project.team_id)


def project_series_delete(project: Any) -> int:
    """Forget a deleted project's series (its own and its annotators'), with their values and whatever
    watches them (the alert rules' foreign keys cascade). Returns how many series went."""
    deleted, by_model = (
        Series.objects.filter(kind=Series.Kind.PROJECT, object_id=project.pk)
        | Series.objects.filter(kind=Series.Kind.ANNOTATOR, key__startswith=series_key(project.pk, ""))
    ).delete()
    return int(by_model.get(Series._meta.label, 0))
