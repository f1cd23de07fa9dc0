"""Alert rules on any series of any family, the events they open and resolve, and their notifications.

A rule watches one metric of its series' family (`series.Series`: a stream's monitor runs, a nightly run's
evaluations, a recommendation or fraud score set's evaluations, a judging project's or an annotator's
quality recomputes). Every job that writes values into the table (`series.services.metric_values_write`)
announces the series it observed (`series.signals.series_observed`, once committed); `series_observed`
below queues one `monitoring.tasks.alerts_check_series` per observed series that has enabled rules, and
`alerts_check_series` looks at each of them: the rule's metric over the series' latest `consecutive`
observations up to that job (`series.selectors.series_observations`, the one reader of every family),
each checked with `evalcore.alerts.evaluate_rules` (a drift rule also needs its effect size above the
threshold calibrated on the reference, stored with the values). When all of them break the threshold the
rule fires: it opens an event, or, if one is already open, counts one more observation on it (no new
notification: events are deduplicated). When the latest observation no longer breaks it, the open
event resolves.

An undefined value (NULL, never NaN: a snapshot of rows of zeros has no effective rank) is what the
rule's `on_undefined` says: "fire" counts it as breaking (the default collapse rules: a degenerate
snapshot is a collapse), "resolve" as not breaking, and "keep" (the default) decides nothing: an open
event stays open, showing the undefined latest value, and none opens (an undefined value also breaks a
run of `consecutive` ones).

Opening and resolving notify the rule's channels through `Notification` jobs, unless the rule notified
an opening within its cooldown (a flapping rule then notifies once). `monitoring.alerts.notifications` sends
them (email, or a webhook's Slack-compatible JSON POST), on their own queue.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, cast

from django.apps import apps
from django.db import IntegrityError, transaction
from django.db.models import Count, QuerySet
from django.utils import timezone

from evalcore.alerts import AlertRule as RuleSpec
from evalcore.alerts import AlertRuleError, EffectRequirement, evaluate_rules, is_undefined
from evalcore.metrics import Family, UnknownMetricError, metric_registry
from evalplatform.auth import User
from evalplatform.errors import InputError
from evalplatform.jobs import job_enqueue_on_commit, task_send_on_commit
from evalplatform.models import Team
from monitoring.models import (
    AlertEvent,
    AlertRule,
    EmbeddingStream,
    Notification,
    NotificationChannel,
)
from series.models import Series
from series.selectors import Observation, metric_names, series_observations
from series.subjects import page_url, stream_series

logger = logging.getLogger(__name__)

#: The most observations a rule looks back over.
MAX_CONSECUTIVE = 50


class AlertRuleFieldError(InputError):
    """A rule cannot be made as asked, because of one field (`field`): the API answers 400 naming it,
    the form shows the message under it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


# --- rules --------------------------------------------------------------------------------------------


def rule_spec(rule: AlertRule) -> RuleSpec:
    """The framework-free rule that `evalcore.alerts.evaluate_rules` checks."""
    effect = EffectRequirement(rule.effect_metric, rule.effect_threshold) if rule.effect_metric else None
    return RuleSpec(
        name=rule.name, metric=rule.metric, comparator=rule.comparator, threshold=rule.threshold,  # type: ignore[arg-type]
        severity=rule.severity, effect=effect, on_undefined=rule.on_undefined,  # type: ignore[arg-type]
    )  # fmt: skip


def metric_of_family_check(field: str, metric: str, family: Family | str) -> None:
    """Raise `AlertRuleFieldError(field)` unless `metric` is a registry name of `family`: an unknown
    name with the closest names of the family, a name of another family with the family's closest."""
    registry = metric_registry()
    family = cast(Family, family)
    try:
        spec = registry.resolve(metric, suggest_from=family)
    except UnknownMetricError as error:
        raise AlertRuleFieldError(field, str(error)) from None
    if spec.family != family:
        close = registry.suggest(metric, family=family)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise AlertRuleFieldError(
            field,
            f"{metric!r} is a {spec.family} metric; the series reports {family} metrics, so a rule on it "
            f"would never fire{hint}",
        )


