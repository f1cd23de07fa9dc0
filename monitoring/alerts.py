"""Alert rules on any metric of the registry, the events they open and resolve, and their notifications.

After a monitor run or an evaluation finishes, its job's `on_done` hook (`evalplatform.jobs`) calls
`alerts_check_monitor_run` / `alerts_check_evaluation`, which look at each enabled rule of its series:
the rule's metric over the series' latest `consecutive`
observations, each checked with `evalcore.alerts.evaluate_rules` (a drift rule also needs its effect
size above the threshold calibrated on the reference). When all of them break the threshold the rule
fires: it opens an event, or, if one is already open, counts one more observation on it (no new
notification: events are deduplicated). When the latest observation no longer breaks it, the open
event resolves.

An undefined value (NULL, never NaN: a snapshot of rows of zeros has no effective rank) is what the
rule's `on_undefined` says: "fire" counts it as breaking (the default collapse rules: a degenerate
snapshot is a collapse), "resolve" as not breaking, and "keep" (the default) decides nothing: an open
event stays open, showing the undefined latest value, and none opens (an undefined value also breaks a
run of `consecutive` ones).

Opening and resolving notify the rule's channels through `Notification` jobs, unless the rule notified
an opening within its cooldown (a flapping rule then notifies once). `monitoring.notifications` sends
them (email, or a webhook's Slack-compatible JSON POST), on their own queue.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from evalcore.alerts import AlertRule as RuleSpec
from evalcore.alerts import AlertRuleError, EffectRequirement, evaluate_rules, is_undefined
from evalcore.metrics import Family, UnknownMetricError, metric_registry
from evalplatform.auth import User
from evalplatform.errors import InputError
from evalplatform.jobs import JobStatus, job_enqueue_on_commit
from evalplatform.models import Team
from monitoring.models import (
    AlertEvent,
    AlertRule,
    EmbeddingStream,
    Evaluation,
    MonitorRun,
    Notification,
    NotificationChannel,
    QrelsSource,
)
from series.selectors import series_observations
from series.services import job_type_of
from series.subjects import run_series, stream_series

logger = logging.getLogger(__name__)

#: The most observations a rule looks back over.
MAX_CONSECUTIVE = 50


# --- rules --------------------------------------------------------------------------------------------


def rule_spec(rule: AlertRule) -> RuleSpec:
    """The framework-free rule that `evalcore.alerts.evaluate_rules` checks."""
    effect = EffectRequirement(rule.effect_metric, rule.effect_threshold) if rule.effect_metric else None
    return RuleSpec(
        name=rule.name, metric=rule.metric, comparator=rule.comparator, threshold=rule.threshold,  # type: ignore[arg-type]
        severity=rule.severity, effect=effect, on_undefined=rule.on_undefined,  # type: ignore[arg-type]
    )  # fmt: skip


@transaction.atomic
def alert_rule_create(
    *,
    team: Team,
    name: str,
    metric: str,
    comparator: str,
    threshold: float,
    severity: str = "warning",
    consecutive: int = 1,
    cooldown_minutes: int = 60,
    effect_metric: str = "",
    effect_threshold: float | None = None,
    on_undefined: str = AlertRule.OnUndefined.KEEP,
    stream: EmbeddingStream | None = None,
    qrels: QrelsSource | None = None,
    run_name: str = "",
    channels: Iterable[NotificationChannel] = (),
    created_by: User | None = None,
) -> AlertRule:
    """A rule on a stream's monitor runs, or on the evaluations of runs named `run_name` on `qrels`.

    Raises `InputError` (a message for the user) for an unknown metric (with the closest names), a bad
    comparator, severity, threshold or `on_undefined`, or a series of another team.
    """
    registry = metric_registry()
    # Close names are suggested from what the series reports: evaluations of runs are retrieval measures.
    family: Family = "retrieval" if qrels is not None else "embedding"
    try:
        registry.resolve(metric, suggest_from=family)
        if effect_metric:
            registry.resolve(effect_metric, suggest_from=family)
        rule_spec_check = RuleSpec(
            name=name or "rule", metric=metric, comparator=comparator, threshold=float(threshold),  # type: ignore[arg-type]
            severity=severity, on_undefined=on_undefined,  # type: ignore[arg-type]
            effect=EffectRequirement(effect_metric, effect_threshold) if effect_metric else None,
        )  # fmt: skip
    except (UnknownMetricError, AlertRuleError, TypeError, ValueError) as error:
        raise InputError(str(error)) from None
    if (stream is None) == (qrels is None):
        raise InputError("A rule watches either a stream, or a run name on a qrels source.")
    if qrels is not None and not run_name.strip():
        raise InputError("Name the runs the rule watches (the run name, e.g. nightly).")
    owner = stream.team_id if stream is not None else qrels.team_id  # type: ignore[union-attr]
    if owner != team.pk or any(channel.team_id != team.pk for channel in channels):
        raise InputError("The series and the channels must belong to the rule's team.")
    if not 1 <= consecutive <= MAX_CONSECUTIVE:
        raise InputError(f"consecutive must lie between 1 and {MAX_CONSECUTIVE}.")
    rule = AlertRule.objects.create(
        team=team, name=rule_spec_check.name, metric=metric, comparator=comparator, threshold=float(threshold),
        severity=severity, consecutive=consecutive, cooldown_minutes=cooldown_minutes, effect_metric=effect_metric,
        effect_threshold=effect_threshold, on_undefined=on_undefined, stream=stream, qrels=qrels,
        run_name=run_name.strip(), created_by=created_by,
    )  # fmt: skip
    rule.channels.set(list(channels))
    return rule


def default_stream_rules(
    *, stream: EmbeddingStream, channels: Iterable[NotificationChannel] = ()
) -> list[AlertRule]:
    """The default embedding rules (`evalcore.alerts.DEFAULT_EMBEDDING_RULES`) on a stream, once."""
    from evalcore.alerts import DEFAULT_EMBEDDING_RULES

    made = []
    for spec in DEFAULT_EMBEDDING_RULES:
        existing = AlertRule.objects.filter(stream=stream, name=spec.name).first()
        if existing is not None:
            made.append(existing)
            continue
        made.append(
            alert_rule_create(
                team=stream.team,
                name=spec.name,
                metric=spec.metric,
                comparator=spec.comparator,
                threshold=spec.threshold,
                severity=spec.severity,
                stream=stream,
                channels=channels,
                effect_metric=spec.effect.metric if spec.effect else "",
                effect_threshold=spec.effect.threshold if spec.effect else None,
                on_undefined=spec.on_undefined,
            )  # fmt: skip
        )
    return made


# --- observations ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Observation:
    """One point of a rule's series: its values (the rule's metric and effect metric; None when undefined),
    when and from what."""

    values: dict[str, float | None]
    observed_at: datetime
    source: str
    source_url: str
    effect_thresholds: dict[str, float]


def _stream_observations(rule: AlertRule, *, upto: MonitorRun) -> list[Observation]:
    metrics = [rule.metric, *([rule.effect_metric] if rule.effect_metric else [])]
    points = series_observations(
        stream_series(upto.stream), metrics, last=rule.consecutive, upto=(job_type_of(upto), upto.pk)
    )
    runs = MonitorRun.objects.select_related("snapshot").in_bulk([point.job_id for point in points])
    return [
        Observation(
            values=dict(point.values),
            observed_at=point.observed_at,
            source=f"monitor run of {runs[point.job_id].snapshot}",
            source_url=_stream_url(rule),
            effect_thresholds=dict(point.effect_thresholds),
        )  # fmt: skip
        for point in points
        if point.job_id in runs
    ]


def _stream_url(rule: AlertRule) -> str:
    try:
        return rule.stream.get_absolute_url() if rule.stream else ""  # type: ignore[union-attr]
    except Exception:  # the stream pages may not be routed (a deployment without them)
        return ""


def _evaluation_observations(rule: AlertRule, *, upto: Evaluation) -> list[Observation]:
    """The rule's metric over the latest evaluations of its series (its run name on its qrels) that
    report it, up to `upto`, from the metric table."""
    series = run_series(rule.qrels, rule.run_name)
    window = series_observations(
        series, [rule.metric], last=rule.consecutive, upto=(job_type_of(upto), upto.pk)
    )
    evaluations = Evaluation.objects.select_related("run", "team").in_bulk([o.job_id for o in window])
    return [
        Observation(
            values=observation.values,
            observed_at=evaluation.finished_at or observation.observed_at,
            source=f"evaluation of run {evaluation.run.name} (#{evaluation.run_id})",
            source_url=evaluation.get_absolute_url(),
            effect_thresholds={},
        )  # fmt: skip
        for observation in window
        if (evaluation := evaluations.get(observation.job_id)) is not None
    ]


# --- checking -------------------------------------------------------------------------------------------


def alerts_check_monitor_run(*, run_id: int) -> list[AlertEvent]:
    """Check every enabled rule of the run's stream after the run finished; returns the events touched."""
    run = MonitorRun.objects.filter(pk=run_id, status=JobStatus.DONE).first()
    if run is None:
        return []
    rules = AlertRule.objects.filter(stream_id=run.stream_id, enabled=True).prefetch_related("channels")
    return [event for rule in rules if (event := _check(rule, _stream_observations(rule, upto=run)))]


