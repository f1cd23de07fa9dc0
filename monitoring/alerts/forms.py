"""Forms of the alerts page: a rule on one of the team's series (chosen, or named by its subject: a stream,
a run name on a qrels source, a recommendation or fraud score set, a judging project, an annotator), and a
channel."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from evalcore.alerts import COMPARATORS, SEVERITIES
from evalcore.metrics import FAMILIES, metric_registry
from evalplatform.errors import InputError
from evalplatform.models import Team
from monitoring.alerts import services as alerts
from monitoring.alerts.notifications import webhook_url_check
from monitoring.models import AlertRule, EmbeddingStream, NotificationChannel, QrelsSource
from series.models import Series
from series.selectors import team_series

#: The fields that name a new series' subject (`alerts.rule_series_resolve`).
SUBJECT_NAMES = ("stream", "qrels", "run_name", "set_name", "project", "username")
#: The id of the datalist the metric field offers the series' family's metrics from.
METRICS_LIST = "rule-metrics"


class RuleForm(forms.Form):
    name = forms.CharField(max_length=200)
    series = forms.TypedChoiceField(
        coerce=int, empty_value=None, required=False, label="Series",
        help_text="One of the team's series; or leave it empty and name a subject below.",
    )  # fmt: skip
    kind = forms.ChoiceField(
        choices=[("", "---------"), *Series.Kind.choices], required=False, label="Or a new series of kind",
    )  # fmt: skip
    stream = forms.ModelChoiceField(
        queryset=EmbeddingStream.objects.none(), required=False, help_text="Stream."
    )
    qrels = forms.ModelChoiceField(
        queryset=QrelsSource.objects.none(),
        required=False,
        help_text="Run: the runs named below on these qrels.",
    )
    run_name = forms.CharField(max_length=200, required=False, help_text="Run: e.g. nightly.")
    set_name = forms.CharField(
        max_length=200, required=False, help_text="Recommendations or fraud scores: the set's name."
    )
    project = forms.SlugField(
        max_length=64, required=False, help_text="Project or annotator: the judging project's slug."
    )
    username = forms.CharField(max_length=150, required=False, help_text="Annotator: their username.")
    metric = forms.CharField(
        max_length=100,
        help_text="A metric of the series' family: ndcg_cut_10, mmd_p_value, catalog_coverage, detection_rate...",
        widget=forms.TextInput(attrs={"list": METRICS_LIST, "autocomplete": "off"}),
    )
    comparator = forms.ChoiceField(choices=[(c, c) for c in COMPARATORS])
    threshold = forms.FloatField()
    severity = forms.ChoiceField(choices=[(s, s) for s in SEVERITIES], initial="warning")
    consecutive = forms.IntegerField(
        min_value=1, max_value=50, initial=1, help_text="Values in a row that must break it."
    )
    cooldown_minutes = forms.IntegerField(
        min_value=0, initial=60, help_text="Notify at most once in this many minutes."
    )
    on_undefined = forms.ChoiceField(
        label="When the value is undefined",
        choices=AlertRule.OnUndefined.choices,
        required=False,  # a form posted without it gets the model's default
        initial=AlertRule._meta.get_field("on_undefined").default,
        help_text=AlertRule._meta.get_field("on_undefined").help_text,
    )
    channels = forms.ModelMultipleChoiceField(
        queryset=NotificationChannel.objects.none(), required=False, widget=forms.CheckboxSelectMultiple
    )

    def __init__(self, *args: Any, team: Team, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.team = team
        self.team_series = list(team_series([team.pk]).order_by("kind", "label"))
        labels = dict(Series.Kind.choices)
        groups: dict[str, list[tuple[int, str]]] = {}
        for each in self.team_series:
            groups.setdefault(labels[each.kind], []).append((each.pk, each.label))
        self.fields["series"].choices = [("", "---------"), *groups.items()]  # type: ignore[attr-defined]
        self.fields["stream"].queryset = EmbeddingStream.objects.filter(team=team)  # type: ignore[attr-defined]
        self.fields["qrels"].queryset = QrelsSource.objects.filter(team=team)  # type: ignore[attr-defined]
        self.fields["channels"].queryset = NotificationChannel.objects.filter(team=team)  # type: ignore[attr-defined]

    def choosing(self) -> dict[str, Any]:
        """What the page's script needs to offer the metrics of the chosen series' family: each series'
        family, each kind's, and each family's metric names."""
        registry = metric_registry()
        return {
            "series": {str(each.pk): each.family for each in self.team_series},
            "kinds": {str(kind): family for kind, family in Series.FAMILY_OF_KIND.items()},
            "metrics": {family: [spec.name for spec in registry.family(family)] for family in FAMILIES},
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        cleaned["on_undefined"] = cleaned.get("on_undefined") or self.fields["on_undefined"].initial
        chosen = next((s for s in self.team_series if s.pk == cleaned.get("series")), None)
        subject = {name: cleaned.get(name) for name in SUBJECT_NAMES}
        kind = cleaned.get("kind") or alerts.subject_kind(**subject)
        if chosen is None and not kind:
            raise ValidationError("Choose one of the team's series, or a kind of series and its subject.")
        family = chosen.family if chosen is not None else Series.FAMILY_OF_KIND[Series.Kind(kind)]
        try:
            if cleaned.get("metric"):
                alerts.metric_of_family_check("metric", cleaned["metric"], family)
            if chosen is None and not self.errors:
                stream, qrels = subject.pop("stream"), subject.pop("qrels")
                chosen = alerts.rule_series_resolve(
                    team=self.team, kind=kind, stream=stream.pk if stream else "",
                    qrels=qrels.pk if qrels else "", **subject,
                )  # fmt: skip
        except alerts.AlertRuleFieldError as error:
            self.add_error(error.field if error.field in self.fields else None, str(error))
        cleaned["series_chosen"] = chosen
        return cleaned

    def rule_fields(self) -> dict[str, Any]:
        """The valid form as `alerts.alert_rule_create`'s arguments."""
        fields = ("name", "metric", "comparator", "threshold", "severity", "consecutive", "cooldown_minutes",
                  "on_undefined", "channels")  # fmt: skip
        return {"series": self.cleaned_data["series_chosen"], **{f: self.cleaned_data[f] for f in fields}}