@transaction.atomic
def alert_rule_create(
    *,
    team: Team,
    series: Series,
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
    channels: Iterable[NotificationChannel] = (),
    created_by: User | None = None,
) -> AlertRule:
    """A rule on one series of the team (`series.subjects` gives a subject's series, with or without
    values yet).

    Raises `AlertRuleFieldError` (a message for the user, and the field it is about) for a metric or an
    effect metric that is unknown or of another family than the series' (with the family's closest
    names), and `InputError` for a bad comparator, severity, threshold or `on_undefined`, or a series or
    channels of another team.
    """
    channels = list(channels)
    name = _rule_checked(
        team=team, series=series, channels=channels, name=name, metric=metric, comparator=comparator,
        threshold=threshold, severity=severity, consecutive=consecutive, effect_metric=effect_metric,
        effect_threshold=effect_threshold, on_undefined=on_undefined,
    )  # fmt: skip
    rule = AlertRule.objects.create(
        team=team, series=series, name=name, metric=metric, comparator=comparator,
        threshold=float(threshold), severity=severity, consecutive=consecutive, cooldown_minutes=cooldown_minutes,
        effect_metric=effect_metric, effect_threshold=effect_threshold, on_undefined=on_undefined,
        created_by=created_by,
    )  # fmt: skip
    rule.channels.set(channels)
    return rule


def _rule_checked(
    *,
    team: Team,
    series: Series,
    channels: list[NotificationChannel],
    name: str,
    metric: str,
    comparator: str,
    threshold: float,
    severity: str,
    consecutive: int,
    effect_metric: str,
    effect_threshold: float | None,
    on_undefined: str,
) -> str:
    """The checks a rule passes when it is made or changed; returns its name (a blank one is "rule")."""
    if series.team_id != team.pk or any(channel.team_id != team.pk for channel in channels):
        raise InputError("The series and the channels must belong to the rule's team.")
    metric_of_family_check("metric", metric, series.family)
    if effect_metric:
        metric_of_family_check("effect_metric", effect_metric, series.family)
    try:
        spec = RuleSpec(
            name=name or "rule", metric=metric, comparator=comparator, threshold=float(threshold),  # type: ignore[arg-type]
            severity=severity, on_undefined=on_undefined,  # type: ignore[arg-type]
            effect=EffectRequirement(effect_metric, effect_threshold) if effect_metric else None,
        )  # fmt: skip
    except (AlertRuleError, TypeError, ValueError) as error:
        raise InputError(str(error)) from None
    if not 1 <= consecutive <= MAX_CONSECUTIVE:
        raise InputError(f"consecutive must lie between 1 and {MAX_CONSECUTIVE}.")
    return spec.name


#: What an edit may change; the series stays (a rule on another series is another rule).
RULE_EDITABLE = ("name", "metric", "comparator", "threshold", "severity", "consecutive", "cooldown_minutes",
                 "effect_metric", "effect_threshold", "on_undefined", "enabled")  # fmt: skip


@transaction.atomic
def alert_rule_update(
    *, rule: AlertRule, channels: Iterable[NotificationChannel] | None = None, **changes: Any
) -> AlertRule:
    """Change a rule (any of `RULE_EDITABLE`, and its channels), checked as `alert_rule_create` checks a
    new one; then check it at once on its series' latest values, so that a new threshold opens or
    resolves its alert now rather than at the next job."""
    unknown = set(changes) - set(RULE_EDITABLE)
    if unknown:
        raise InputError(f"A rule's {', '.join(sorted(unknown))} cannot be changed.")
    fields = {name: changes.get(name, getattr(rule, name)) for name in RULE_EDITABLE}
    chosen = list(channels) if channels is not None else list(rule.channels.all())
    fields["name"] = _rule_checked(
        team=rule.team, series=rule.series, channels=chosen,
        **{k: v for k, v in fields.items() if k not in {"cooldown_minutes", "enabled"}},
    )  # fmt: skip
    if not fields["effect_metric"]:
        fields["effect_threshold"] = None
    for name, value in fields.items():
        setattr(rule, name, value)
    rule.save(update_fields=list(RULE_EDITABLE))
    if channels is not None:
        rule.channels.set(chosen)
    if rule.enabled:
        alerts_check_rule(rule)
    return rule


