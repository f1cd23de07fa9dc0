"""Sending an alert's notifications: one `Notification` job per (event, channel, kind), on its own queue.

`monitoring.alerts.services` decides when an event notifies and creates the jobs; this module delivers them. The
task runs on the `notifications` queue (`CELERY_TASK_ROUTES`), consumed by its own worker in production,
so a receiver that answers slowly holds a notification worker, never a monitor run or an evaluation.

A webhook gets a Slack-compatible JSON POST through `evalplatform.outbound`: its address is checked again
when it is sent (no loopback, private, link-local... address unless in WEBHOOK_ALLOWED_NETWORKS, pinned
for the connection), redirects are not followed, and the whole request has one deadline
(WEBHOOK_TIMEOUT_SECONDS). An email goes through Django's mail backend (EMAIL_TIMEOUT bounds SMTP).

A delivery that may succeed later (a timeout, no connection, a 3xx, a 5xx, 408 or 429, a mail server
away) is recorded on the notification (`response`: the attempt and why) and retried with backoff by the
task; the last allowed attempt fails the job with the reason. A refusal that will not change (an unsafe
URL, a 4xx) fails it at once. Links in messages are built on SITE_URL.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.utils import timezone

from evalcore.metrics import metric_registry
from evalplatform import outbound
from evalplatform.errors import InputError
from evalplatform.jobs import JobError, JobOutcome, ProgressFn, job_run
from monitoring.models import AlertEvent, Notification, NotificationChannel


class DeliveryError(Exception):
    """A notification the channel did not take this time; the task retries it with backoff."""


def notification_send(*, notification_id: int) -> JobOutcome:
    """Deliver one notification (the task's one call); a failed delivery is retried with backoff."""
    return job_run(
        Notification, pk=notification_id, compute=_deliver, store=_delivered, retry_on=(DeliveryError,)
    )


def _deliver(notification: Notification, progress: ProgressFn) -> str:
    try:
        return _send(notification.channel, message(notification.event, notification.kind))
    except DeliveryError as error:
        if notification.attempts >= Notification.max_attempts:
            raise JobError(
                f"Not delivered after {notification.attempts} attempts; the last: {error}"
            ) from None
        Notification.objects.filter(pk=notification.pk).update(
            response=f"attempt {notification.attempts} failed, to be retried: {error}"[:300]
        )
        raise


def _send(channel: NotificationChannel, payload: dict[str, Any]) -> str:
    if channel.kind == NotificationChannel.Kind.EMAIL:
        return _send_email(channel, payload)
    return _post_webhook(channel.target, payload)


def _send_email(channel: NotificationChannel, payload: dict[str, Any]) -> str:
    recipients = [address.strip() for address in channel.target.split(",") if address.strip()]
    if not recipients:
        raise JobError(f"The channel {channel.name} has no address.")
    try:
        sent = send_mail(
            subject=payload["text"][:180], message=_email_body(payload), from_email=settings.DEFAULT_FROM_EMAIL,
            recipient_list=recipients,
        )  # fmt: skip
    except OSError as error:  # smtplib's errors, socket timeouts and refused connections are all OSErrors
        raise DeliveryError(f"mail server: {error}") from error
    return f"sent to {sent and len(recipients)} address(es)"


def _post_webhook(url: str, payload: dict[str, Any]) -> str:
    try:
        answer = outbound.post(
            url, json.dumps(payload).encode(), allowed=allowed_networks(), timeout=webhook_timeout()
        )
    except outbound.OutboundRefused as error:
        raise JobError(f"The webhook's URL is refused: {error}") from None
    except outbound.OutboundTimeout as error:
        raise DeliveryError(f"timed out after {webhook_timeout():g} s: {error}") from None
    except outbound.OutboundFailed as error:
        raise DeliveryError(str(error)) from None
    if 200 <= answer.status < 300:
        return f"HTTP {answer.status}"
    if 300 <= answer.status < 400:
        raise DeliveryError(
            f"HTTP {answer.status} to {answer.location or 'nowhere'}: redirects are not followed"
        )
    if 400 <= answer.status < 500 and answer.status not in (408, 429):
        raise JobError(f"The webhook refused the message: HTTP {answer.status}.")
    raise DeliveryError(f"HTTP {answer.status}")


def allowed_networks() -> tuple[outbound.IPNetwork, ...]:
    """The internal networks webhooks may reach all the same (settings.WEBHOOK_ALLOWED_NETWORKS)."""
    return outbound.networks_parse(settings.WEBHOOK_ALLOWED_NETWORKS)


def webhook_timeout() -> float:
    """Seconds a webhook's whole request may take (settings.WEBHOOK_TIMEOUT_SECONDS)."""
    return float(settings.WEBHOOK_TIMEOUT_SECONDS)


def webhook_url_check(url: str) -> str:
    """The check of a webhook's URL when a channel is saved (the form and the API): the URL, stripped, or
    InputError saying why it is refused."""
    try:
        outbound.url_check(url, allowed=allowed_networks())
    except outbound.OutboundRefused as error:
        raise InputError(str(error)) from None
    return url.strip()


def _delivered(notification: Notification, response: str) -> None:
    notification.response = response[:300]


# --- the message ------------------------------------------------------------------------------------------


def message(event: AlertEvent, kind: str) -> dict[str, Any]:
    """The Slack-compatible payload (`text` plus one attachment) of an event; email uses the same text."""
    rule = event.rule
    spec = metric_registry().find(rule.metric)
    label = spec.label if spec else rule.metric
    verb = "resolved" if kind == Notification.Kind.RESOLVED else "opened"
    value = event.latest_value if kind == Notification.Kind.RESOLVED else event.value
    text = (
        f"[{rule.severity.upper()}] {rule.name} {verb} on {rule.series_label} ({event.team.name}): "
        f"{label} = {value:.4g}, rule {rule.metric} {rule.comparator} {rule.threshold:g}"
        if value is not None
        else f"[{rule.severity.upper()}] {rule.name} {verb} on {rule.series_label} ({event.team.name})"
    )
    color = {"critical": "danger", "warning": "warning", "info": "#439FE0"}.get(rule.severity, "warning")
    fields = [
        {"title": "metric", "value": rule.metric, "short": True},
        {"title": "value", "value": f"{value:.6g}" if value is not None else "—", "short": True},
        {"title": "threshold", "value": f"{rule.comparator} {rule.threshold:g}", "short": True},
        {"title": "severity", "value": rule.severity, "short": True},
    ]
    if event.effect_value is not None:
        fields.append(
            {
                "title": rule.effect_metric,
                "value": f"{event.effect_value:.6g} > {event.effect_threshold:.6g}",
                "short": True,
            }
        )
    return {
        "text": text,
        "attachments": [
            {
                "color": "good" if verb == "resolved" else color,
                "title": f"{rule.name}: {event.source}",
                "title_link": absolute_url(event.source_url),
                "fields": fields,
                "ts": int(event.observed_at.timestamp()),
            }
        ],
    }


def absolute_url(path: str) -> str:
    """A link a message can carry: the path on the site's address (settings.SITE_URL)."""
    if not path or path.startswith(("http://", "https://")):
        return path
    return settings.SITE_URL.rstrip("/") + path


def _email_body(payload: dict[str, Any]) -> str:
    attachment = payload["attachments"][0]
    lines = [payload["text"], ""] + [f"{field['title']}: {field['value']}" for field in attachment["fields"]]
    if attachment.get("title_link"):
        lines += ["", f"Details: {attachment['title_link']}"]
    return "\n".join(lines) + "\n"


# --- a test message -----------------------------------------------------------------------------------------


def channel_test(channel: NotificationChannel, *, by: str) -> tuple[bool, str]:
    """Send a test message through the channel now (an editor's "send a test"): (delivered, what the
    channel answered or why it failed). One attempt, within the webhook's total deadline or the mail
    server's timeout: the page shows the answer, nothing is retried or stored."""
    text = f"[TEST] evalplatform: a test message to the channel {channel.name} of {channel.team.name}, sent by {by}"
    payload = {
        "text": text,
        "attachments": [
            {
                "color": "#439FE0",
                "title": f"Test of {channel.name}",
                "title_link": absolute_url(f"/teams/{channel.team.slug}/alerts/"),
                "fields": [{"title": "channel", "value": channel.name, "short": True}],
                "ts": int(timezone.now().timestamp()),
            }
        ],
    }
    try:
        return True, _send(channel, payload)
    except (DeliveryError, JobError) as error:
        return False, str(error)
