"""A team's alerts page: its open and recent alert events (editors acknowledge them), its alert rules on
any metric of the registry and its notification channels. Actions are POST forms that redirect back."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST, require_safe

from evalcore.metrics import metric_registry
from evalplatform.auth import SignedInRequest
from evalplatform.errors import InputError
from evalplatform.teams import get_team_for_member
from monitoring.alerts import services as alerts
from monitoring.alerts.forms import ChannelForm, RuleForm
from monitoring.models import AlertEvent, AlertRule, NotificationChannel

RESOLVED_SHOWN = 50


def _page(request: HttpRequest, team: str, *, rule_form: RuleForm | None = None,
          channel_form: ChannelForm | None = None) -> HttpResponse:  # fmt: skip
    membership = get_team_for_member(request.user, team)
    found = membership.team
    events = AlertEvent.objects.filter(team=found).select_related("rule__series", "acknowledged_by")
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
    found = get_team_for_member(request.user, team, write=True).team
    rule = AlertRule.objects.filter(team=found, pk=pk).first()
    if rule is None:
        raise Http404("No such rule.")
    if request.POST.get("action") == "delete":
        rule.delete()
        messages.success(request, f"Deleted the rule {rule.name}.")
    else:
        AlertRule.objects.filter(pk=rule.pk).update(enabled=not rule.enabled)
        messages.success(request, f"{'Disabled' if rule.enabled else 'Enabled'} the rule {rule.name}.")
    return redirect("monitoring:alerts", found.slug)


@login_required
@require_POST
def channel_delete(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    found = get_team_for_member(request.user, team, write=True).team
    deleted, _ = NotificationChannel.objects.filter(team=found, pk=pk).delete()
    if not deleted:
        raise Http404("No such channel.")
    messages.success(request, "Deleted the channel.")
    return redirect("monitoring:alerts", found.slug)