@dataclass(frozen=True)
class RuleCheck:
    """What the rule made of one observation of its series: `verdict` is "breaks", "holds", "undefined"
    or "not judged" (no value the rule reads there: the job reported none, or an annotator's figure rests
    on too few gold items, `GOLD_SUPPORT`); `fires` says whether the rule fired there (`consecutive`
    breaking values in a row); `reason` says why in words."""

    observed_at: Any
    source: str
    source_url: str
    value: float | None
    effect_value: float | None
    verdict: str
    fires: bool
    reason: str


def rule_recent_checks(rule: AlertRule, *, last: int = 20) -> list[RuleCheck]:
    """The rule checked on each of its series' `last` latest observations, newest first: the value, the
    condition, and whether the rule fired there and why (or why not). Read from the metric table; the
    same decision `alerts_check_series` made (cooldowns only decide whether a notification is sent)."""
    window = rule_window(rule, last=last + rule.consecutive - 1)
    spec = rule_spec(rule)
    condition = spec.describe()
    firings = [_firing(rule, observation) for observation in window]
    checks = []
    for i, observation in enumerate(window):
        if i < len(window) - last:
            continue  # only there to count the run of breaking values before the first row shown
        value = observation.values.get(rule.metric)
        effect = observation.values.get(rule.effect_metric) if rule.effect_metric else None
        undefined = is_undefined(observation.values, spec)
        judged = rule.metric in observation.values
        breaks = firings[i] is not None
        run = 0
        while run <= i and firings[i - run] is not None:
            run += 1
        fires = breaks and run >= rule.consecutive
        if not judged:
            verdict = "not judged"
            reason = (
                "too few gold items yet (the project's minimum): not judged"
                if _support(rule)
                else f"no {rule.metric} in this observation"
            )
        elif undefined:
            verdict = "undefined"
            reason = {
                "fire": "undefined value: the rule fires on undefined values",
                "resolve": "undefined value: counts as holding (the alert resolves)",
                "keep": "undefined value: the alert stays as it was",
            }[rule.on_undefined]
        elif breaks:
            verdict = "breaks"
            reason = f"{condition}: breaks" + (
                ""
                if rule.consecutive == 1
                else f" ({min(run, rule.consecutive)} of {rule.consecutive} in a row)"
            )
        else:
            verdict = "holds"
            reason = f"{condition} is false"
            if rule.effect_metric and effect is not None and value is not None:
                reason += f" ({rule.metric} {value:.4g}, {rule.effect_metric} {effect:.4g})"
        source, url = event_source(rule.series, observation)
        checks.append(
            RuleCheck(
                observed_at=observation.observed_at,
                source=source,
                source_url=url,
                value=None if undefined and (value is None or not math.isfinite(value)) else value,
                effect_value=effect if effect is None or math.isfinite(effect) else None,
                verdict=verdict,
                fires=fires,
                reason=reason,
            )  # fmt: skip
        )
    return checks[::-1]


#: The subject fields each kind of series is named by, when a rule names its series by subject.
SUBJECT_FIELDS: dict[str, tuple[str, ...]] = {
    Series.Kind.STREAM: ("stream",),
    Series.Kind.RUN: ("qrels", "run_name"),
    Series.Kind.RECSYS: ("set_name",),
    Series.Kind.FRAUD: ("set_name",),
    Series.Kind.PROJECT: ("project",),
    Series.Kind.ANNOTATOR: ("project", "username"),
}


