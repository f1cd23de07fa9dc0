"""Alert rules, the events they open and resolve, and the notifications those send.

A rule watches one metric of the registry on one series of its team (`series.Series`, of any family: an
embedding stream's monitor runs, the evaluations of a nightly run, a recommendation or fraud score set's
evaluations, a judging project's or an annotator's quality recomputes); the metric is one of the series'
family. It fires when the
last `consecutive` values all break the threshold (and, for a drift rule, the effect size is large
enough). A firing rule opens one event, which stays open (deduplicated) until a value no longer breaks
the threshold; it can be acknowledged meanwhile. An undefined value (stored as NULL: a degenerate
snapshot has no effective rank) is what the rule's `on_undefined` says: a breaking value, nothing (the
event stays as it is: the default), or a value that does not break the threshold. Opening and resolving notify the rule's channels by
email or webhook, at most once per `cooldown_minutes`, so a rule firing on every run notifies once.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from evalcore.alerts import COMPARATORS, ON_UNDEFINED, ON_UNDEFINED_LABELS, SEVERITIES
from evalplatform.jobs import Job
from evalplatform.models import Team
from series.models import Series


class NotificationChannel(models.Model):
    """Where a team's alerts go: email addresses (Django's mail backend) or a webhook (Slack-compatible)."""

    class Kind(models.TextChoices):
        EMAIL = "email", "Email"
        WEBHOOK = "webhook", "Webhook (Slack-compatible JSON)"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="notification_channels")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    target = models.CharField(
        max_length=1000, help_text="Comma-separated email addresses, or the webhook's http(s) URL."
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["team", "name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"

    @property
    def masked_target(self) -> str:
        """The target as a viewer may read it: a webhook's URL is a secret (whoever has a Slack webhook's URL
        can post to the channel), so its scheme and host only; each address with its name hidden."""
        if self.kind == self.Kind.WEBHOOK:
            scheme, _, rest = self.target.partition("://")
            host = rest.split("/", 1)[0].rsplit("@", 1)[-1]
            return f"{scheme}://{host}/…" if rest else "…"
        return ", ".join(_masked_address(part.strip()) for part in self.target.split(",") if part.strip())


def _masked_address(address: str) -> str:
    name, _, domain = address.rpartition("@")
    return f"{name[:1]}***@{domain}" if name else "***"


class AlertRule(models.Model):
    """`metric comparator threshold` on a series, with a severity, a consecutive count and a cooldown."""

    Comparator = models.TextChoices("Comparator", [(f"C{i}", (c, c)) for i, c in enumerate(COMPARATORS)])  # type: ignore[call-overload]
    Severity = models.TextChoices("Severity", [(s.upper(), (s, s.capitalize())) for s in SEVERITIES])  # type: ignore[call-overload]
    OnUndefined = models.TextChoices(  # type: ignore[call-overload]
        "OnUndefined", [(o.upper(), (o, ON_UNDEFINED_LABELS[o])) for o in ON_UNDEFINED]
    )

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="alert_rules")
    name = models.CharField(max_length=200)
    metric = models.CharField(
        max_length=100, help_text="A metric name of the registry (ndcg_cut_10, mmd_p_value)."
    )
    comparator = models.CharField(max_length=2, choices=Comparator.choices)
    threshold = models.FloatField()
    severity = models.CharField(max_length=8, choices=Severity.choices, default="warning")
    consecutive = models.PositiveSmallIntegerField(
        default=1, help_text="Fire only when this many latest values in a row break the threshold."
    )
    effect_metric = models.CharField(
        max_length=100, blank=True, help_text="A drift rule may also require this effect size to be large."
    )
    effect_threshold = models.FloatField(
        null=True, blank=True, help_text="Empty: the threshold calibrated on the reference's own splits."
    )
    cooldown_minutes = models.PositiveIntegerField(
        default=60, help_text="Notify at most once in this many minutes for this rule."
    )
    on_undefined = models.CharField(
        max_length=8, choices=OnUndefined.choices, default=ON_UNDEFINED[0],
        help_text="What an undefined value of the metric (a degenerate snapshot's effective rank) means.",
    )  # fmt: skip
    series = models.ForeignKey(
        Series, on_delete=models.CASCADE, related_name="alert_rules",
        help_text="What the rule watches; its metric is one of the series' family.",
    )  # fmt: skip
    channels = models.ManyToManyField(NotificationChannel, blank=True, related_name="rules")
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["team", "name"]
        constraints = [
            models.CheckConstraint(condition=Q(consecutive__gte=1), name="alert_rule_consecutive_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.name}: {self.metric} {self.comparator} {self.threshold:g}"

    @property
    def series_label(self) -> str:
        return self.series.label


class AlertEvent(models.Model):
    """A rule firing: open until a value no longer breaks the threshold; acknowledged by someone meanwhile."""

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        ACKNOWLEDGED = "acknowledged", "Acknowledged"
        RESOLVED = "resolved", "Resolved"

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="events")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="alert_events")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.OPEN)
    value = models.FloatField(null=True, help_text="The value that opened it; null when undefined.")
    latest_value = models.FloatField(null=True, help_text="Null when undefined.")
    threshold = models.FloatField()
    effect_value = models.FloatField(null=True, blank=True)
    effect_threshold = models.FloatField(null=True, blank=True)
    observations = models.PositiveIntegerField(default=1, help_text="Breaking values seen while open.")
    source = models.CharField(max_length=300, blank=True, help_text="What the value came from.")
    source_url = models.CharField(max_length=500, blank=True)
    observed_at = models.DateTimeField(help_text="When the opening value was observed.")
    opened_at = models.DateTimeField(default=timezone.now)
    last_seen_at = models.DateTimeField(default=timezone.now)
    resolved_at = models.DateTimeField(null=True, blank=True)
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    notified = models.BooleanField(
        default=False, help_text="False when the cooldown held the notification back."
    )

    class Meta:
        ordering = ["team", "-opened_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["rule"],
                condition=Q(status__in=["open", "acknowledged"]),
                name="alert_event_one_unresolved",
            )
        ]
        indexes = [models.Index(fields=["team", "status", "-opened_at"], name="alert_event_by_team")]

    def __str__(self) -> str:
        return f"{self.rule.name} ({self.status})"

    @property
    def is_unresolved(self) -> bool:
        return self.status != self.Status.RESOLVED


class Notification(Job):
    """One message about one event to one channel; a job, so a failing webhook is retried with backoff."""

    class Kind(models.TextChoices):
        OPENED = "opened", "Alert opened"
        RESOLVED = "resolved", "Alert resolved"

    event = models.ForeignKey(AlertEvent, on_delete=models.CASCADE, related_name="notifications")
    channel = models.ForeignKey(NotificationChannel, on_delete=models.CASCADE, related_name="notifications")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    response = models.CharField(max_length=300, blank=True, help_text="What the channel answered.")

    task_name = "monitoring.tasks.notification_send"
    max_attempts = 6

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["event", "channel", "kind"], name="notification_once_per_event")
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.event} to {self.channel}"
