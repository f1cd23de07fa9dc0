"""A team's alerts page: its open and recent alert events (editors acknowledge them), its alert rules on
any metric of the registry and its notification channels. Actions are POST forms that redirect back."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from evalcore.metrics import metric_registry
from evalplatform.auth import SignedInRequest
from evalplatform.errors import InputError
from evalplatform.forms import ConfirmForm
from evalplatform.teams import get_team_for_member
from monitoring.alerts import services as alerts
from monitoring.alerts.forms import ChannelEditForm, ChannelForm, RuleEditForm, RuleForm
from monitoring.alerts.notifications import channel_test as channel_test_send
from monitoring.models import AlertEvent, AlertRule, Notification, NotificationChannel

RESOLVED_SHOWN = 50


def _page(request: HttpRequest, team: str, *, rule_form: RuleForm | None = None,
          channel_form: ChannelForm | None = None) -> HttpResponse:  # fmt: skip
    membership = get_team_for_member(request.user, team)
    found = membership.team
    events = alerts.events_with_channels_notified(
        AlertEvent.objects.filter(team=found).select_related("rule__series", "acknowledged_by")
    )
    rules = AlertRule.objects.filter(team=found).select_related("series").prefetch_related("channels")
    registry = metric_registry()
    return render(
        request,
        "monitoring/alerts.html",
        {
            "membership": membership,
            "team": found,
            "unresolved": list(events.exclude(status=AlertEvent.Status.RESOLVED).order_by("-opened_at")),
            "resolved": list(
                events.filter(status=AlertEvent.Status.RESOLVED).order_by("-resolved_at")[:RESOLVED_SHOWN]
            ),
            "rules": [(rule, registry.find(rule.metric)) for rule in rules],
            "channels": list(NotificationChannel.objects.filter(team=found)),
            "rule_form": rule_form or RuleForm(team=found),
            "channel_form": channel_form or ChannelForm(),
            "resolved_shown": RESOLVED_SHOWN,
        },
    )


@login_required
@require_safe
def alerts_page(request: SignedInRequest, team: str) -> HttpResponse:
    return _page(request, team)


@login_required
@require_POST
def rule_create(request: SignedInRequest, team: str) -> HttpResponse:
    found = get_team_for_member(request.user, team, write=True).team
    form = RuleForm(request.POST, team=found)
    if form.is_valid():
        try:
            alerts.alert_rule_create(team=found, created_by=request.user, **form.rule_fields())
        except InputError as error:
            field = error.field if isinstance(error, alerts.AlertRuleFieldError) else None
            form.add_error(field if field in form.fields else None, str(error))
        else:
            messages.success(request, f"Added the rule {form.cleaned_data['name']}.")
            return redirect("monitoring:alerts", found.slug)
    return _page(request, team, rule_form=form)


@login_required
@require_POST
def channel_create(request: SignedInRequest, team: str) -> HttpResponse:
    found = get_team_for_member(request.user, team, write=True).team
    form = ChannelForm(request.POST)
    if form.is_valid():
        channel = form.save(commit=False)
        channel.team = found
        channel.save()
        messages.success(request, f"Added the channel {channel.name}.")
        return redirect("monitoring:alerts", found.slug)
    return _page(request, team, channel_form=form)


@login_required
@require_POST
def event_acknowledge(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    found = get_team_for_member(request.user, team, write=True).team
    event = AlertEvent.objects.filter(team=found, pk=pk).select_related("rule").first()
    if event is None:
        raise Http404("No such alert.")
    alerts.alert_event_acknowledge(event=event, by=request.user)
    messages.success(request, f"Acknowledged {event.rule.name}.")
    back = request.POST.get("next", "")
    if back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        return redirect(back)  # the stream's dashboard, when acknowledged there
    return redirect("monitoring:alerts", found.slug)


@login_required
@require_POST
def rule_toggle(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    """Turn a rule on or off (deleting one goes through its confirmation page, `rule_delete`)."""
    found = get_team_for_member(request.user, team, write=True).team
    rule = AlertRule.objects.filter(team=found, pk=pk).first()
    if rule is None:
        raise Http404("No such rule.")
    AlertRule.objects.filter(pk=rule.pk).update(enabled=not rule.enabled)
    messages.success(request, f"{'Disabled' if rule.enabled else 'Enabled'} the rule {rule.name}.")
    return redirect("monitoring:alerts", found.slug)


@login_required
@require_http_methods(["GET", "POST"])
def rule_delete(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    """A confirmation naming what goes with the rule (GET), then its deletion (POST with the confirmation)."""
    found = get_team_for_member(request.user, team, write=True).team
    rule = get_object_or_404(AlertRule.objects.filter(team=found), pk=pk)
    form = ConfirmForm(request.POST or None, expected=f"delete rule {rule.pk}")
    if request.method == "POST" and form.is_valid():
        rule.delete()
        messages.success(request, f"Deleted the rule {rule.name}.")
        return redirect("monitoring:alerts", found.slug)
    events = rule.events.count()
    context = {
        "title": f"Delete the rule {rule.name}?",
        "consequences": [
            f"It stops watching {rule.series_label}.",
            f"Its {events} alert{'s' if events != 1 else ''} (open and resolved) and their notifications' records go with it.",
            "Its channels stay, and so do the series' values.",
        ],
        "form": form, "button": "Delete the rule", "cancel": reverse("monitoring:alert-rule-detail", args=[found.slug, rule.pk]),
    }  # fmt: skip
    return render(
        request, "evalplatform/confirm.html", context, status=200 if request.method == "GET" else 400
    )


@login_required
@require_http_methods(["GET", "POST"])
def channel_delete(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    """A confirmation naming the rules that stop notifying the channel (GET), then its deletion (POST)."""
    found = get_team_for_member(request.user, team, write=True).team
    channel = get_object_or_404(NotificationChannel.objects.filter(team=found), pk=pk)
    form = ConfirmForm(request.POST or None, expected=f"delete channel {channel.pk}")
    if request.method == "POST" and form.is_valid():
        channel.delete()
        messages.success(request, f"Deleted the channel {channel.name}.")
        return redirect("monitoring:alerts", found.slug)
    rules = list(channel.rules.order_by("name").values_list("name", flat=True))
    sent = channel.notifications.count()
    context = {
        "title": f"Delete the channel {channel.name}?",
        "consequences": [
            f"{len(rules)} rule{'s' if len(rules) != 1 else ''} stop notifying it"
            + (f": {', '.join(rules)}." if rules else "."),
            f"The records of its {sent} deliver{'ies' if sent != 1 else 'y'} go with it; the alerts stay.",
        ],
        "form": form, "button": "Delete the channel", "cancel": reverse("monitoring:channel-detail", args=[found.slug, channel.pk]),
    }  # fmt: skip
    return render(
        request, "evalplatform/confirm.html", context, status=200 if request.method == "GET" else 400
    )


# --- one rule, one channel ----------------------------------------------------------------------------------

#: Observations of a rule's series checked on its page, and its events listed there.
RULE_CHECKS_SHOWN = 20
RULE_EVENTS_SHOWN = 20
#: A channel's latest notifications shown on its page.
CHANNEL_NOTIFICATIONS_SHOWN = 20


@login_required
@require_http_methods(["GET", "POST"])
def rule_detail(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    """A rule: its settings (editors change them here), how it judged its series' latest values (why it
    fired or not) and its alerts."""
    membership = get_team_for_member(request.user, team, write=request.method == "POST")
    rule = get_object_or_404(
        AlertRule.objects.filter(team=membership.team).select_related("series", "team"), pk=pk
    )
    form = RuleEditForm(request.POST or None, rule=rule)
    if request.method == "POST" and form.is_valid():
        try:
            alerts.alert_rule_update(rule=rule, **form.rule_fields())
        except InputError as error:
            field = error.field if isinstance(error, alerts.AlertRuleFieldError) else None
            form.add_error(field if field in form.fields else None, str(error))
        else:
            messages.success(request, f"Saved the rule {rule.name}; it was checked on the latest values.")
            return redirect("monitoring:alert-rule-detail", membership.team.slug, rule.pk)
    context = {
        "membership": membership, "team": membership.team, "rule": rule, "form": form,
        "spec": metric_registry().find(rule.metric), "channels": list(rule.channels.all()),
        "other_names": alerts.rule_other_names(rule),
        "checks": alerts.rule_recent_checks(rule, last=RULE_CHECKS_SHOWN), "checks_shown": RULE_CHECKS_SHOWN,
        "events": list(alerts.events_with_channels_notified(
            rule.events.select_related("acknowledged_by").order_by("-opened_at")
        )[:RULE_EVENTS_SHOWN]),
    }  # fmt: skip
    status = 400 if request.method == "POST" else 200
    return render(request, "monitoring/alert_rule.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def channel_detail(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    """A channel: editors change it (name, kind, target, on or off); everyone sees its latest deliveries."""
    membership = get_team_for_member(request.user, team, write=request.method == "POST")
    channel = get_object_or_404(NotificationChannel.objects.filter(team=membership.team), pk=pk)
    form = ChannelEditForm(request.POST or None, instance=channel)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, f"Saved the channel {channel.name}.")
        return redirect("monitoring:channel-detail", membership.team.slug, channel.pk)
    notifications = (
        Notification.objects.filter(channel=channel).select_related("event__rule").order_by("-pk")
    )[:CHANNEL_NOTIFICATIONS_SHOWN]
    context = {
        "membership": membership, "team": membership.team, "channel": channel, "form": form,
        "notifications": list(notifications), "rules": list(channel.rules.order_by("name")),
    }  # fmt: skip
    status = 400 if request.method == "POST" else 200
    return render(request, "monitoring/alert_channel.html", context, status=status)


@login_required
@require_POST
def channel_test(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    """Send a test message through the channel now and say what it answered."""
    membership = get_team_for_member(request.user, team, write=True)
    channel = get_object_or_404(NotificationChannel.objects.filter(team=membership.team), pk=pk)
    delivered, answer = channel_test_send(channel, by=request.user.get_username())
    if delivered:
        messages.success(request, f"Test message delivered through {channel.name}: {answer}.")
    else:
        messages.error(request, f"Test message not delivered through {channel.name}: {answer}")
    return redirect("monitoring:channel-detail", membership.team.slug, channel.pk)