def alerts_check_evaluation(*, evaluation_id: int) -> list[AlertEvent]:
    """Check the rules on the evaluation's series (its run's name on its qrels) after it finished."""
    evaluation = (
        Evaluation.objects.filter(pk=evaluation_id, status=JobStatus.DONE).select_related("run").first()
    )
    if evaluation is None:
        return []
    rules = AlertRule.objects.filter(
        qrels_id=evaluation.qrels_id, run_name=evaluation.run.name, enabled=True
    ).prefetch_related("channels")
    return [
        event for rule in rules if (event := _check(rule, _evaluation_observations(rule, upto=evaluation)))
    ]


def _firing(rule: AlertRule, observation: Observation) -> Any:
    try:
        fired = evaluate_rules(
            observation.values, [rule_spec(rule)], effect_thresholds=observation.effect_thresholds
        )
    except AlertRuleError:  # no calibrated effect threshold on this run: the rule cannot fire
        return None
    return fired[0] if fired else None


def _check(rule: AlertRule, observations: list[Observation]) -> AlertEvent | None:
    if not observations or rule.metric not in observations[-1].values:
        return None  # the latest point has no value for this metric: nothing to decide
    firings = [_firing(rule, observation) for observation in observations]
    latest = observations[-1]
    if len(observations) >= rule.consecutive and all(firings):
        return _open_or_extend(rule, latest, firings[-1])
    if rule.on_undefined == AlertRule.OnUndefined.KEEP and is_undefined(latest.values, rule_spec(rule)):
        return _keep(rule, latest)
    if firings[-1] is None:
        return _resolve(rule, latest)
    return None