def subject_kind(**subject: Any) -> str:
    """The kind of series subject fields name when no kind is given (what rules named before they
    watched series of every family): a stream, a qrels source and run name, a project and username, a
    project; "" when they name none, or only a set name (a recommendation or a fraud score set's?)."""
    given = {name for name, value in subject.items() if value not in (None, "")}
    for kind, names in (("stream", {"stream"}), ("run", {"qrels", "run_name"}), ("annotator", {"username"}),
                        ("project", {"project"})):  # fmt: skip
        if given & names:
            return kind
    return ""


def rule_series_resolve(*, team: Team, kind: str, **subject: Any) -> Series:
    """The series a rule names by its subject, created when it has no value yet (a rule on the nightly
    run before the first nightly evaluation): kind "stream" with `stream` (a slug or an id); "run" with
    `qrels` (an id) and `run_name`; "recsys" or "fraud" with `set_name`; "project" with `project` (a
    slug, a project linked to the team); "annotator" with `project` and `username` (a member of it).

    Raises `AlertRuleFieldError` naming the field that is missing or names nothing of the team's.
    """
    from annotations.models import Project, ProjectMembership
    from annotations.quality.services import project_quality_url
    from monitoring.models import QrelsSource
    from series import subjects

    if kind not in SUBJECT_FIELDS:
        raise AlertRuleFieldError("kind", f"Choose a kind of series: {', '.join(SUBJECT_FIELDS)}.")
    given = {name: str(subject.get(name) or "").strip() for name in SUBJECT_FIELDS[kind]}
    for name, value in given.items():
        if not value:
            raise AlertRuleFieldError(name, f"A rule on a {kind} series names its {name.replace('_', ' ')}.")
    if kind == Series.Kind.STREAM:
        streams = EmbeddingStream.objects.filter(team=team)
        ref = given["stream"]
        stream = (streams.filter(pk=int(ref)) if ref.isdigit() else streams.filter(slug=ref)).first()
        if stream is None:
            raise AlertRuleFieldError("stream", f"The team has no stream {ref!r}.")
        return subjects.stream_series(stream)
    if kind == Series.Kind.RUN:
        qrels = (
            QrelsSource.objects.filter(team=team, pk=int(given["qrels"])).first()
            if given["qrels"].isdigit()
            else None
        )
        if qrels is None:
            raise AlertRuleFieldError("qrels", f"The team has no qrels source {given['qrels']}.")
        return subjects.run_series(qrels, given["run_name"])
    if kind == Series.Kind.RECSYS:
        return subjects.recsys_series(team.pk, given["set_name"])
    if kind == Series.Kind.FRAUD:
        return subjects.fraud_series(team.pk, given["set_name"])
    project = Project.objects.filter(slug=given["project"], team=team).first()
    if project is None:
        raise AlertRuleFieldError(
            "project", f"No judging project {given['project']!r} is linked to the team."
        )
    url = project_quality_url(project)
    if kind == Series.Kind.PROJECT:
        return subjects.project_series(project, url=url)
    membership = (
        ProjectMembership.objects.filter(project=project, user__username=given["username"])
        .select_related("user")
        .first()
    )
    if membership is None:
        raise AlertRuleFieldError("username", f"{given['username']!r} is no member of {project.name}.")
    return subjects.annotator_series(project, membership.user.pk, membership.user.username, url=url)


def default_stream_rules(
    *, stream: EmbeddingStream, channels: Iterable[NotificationChannel] = ()
) -> list[AlertRule]:
    """The default embedding rules (`evalcore.alerts.DEFAULT_EMBEDDING_RULES`) on a stream, once."""
    from evalcore.alerts import DEFAULT_EMBEDDING_RULES

    series = stream_series(stream)
    channels = list(channels)
    made = []
    for spec in DEFAULT_EMBEDDING_RULES:
        existing = AlertRule.objects.filter(series=series, name=spec.name).first()
        if existing is not None:
            made.append(existing)
            continue
        made.append(
            alert_rule_create(
                team=stream.team,
                series=series,
                name=spec.name,
                metric=spec.metric,
                comparator=spec.comparator,
                threshold=spec.threshold,
                severity=spec.severity,
                channels=channels,
                effect_metric=spec.effect.metric if spec.effect else "",
                effect_threshold=spec.effect.threshold if spec.effect else None,
                on_undefined=spec.on_undefined,
            )  # fmt: skip
        )
    return made


