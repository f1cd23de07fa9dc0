"""Alert rules, notification channels and alert events of a team: `/api/teams/<team>/alert-rules/`,
`/channels/` and `/alerts/` (see `monitoring.alerts.services` for what a rule does).

Viewers read; editors create, change and delete rules and channels and acknowledge events (a viewer
gets a 403, another team a 404). A channel's target is a secret (a Slack webhook's URL lets anyone post):
editors read it whole, viewers masked (a webhook's scheme and host, an address's domain). A rule names one
series of the team (`series`: its id), or a kind of series and its subject (`alerts.rule_series_resolve`:
a stream, a run name on a qrels source, a recommendation or fraud score set's name, a judging project, an
annotator of one), and a metric of the series' family: another family's metric is a 400 on `metric`.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from evalcore.alerts import COMPARATORS, SEVERITIES
from evalplatform.errors import InputError
from evalplatform.models import Team
from evalplatform.teams import get_team_for_member
from monitoring.alerts import services as alerts
from monitoring.alerts.notifications import channel_test as channel_test_send
from monitoring.alerts.notifications import webhook_url_check
from monitoring.common.pagination import PAGE_PARAMETERS, page_of, paginate
from monitoring.common.serializers import FIELD_ERRORS, FORBIDDEN, NOT_FOUND
from monitoring.evaluations.selectors import get_one
from monitoring.models import AlertEvent, AlertRule, NotificationChannel
from series.models import Series
from series.selectors import metric_key

TAGS = ["monitoring: alerts"]
EVENT_FILTERS = ["open", "acknowledged", "resolved", "unresolved"]

# --- shapes ---------------------------------------------------------------------------------------------


class ChannelIn(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    kind = serializers.ChoiceField(choices=NotificationChannel.Kind.choices)
    target = serializers.CharField(
        max_length=1000, help_text="Email addresses, comma-separated, or an http(s) URL."
    )
    enabled = serializers.BooleanField(default=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        target = attrs["target"].strip()
        if attrs["kind"] == "webhook":
            try:
                webhook_url_check(target)
            except InputError as error:
                raise serializers.ValidationError({"target": [str(error)]}) from None
        if attrs["kind"] == "email" and not all("@" in part for part in target.split(",") if part.strip()):
            raise serializers.ValidationError({"target": ["Give email addresses, separated by commas."]})
        return {**attrs, "target": target}


class ChannelOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=NotificationChannel.Kind.choices)
    target = serializers.CharField(
        help_text="Whole for editors; masked for viewers (https://hooks.slack.com/…, o***@example.org)."
    )
    enabled = serializers.BooleanField()
    created_at = serializers.DateTimeField()


class MaskedChannelOut(ChannelOut):
    """A channel as a viewer reads it: the target masked."""

    target = serializers.CharField(source="masked_target")


class RuleIn(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    metric = serializers.CharField(max_length=100, help_text="A metric of the registry, e.g. ndcg_cut_10.")
    comparator = serializers.ChoiceField(choices=list(COMPARATORS))
    threshold = serializers.FloatField()
    severity = serializers.ChoiceField(choices=list(SEVERITIES), default="warning")
    consecutive = serializers.IntegerField(min_value=1, max_value=alerts.MAX_CONSECUTIVE, default=1)
    cooldown_minutes = serializers.IntegerField(min_value=0, max_value=60 * 24 * 30, default=60)
    effect_metric = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    effect_threshold = serializers.FloatField(required=False, allow_null=True, default=None)
    on_undefined = serializers.ChoiceField(
        choices=AlertRule.OnUndefined.choices, default=AlertRule._meta.get_field("on_undefined").default,
        help_text="What an undefined value of the metric means: keep (the alert stays as it is), fire (it "
        "breaks the threshold: the default collapse rules) or resolve (it does not).",
    )  # fmt: skip
    series = serializers.IntegerField(
        required=False, allow_null=True, default=None,
        help_text="The id of one of the team's series (a rule's `series_id`); or name it by `kind` and its subject.",
    )  # fmt: skip
    kind = serializers.ChoiceField(
        choices=Series.Kind.choices, required=False, allow_blank=True, default="",
        help_text="Without `series`: the kind of series, named by its subject fields: stream (`stream`), run "
        "(`qrels`, `run_name`), recsys or fraud (`set_name`), project (`project`), annotator (`project`, "
        "`username`). A series with no value yet is made.",
    )  # fmt: skip
    stream = serializers.CharField(
        max_length=64, required=False, allow_blank=True, default="", help_text="A stream's slug or id."
    )
    qrels = serializers.IntegerField(
        required=False, allow_null=True, default=None, help_text="A qrels source id."
    )
    run_name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    set_name = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default="",
        help_text="A recommendation or fraud score set's name.",
    )  # fmt: skip
    project = serializers.SlugField(
        max_length=64, required=False, allow_blank=True, default="",
        help_text="A judging project's slug (a project linked to the team).",
    )  # fmt: skip
    username = serializers.CharField(
        max_length=150, required=False, allow_blank=True, default="", help_text="An annotator of the project."
    )
    channels = serializers.ListField(child=serializers.IntegerField(), required=False, default=list)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        team: Team = self.context["team"]
        subject = {name: attrs.pop(name) for name in SUBJECT_NAMES}
        series_id = attrs.pop("series")
        kind = attrs.pop("kind") or alerts.subject_kind(**subject)
        series = None
        if series_id is not None:
            series = Series.objects.filter(team=team, pk=series_id).first()
            if series is None:
                raise serializers.ValidationError({"series": [f"The team has no series {series_id}."]})
            family = series.family
        elif kind:
            family = Series.FAMILY_OF_KIND[Series.Kind(kind)]
        else:
            raise serializers.ValidationError(
                {"series": ["Give a series id, or a kind of series with its subject fields."]}
            )
        channels = list(NotificationChannel.objects.filter(team=team, pk__in=attrs["channels"]))
        if len(channels) != len(set(attrs["channels"])):
            raise serializers.ValidationError({"channels": ["Every channel must be one of the team's."]})
        try:
            # The metrics first: a refused rule makes no series.
            alerts.metric_of_family_check("metric", attrs["metric"], family)
            if attrs["effect_metric"]:
                alerts.metric_of_family_check("effect_metric", attrs["effect_metric"], family)
            if series is None:
                series = alerts.rule_series_resolve(team=team, kind=kind, **subject)
        except alerts.AlertRuleFieldError as error:
            raise serializers.ValidationError({error.field: [str(error)]}) from None
        return {**attrs, "series": series, "channels": channels}


#: The subject fields a rule may name its series by (`alerts.SUBJECT_FIELDS` per kind).
SUBJECT_NAMES = ("stream", "qrels", "run_name", "set_name", "project", "username")


class RuleOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    metric = serializers.CharField(help_text="The metric as the rule was given it.")
    metric_key = serializers.SerializerMethodField(
        help_text="The one name the rule reads its metric by (`series.selectors.metric_key`): for a retrieval "
        "measure trec_eval's (`nDCG@10` is `ndcg_cut_10`), and values stored under any spelling with this key "
        "count; another family's metric as given."
    )
    comparator = serializers.CharField()
    threshold = serializers.FloatField()
    severity = serializers.CharField()
    consecutive = serializers.IntegerField()
    cooldown_minutes = serializers.IntegerField()
    effect_metric = serializers.CharField()
    effect_threshold = serializers.FloatField(allow_null=True)
    on_undefined = serializers.ChoiceField(choices=AlertRule.OnUndefined.choices)
    series = serializers.CharField(source="series_label", help_text="The series' label.")
    series_id = serializers.IntegerField()
    kind = serializers.ChoiceField(source="series.kind", choices=Series.Kind.choices)
    family = serializers.CharField(source="series.family")
    series_url = serializers.CharField(source="series.url")
    stream = serializers.SerializerMethodField(help_text="The stream's slug, for a rule on a stream.")
    qrels = serializers.SerializerMethodField(help_text="The qrels source's id, for a rule on a run name.")
    run_name = serializers.SerializerMethodField()
    channels = serializers.SerializerMethodField()
    enabled = serializers.BooleanField()
    created_at = serializers.DateTimeField()

    def get_metric_key(self, rule: AlertRule) -> str:
        return metric_key(rule.series.family, rule.metric)

    def get_stream(self, rule: AlertRule) -> str | None:
        return rule.series.name if rule.series.kind == Series.Kind.STREAM else None

    def get_qrels(self, rule: AlertRule) -> int | None:
        return rule.series.object_id if rule.series.kind == Series.Kind.RUN else None

    def get_run_name(self, rule: AlertRule) -> str:
        return rule.series.name if rule.series.kind == Series.Kind.RUN else ""

    def get_channels(self, rule: AlertRule) -> list[int]:
        return [channel.pk for channel in rule.channels.all()]


class RulePatchIn(serializers.Serializer):
    """Any of a rule's settings (its series stays); checked as a new rule's."""

    name = serializers.CharField(max_length=200, required=False)
    metric = serializers.CharField(max_length=100, required=False)
    comparator = serializers.ChoiceField(choices=list(COMPARATORS), required=False)
    threshold = serializers.FloatField(required=False)
    severity = serializers.ChoiceField(choices=list(SEVERITIES), required=False)
    consecutive = serializers.IntegerField(min_value=1, max_value=alerts.MAX_CONSECUTIVE, required=False)
    cooldown_minutes = serializers.IntegerField(min_value=0, max_value=60 * 24 * 30, required=False)
    effect_metric = serializers.CharField(max_length=100, required=False, allow_blank=True)
    effect_threshold = serializers.FloatField(required=False, allow_null=True)
    on_undefined = serializers.ChoiceField(choices=AlertRule.OnUndefined.choices, required=False)
    enabled = serializers.BooleanField(required=False)
    channels = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="The ids of the team's channels it notifies.",
    )


class ChannelPatchIn(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False)
    kind = serializers.ChoiceField(choices=NotificationChannel.Kind.choices, required=False)
    target = serializers.CharField(max_length=1000, required=False)
    enabled = serializers.BooleanField(required=False)


class ChannelTestOut(serializers.Serializer):
    delivered = serializers.BooleanField()
    answer = serializers.CharField(
        help_text="What the channel answered, or why the message was not delivered."
    )


class EventOut(serializers.Serializer):
    id = serializers.IntegerField()
    rule = serializers.IntegerField(source="rule_id")
    rule_name = serializers.CharField(source="rule.name")
    metric = serializers.CharField(source="rule.metric")
    severity = serializers.CharField(source="rule.severity")
    series = serializers.CharField(source="rule.series.label", help_text="The series the rule watches.")
    series_url = serializers.CharField(source="rule.series.url")
    family = serializers.CharField(source="rule.series.family")
    status = serializers.ChoiceField(choices=AlertEvent.Status.choices)
    value = serializers.FloatField(allow_null=True, help_text="Null when undefined.")
    latest_value = serializers.FloatField(allow_null=True, help_text="Null when undefined.")
    threshold = serializers.FloatField()
    effect_value = serializers.FloatField(allow_null=True)
    effect_threshold = serializers.FloatField(allow_null=True)
    observations = serializers.IntegerField()
    source = serializers.CharField()
    source_url = serializers.CharField()
    observed_at = serializers.DateTimeField()
    opened_at = serializers.DateTimeField()
    last_seen_at = serializers.DateTimeField()
    resolved_at = serializers.DateTimeField(allow_null=True)
    acknowledged_at = serializers.DateTimeField(allow_null=True)
    acknowledged_by = serializers.CharField(source="acknowledged_by.username", allow_null=True, default=None)
    notified = serializers.BooleanField(
        help_text="False when the cooldown held the opening's notification back; true does not say a message "
        "went (a rule without channels sends none): see channels_notified."
    )
    channels_notified = serializers.SerializerMethodField(
        help_text="How many channels were sent a message about the alert (0 for a rule without channels)."
    )

    def get_channels_notified(self, event: AlertEvent) -> int:
        return alerts.channels_notified(event)


# --- queries --------------------------------------------------------------------------------------------


def _rules(team: Team) -> QuerySet[AlertRule]:
    return AlertRule.objects.filter(team=team).select_related("series").prefetch_related("channels")


def _events(team: Team, status_filter: str | None) -> QuerySet[AlertEvent]:
    events = alerts.events_with_channels_notified(
        AlertEvent.objects.filter(team=team)
        .select_related("rule__series", "acknowledged_by")
        .order_by("-opened_at")
    )
    if status_filter == "unresolved":
        return events.exclude(status=AlertEvent.Status.RESOLVED)
    return events.filter(status=status_filter) if status_filter else events


# --- views ----------------------------------------------------------------------------------------------


@extend_schema(methods=["GET"], parameters=PAGE_PARAMETERS, responses={200: page_of(ChannelOut), 404: NOT_FOUND},
               operation_id="teams_channels_list", summary="The team's notification channels", tags=TAGS)  # fmt: skip
@extend_schema(methods=["POST"], request=ChannelIn, responses={201: ChannelOut, 400: FIELD_ERRORS, 403: FORBIDDEN},
               summary="Add an email or webhook channel (editors)", tags=TAGS)  # fmt: skip
@api_view(["GET", "POST"])
def channel_list(request: Request, team: str) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method == "POST")
    if request.method == "GET":
        out = ChannelOut if membership.can_edit else MaskedChannelOut
        return paginate(request, NotificationChannel.objects.filter(team=membership.team), out)
    data = ChannelIn(data=request.data)
    data.is_valid(raise_exception=True)
    channel = NotificationChannel.objects.create(team=membership.team, **data.validated_data)
    return Response(ChannelOut(channel).data, status=status.HTTP_201_CREATED)


@extend_schema(methods=["DELETE"], responses={204: None, 403: FORBIDDEN, 404: NOT_FOUND},
               summary="Delete a channel (editors)", tags=TAGS)  # fmt: skip
@extend_schema(methods=["PATCH"], request=ChannelPatchIn, responses={200: ChannelOut, 400: FIELD_ERRORS, 403: FORBIDDEN, 404: NOT_FOUND},
               summary="Change a channel: name, kind, target, on or off (editors)", tags=TAGS)  # fmt: skip
@api_view(["PATCH", "DELETE"])
def channel_detail(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team, write=True)
    channel = get_one(NotificationChannel.objects.filter(team=membership.team), pk, "channel")
    if request.method == "DELETE":
        channel.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)
    data = ChannelPatchIn(data=request.data)
    data.is_valid(raise_exception=True)
    merged = {
        f: data.validated_data.get(f, getattr(channel, f)) for f in ("name", "kind", "target", "enabled")
    }
    checked = ChannelIn(data=merged)
    checked.is_valid(raise_exception=True)
    for field, value in checked.validated_data.items():
        setattr(channel, field, value)
    channel.save(update_fields=["name", "kind", "target", "enabled"])
    return Response(ChannelOut(channel).data)


@extend_schema(request=None, responses={200: ChannelTestOut, 403: FORBIDDEN, 404: NOT_FOUND},
               summary="Send a test message through a channel now, and what it answered (editors)", tags=TAGS)  # fmt: skip
@api_view(["POST"])
def channel_test(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team, write=True)
    channel = get_one(
        NotificationChannel.objects.filter(team=membership.team).select_related("team"), pk, "channel"
    )
    delivered, answer = channel_test_send(channel, by=request.user.get_username())
    return Response({"delivered": delivered, "answer": answer})


@extend_schema(methods=["GET"], parameters=PAGE_PARAMETERS, responses={200: page_of(RuleOut), 404: NOT_FOUND},
               operation_id="teams_alert_rules_list", summary="The team's alert rules", tags=TAGS)  # fmt: skip
@extend_schema(methods=["POST"], request=RuleIn, responses={201: RuleOut, 400: FIELD_ERRORS, 403: FORBIDDEN},
               summary="Add an alert rule (editors)",
               description="`metric comparator threshold` on one of the team's series (`series`), or on the series "
               "named by `kind` and its subject fields. A metric that is unknown or not of the series' family is a "
               "400 on `metric` naming the family's closest names.", tags=TAGS)  # fmt: skip
@api_view(["GET", "POST"])
def rule_list(request: Request, team: str) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method == "POST")
    if request.method == "GET":
        return paginate(request, _rules(membership.team), RuleOut)
    data = RuleIn(data=request.data, context={"team": membership.team})
    data.is_valid(raise_exception=True)
    try:
        rule = alerts.alert_rule_create(team=membership.team, created_by=request.user, **data.validated_data)
    except InputError as error:
        field = error.field if isinstance(error, alerts.AlertRuleFieldError) else "non_field_errors"
        raise serializers.ValidationError({field: [str(error)]}) from None
    return Response(RuleOut(_rules(membership.team).get(pk=rule.pk)).data, status=status.HTTP_201_CREATED)


@extend_schema(methods=["GET"], responses={200: RuleOut, 404: NOT_FOUND}, summary="An alert rule", tags=TAGS)
@extend_schema(methods=["PATCH"], request=RulePatchIn, responses={200: RuleOut, 403: FORBIDDEN},
               summary="Change a rule: any of its settings, its channels, on or off (editors)", tags=TAGS)  # fmt: skip
@extend_schema(
    methods=["DELETE"], responses={204: None, 403: FORBIDDEN}, summary="Delete a rule (editors)", tags=TAGS
)
@api_view(["GET", "PATCH", "DELETE"])
def rule_detail(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method != "GET")
    rule = get_one(_rules(membership.team), pk, "alert rule")
    if request.method == "DELETE":
        rule.delete()
        return Response(status=status.HTTP_204_NO_CONTENT)
    if request.method == "PATCH":
        data = RulePatchIn(data=request.data)
        data.is_valid(raise_exception=True)
        changes = dict(data.validated_data)
        channels = None
        if "channels" in changes:
            wanted = set(changes.pop("channels"))
            channels = list(NotificationChannel.objects.filter(team=membership.team, pk__in=wanted))
            if len(channels) != len(wanted):
                raise serializers.ValidationError({"channels": ["Name the team's own channels."]})
        try:
            alerts.alert_rule_update(rule=rule, channels=channels, **changes)
        except InputError as error:
            field = error.field if isinstance(error, alerts.AlertRuleFieldError) else "non_field_errors"
            raise serializers.ValidationError({field: [str(error)]}) from None
        rule = _rules(membership.team).get(pk=rule.pk)
    return Response(RuleOut(rule).data)


@extend_schema(
    parameters=[*PAGE_PARAMETERS, OpenApiParameter("status", str, enum=EVENT_FILTERS)],
    responses={200: page_of(EventOut), 404: NOT_FOUND},
    operation_id="teams_alerts_list",
    summary="The team's alert events, newest first (`?status=unresolved` for open and acknowledged ones)",
    tags=TAGS,
)
@api_view(["GET"])
def event_list(request: Request, team: str) -> Response:
    membership = get_team_for_member(request.user, team)
    wanted = request.query_params.get("status") or None
    if wanted is not None and wanted not in EVENT_FILTERS:
        raise serializers.ValidationError({"status": [f"Choose {', '.join(EVENT_FILTERS)}."]})
    return paginate(request, _events(membership.team, wanted), EventOut)


@extend_schema(request=None, responses={200: EventOut, 403: FORBIDDEN, 404: NOT_FOUND},
               summary="Acknowledge an open alert (editors): it stays unresolved, marked with who and when",
               tags=TAGS)  # fmt: skip
@api_view(["POST"])
def event_acknowledge(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team, write=True)
    event = get_one(_events(membership.team, None), pk, "alert")
    return Response(EventOut(alerts.alert_event_acknowledge(event=event, by=request.user)).data)
