"""Platform-wide models: the worker heartbeat that /healthz reads, teams, and the sessions."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.sessions.base_session import AbstractBaseSession
from django.db import models, transaction
from django.db.models import F
from django.utils import timezone

# A worker counts as alive while its last heartbeat is younger than this many beat intervals.
FRESH_INTERVALS = 3


def heartbeat_interval() -> timedelta:
    """How often beat sends the heartbeat task: the "worker-heartbeat" entry of CELERY_BEAT_SCHEDULE."""
    schedule: Any = settings.CELERY_BEAT_SCHEDULE.get("worker-heartbeat", {}).get("schedule", 60.0)
    return schedule if isinstance(schedule, timedelta) else timedelta(seconds=float(schedule))


def heartbeat_fresh_for() -> timedelta:
    return FRESH_INTERVALS * heartbeat_interval()


class WorkerHeartbeatQuerySet(models.QuerySet["WorkerHeartbeat"]):
    def fresh(self) -> WorkerHeartbeatQuerySet:
        return self.filter(last_seen__gte=timezone.now() - heartbeat_fresh_for())

    def record(self, *, hostname: str) -> WorkerHeartbeat:
        """Record that ``hostname`` is alive. Safe to run any number of times: one row per worker."""
        now = timezone.now()
        with transaction.atomic():
            beat, created = self.get_or_create(hostname=hostname, defaults={"last_seen": now, "beats": 1})
            if not created:
                self.filter(pk=beat.pk).update(last_seen=now, beats=F("beats") + 1)
                beat.refresh_from_db()
        return beat


class WorkerHeartbeat(models.Model):
    """The last time each Celery worker ran the scheduled heartbeat task. One row per worker."""

    hostname = models.CharField(max_length=255, unique=True)
    last_seen = models.DateTimeField()
    beats = models.PositiveBigIntegerField(default=0)

    objects = WorkerHeartbeatQuerySet.as_manager()

    class Meta:
        ordering = ["-last_seen"]

    def __str__(self) -> str:
        return f"{self.hostname} @ {self.last_seen:%Y-%m-%d %H:%M:%S}"

    def is_fresh(self) -> bool:
        return timezone.now() - self.last_seen <= heartbeat_fresh_for()


# --- teams ---------------------------------------------------------------------------------------------


#: Slugs a team may not take: fixed words of its URLs (`/teams/new/` is the new-team page).
RESERVED_TEAM_SLUGS = frozenset({"new"})


class Team(models.Model):
    """A search, recommendation, fraud or ML team: it owns runs, evaluations, streams and alert rules.

    Members are viewers (read) or editors (upload, start jobs). Judging projects may be linked to a team
    (`annotations.Project.team`) so its members can read the project's quality figures and qrels.
    """

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="TeamMembership", related_name="teams")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class TeamMembership(models.Model):
    class Role(models.TextChoices):
        VIEWER = "viewer", "Viewer"
        EDITOR = "editor", "Editor"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships"
    )
    role = models.CharField(max_length=8, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["team", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="team_membership_unique"),
            models.CheckConstraint(condition=models.Q(role__in=["viewer", "editor"]), name="team_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.user} · {self.get_role_display()} · {self.team}"

    @property
    def can_edit(self) -> bool:
        return self.role == self.Role.EDITOR


class Session(AbstractBaseSession):
    """Django's database session (`SESSION_ENGINE = "evalplatform.sessions"`) with the id of the user it
    signed in kept in a column of its own, as Django's documentation extends a session model: a request
    can then read its session and its user in one statement (`evalplatform.sessions.SessionStore.
    load_with`). The column is written from the session's data on every save; it only finds the row to
    join: the signed session data stays what signs the request in, and a user id that differs from it
    signs nobody in."""

    user_id = models.IntegerField(null=True, blank=True)

    class Meta(AbstractBaseSession.Meta):
        db_table = "evalplatform_session"

    @classmethod
    def get_session_store_class(cls) -> type[Any]:
        from evalplatform.sessions import SessionStore

        return SessionStore