# --- checking -------------------------------------------------------------------------------------------


def series_observed(*, series_ids: Iterable[int], job_type: str, job_id: int, **kwargs: Any) -> list[int]:
    """`series.signals.series_observed`'s receiver (connected in `MonitoringConfig.ready`): queue one
    check (`monitoring.tasks.alerts_check_series`) per observed series that has enabled rules, once the
    current transaction commits. Returns the series ids queued."""
    from monitoring.tasks import alerts_check_series as task

    watched = sorted(
        set(
            AlertRule.objects.filter(series_id__in=list(series_ids), enabled=True).values_list(
                "series_id", flat=True
            )
        )
    )
    for series_id in watched:
        if getattr(_here, "depth", 0):
            alerts_check_series(series_id=series_id, job_type=job_type, job_id=job_id)
        else:
            task_send_on_commit(
                task, (series_id, job_type, job_id),
                what=f"the alert check of series {series_id} after {job_type} #{job_id}",
            )  # fmt: skip
    return watched


_here = threading.local()


@contextmanager
def alerts_checked_here() -> Iterator[None]:
    """Within it, observed series are checked in this process as they are announced, not queued: a demo
    that computes its jobs in order in-process raises its alerts the way the worker would."""
    _here.depth = getattr(_here, "depth", 0) + 1
    try:
        yield
    finally:
        _here.depth -= 1


def subject_deleted(sender: type[Any], instance: Any, **kwargs: Any) -> None:
    """A stream or a qrels source is deleted: so are its series, with their rules and events (as the
    rules' foreign keys to them did before rules watched series). Connected in `MonitoringConfig.ready`."""
    kind = Series.Kind.STREAM if isinstance(instance, EmbeddingStream) else Series.Kind.RUN
    Series.objects.filter(kind=kind, object_id=instance.pk).delete()


def alerts_check_rule(rule: AlertRule) -> AlertEvent | None:
    """Check one rule on its series' latest observations (a rule made on a series that has values
    already, such as the demo's, need not wait for the next job)."""
    return _check(rule, observations(rule))


def alerts_check_series(*, series_id: int, job_type: str, job_id: int) -> list[AlertEvent]:
    """Check every enabled rule of a series after the job (`job_type`, `job_id`) wrote values into it;
    returns the events touched. Each rule reads the series' observations up to that job only, so a late
    check of an older job never decides on newer values."""
    rules = (
        AlertRule.objects.filter(series_id=series_id, enabled=True)
        .select_related("series")
        .prefetch_related("channels")
    )
    return [event for rule in rules if (event := _check(rule, observations(rule, upto=(job_type, job_id))))]


def observations(rule: AlertRule, *, upto: tuple[str, int] | None = None) -> list[Observation]:
    """The rule's metric (and effect metric) over its series' latest `consecutive` observations."""
    return rule_window(rule, last=rule.consecutive, upto=upto)


#: An annotator's figures against gold, and the count they rest on: a rule does not judge such a figure
#: (it reads it as not computed, as `evalcore.alerts.is_undefined` reads an absent metric) where the
#: annotator had seen fewer gold items than the project's `min_gold_items`, as the quality gate judges
#: them (the dashboard says "too few gold items"), so that one or two gold answers open no alert and
#: resolve none. The series keeps the figure itself: the annotator's own trend shows it.
GOLD_SUPPORT = {"gold_accuracy": "gold_seen", "gold_accuracy_within": "gold_seen", "gold_mae": "gold_seen"}


def _support(rule: AlertRule) -> str | None:
    """The count the rule's metric rests on, where a rule judges it only with enough (`GOLD_SUPPORT`)."""
    return GOLD_SUPPORT.get(rule.metric) if rule.series.kind == Series.Kind.ANNOTATOR else None