class ChannelForm(forms.ModelForm):
    class Meta:
        model = NotificationChannel
        fields = ["name", "kind", "target"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        target, kind = (cleaned.get("target") or "").strip(), cleaned.get("kind")
        if kind == NotificationChannel.Kind.WEBHOOK:
            try:
                webhook_url_check(target)
            except InputError as error:
                self.add_error("target", str(error))
        if kind == NotificationChannel.Kind.EMAIL and not all(
            "@" in p for p in target.split(",") if p.strip()
        ):
            self.add_error("target", "Give email addresses, separated by commas.")
        cleaned["target"] = target
        return cleaned


class RuleEditForm(forms.Form):
    """A rule's settings, its series kept (`alerts.alert_rule_update` checks them as a new rule's)."""

    name = forms.CharField(max_length=200)
    metric = forms.CharField(max_length=100, help_text="A metric of the series' family.")
    comparator = forms.ChoiceField(choices=[(c, c) for c in COMPARATORS])
    threshold = forms.FloatField()
    severity = forms.ChoiceField(choices=[(s, s) for s in SEVERITIES])
    consecutive = forms.IntegerField(
        min_value=1, max_value=alerts.MAX_CONSECUTIVE, help_text="Values in a row that must break it."
    )
    cooldown_minutes = forms.IntegerField(
        min_value=0, max_value=60 * 24 * 30, help_text="Notify at most once in this many minutes."
    )
    effect_metric = forms.CharField(
        max_length=100, required=False, help_text="Optional: a second metric that must also pass its limit."
    )
    effect_threshold = forms.FloatField(
        required=False, help_text="The effect metric's limit; empty: the monitor's calibrated one."
    )
    on_undefined = forms.ChoiceField(
        label="When the value is undefined", choices=AlertRule.OnUndefined.choices
    )
    channels = forms.ModelMultipleChoiceField(
        queryset=NotificationChannel.objects.none(), required=False, widget=forms.CheckboxSelectMultiple
    )
    enabled = forms.BooleanField(required=False)

    def __init__(self, *args: Any, rule: AlertRule, **kwargs: Any) -> None:
        kwargs["initial"] = {
            **{name: getattr(rule, name) for name in alerts.RULE_EDITABLE},
            "channels": list(rule.channels.all()),
        }
        super().__init__(*args, **kwargs)
        self.rule = rule
        self.fields["channels"].queryset = NotificationChannel.objects.filter(team_id=rule.team_id)  # type: ignore[attr-defined]

    def rule_fields(self) -> dict[str, Any]:
        """The valid form as `alerts.alert_rule_update`'s arguments (its checks report to the view)."""
        fields = {name: self.cleaned_data[name] for name in alerts.RULE_EDITABLE}
        fields["effect_metric"] = (fields["effect_metric"] or "").strip()
        return {**fields, "channels": self.cleaned_data["channels"]}


class ChannelEditForm(ChannelForm):
    class Meta(ChannelForm.Meta):
        fields = ["name", "kind", "target", "enabled"]