@transaction.atomic
def _open_or_extend(rule: AlertRule, latest: Observation, firing: Any) -> AlertEvent:
    event = (
        AlertEvent.objects.select_for_update()
        .filter(rule=rule, status__in=[AlertEvent.Status.OPEN, AlertEvent.Status.ACKNOWLEDGED])
        .first()
    )
    if event is not None:
        if event.last_seen_at < latest.observed_at:
            event.observations += 1
            event.latest_value = firing.value
            event.last_seen_at = latest.observed_at
            event.save(update_fields=["observations", "latest_value", "last_seen_at"])
        return event
    now = timezone.now()
    recently_notified = AlertEvent.objects.filter(
        rule=rule, notified=True, opened_at__gt=now - timedelta(minutes=rule.cooldown_minutes)
    ).exists()
    try:
        with transaction.atomic():
            event = AlertEvent.objects.create(
                rule=rule, team_id=rule.team_id, value=firing.value, latest_value=firing.value,
                threshold=firing.threshold, effect_value=firing.effect_value, effect_threshold=firing.effect_threshold,
                source=latest.source[:300], source_url=latest.source_url[:500], observed_at=latest.observed_at,
                opened_at=now, last_seen_at=latest.observed_at, notified=not recently_notified,
            )  # fmt: skip
    except IntegrityError:  # another worker opened it a moment ago
        return AlertEvent.objects.get(
            rule=rule, status__in=[AlertEvent.Status.OPEN, AlertEvent.Status.ACKNOWLEDGED]
        )
    if event.notified:
        _notify(event, kind=Notification.Kind.OPENED)
    return event


def _keep(rule: AlertRule, latest: Observation) -> AlertEvent | None:
    """An undefined value under "keep": the open event stays open, its latest value now undefined."""
    unresolved = [AlertEvent.Status.OPEN, AlertEvent.Status.ACKNOWLEDGED]
    AlertEvent.objects.filter(rule=rule, status__in=unresolved, last_seen_at__lte=latest.observed_at).update(
        latest_value=None
    )
    return AlertEvent.objects.filter(rule=rule, status__in=unresolved).first()


@transaction.atomic
def _resolve(rule: AlertRule, latest: Observation) -> AlertEvent | None:
    event = (
        AlertEvent.objects.select_for_update()
        .filter(rule=rule, status__in=[AlertEvent.Status.OPEN, AlertEvent.Status.ACKNOWLEDGED])
        .first()
    )
    if event is None:
        return None
    event.status = AlertEvent.Status.RESOLVED
    event.resolved_at = timezone.now()
    event.latest_value = latest.values.get(rule.metric)
    event.save(update_fields=["status", "resolved_at", "latest_value"])
    if event.notified:
        _notify(event, kind=Notification.Kind.RESOLVED)
    return event


@transaction.atomic
def alert_event_acknowledge(*, event: AlertEvent, by: User) -> AlertEvent:
    """Someone is on it: the event stays unresolved, marked with who and when."""
    if event.status == AlertEvent.Status.OPEN:
        event.status = AlertEvent.Status.ACKNOWLEDGED
        event.acknowledged_by = by  # type: ignore[assignment]
        event.acknowledged_at = timezone.now()
        event.save(update_fields=["status", "acknowledged_by", "acknowledged_at"])
    return event


def team_open_events(*, teams: Iterable[Team] | QuerySet[Team]) -> QuerySet[AlertEvent]:
    return (
        AlertEvent.objects.filter(
            team__in=teams, status__in=[AlertEvent.Status.OPEN, AlertEvent.Status.ACKNOWLEDGED]
        )
        .select_related("rule", "team", "acknowledged_by")
        .order_by("-opened_at")
    )


# --- notifying ------------------------------------------------------------------------------------------


def _notify(event: AlertEvent, *, kind: str) -> None:
    for channel in event.rule.channels.filter(enabled=True):
        notification, created = Notification.objects.get_or_create(event=event, channel=channel, kind=kind)
        if created:
            job_enqueue_on_commit(notification)