def rule_window(rule: AlertRule, *, last: int, upto: tuple[str, int] | None = None) -> list[Observation]:
    """The rule's metric (and effect metric) over its series' `last` latest observations (up to the job
    `upto`), as the rule judges them (`GOLD_SUPPORT`), keyed by the names the rule gives them. A retrieval
    measure is read under each of its spellings (`series.selectors.metric_names`): a rule on `ndcg_cut_10`
    judges the values stored as `nDCG@10`, and the reverse."""
    metrics = [rule.metric, *([rule.effect_metric] if rule.effect_metric else [])]
    support = _support(rule)
    if support is None:
        return series_observations(rule.series, metrics, last=last, upto=upto)
    window = series_observations(rule.series, [*metrics, support], last=last, upto=upto)
    project_id = int(rule.series.key.split(":", 1)[0])  # `series.subjects.annotator_series`' key
    minimum = (
        apps.get_model("annotations", "Project")
        .objects.filter(pk=project_id)
        .values_list("min_gold_items", flat=True)
        .first()
        or 0
    )
    judged = []
    for observation in window:
        too_few = (observation.values.get(support) or 0) < minimum
        values = {
            name: value
            for name, value in observation.values.items()
            if name != support and not (too_few and name == rule.metric)
        }
        judged.append(replace(observation, values=values))
    return judged


def rule_other_names(rule: AlertRule) -> list[str]:
    """The other names the rule's series stored its metric under, which the rule reads as its own
    (`series.selectors.metric_names`: `nDCG@10` for a rule on `ndcg_cut_10`), for its page to say so;
    empty for another family's metric (no query) or a measure stored only as the rule names it."""
    return metric_names(rule.series, [rule.metric])[rule.metric][1:]


def event_source(series: Series, observation: Observation) -> tuple[str, str]:
    """What an event's value came from, and its link: the job (its model's `str`, its page when it has
    one) on the series (its label, its page)."""
    job = None
    try:
        model = apps.get_model(observation.job_type)
        job = model.objects.filter(pk=observation.job_id).first()
    except (LookupError, ValueError):  # a job of an app no longer installed
        pass
    if job is None:
        return series.label, series.url
    url = page_url(job)
    return f"{job} ({series.label})", url or series.url


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
    source, source_url = event_source(rule.series, latest)
    recently_notified = AlertEvent.objects.filter(
        rule=rule, notified=True, opened_at__gt=now - timedelta(minutes=rule.cooldown_minutes)
    ).exists()
    try:
        with transaction.atomic():
            event = AlertEvent.objects.create(
                rule=rule, team_id=rule.team_id, value=firing.value, latest_value=firing.value,
                threshold=firing.threshold, effect_value=firing.effect_value, effect_threshold=firing.effect_threshold,
                source=source[:300], source_url=source_url[:500], observed_at=latest.observed_at,
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


def events_with_channels_notified(events: QuerySet[AlertEvent]) -> QuerySet[AlertEvent]:
    """The events, each with `channels_notified`: how many channels were sent a message about it.

    An event's `notified` says only that the cooldown let its opening through; a rule with no channel (or
    only disabled ones) then sent nothing, and a table that showed `notified` alone would say "yes" beside
    a rule that "notifies nobody". The tables and the API show this count with it."""
    return events.annotate(channels_notified=Count("notifications__channel", distinct=True))


def channels_notified(event: AlertEvent) -> int:
    """`events_with_channels_notified`'s count for one event (read again unless the event has it)."""
    counted = getattr(event, "channels_notified", None)
    if counted is None:
        counted = event.notifications.values("channel").distinct().count()
    return int(counted)


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
        .select_related("rule__series", "team", "acknowledged_by")
        .order_by("-opened_at")
    )


# --- notifying ------------------------------------------------------------------------------------------


def _notify(event: AlertEvent, *, kind: str) -> None:
    for channel in event.rule.channels.filter(enabled=True):
        notification, created = Notification.objects.get_or_create(event=event, channel=channel, kind=kind)
        if created:
            job_enqueue_on_commit(notification)
