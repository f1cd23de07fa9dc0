"""Forms of the alerts page: a rule on a stream or on a run name evaluated on a qrels source, and a channel."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from evalcore.alerts import COMPARATORS, SEVERITIES
from evalplatform.errors import InputError
from evalplatform.models import Team
from monitoring.models import AlertRule, EmbeddingStream, NotificationChannel, QrelsSource
from monitoring.notifications import webhook_url_check


class RuleForm(forms.Form):
    name = forms.CharField(max_length=200)
    metric = forms.CharField(
        max_length=100, help_text="Any metric name: ndcg_cut_10, P@10, mmd_p_value, avg_cosine_similarity..."
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
    stream = forms.ModelChoiceField(
        queryset=EmbeddingStream.objects.none(), required=False, help_text="Watch a stream..."
    )
    qrels = forms.ModelChoiceField(
        queryset=QrelsSource.objects.none(),
        required=False,
        help_text="...or the runs named below on these qrels.",
    )
    run_name = forms.CharField(
        max_length=200, required=False, help_text="E.g. nightly: every run of that name, as it is evaluated."
    )
    channels = forms.ModelMultipleChoiceField(
        queryset=NotificationChannel.objects.none(), required=False, widget=forms.CheckboxSelectMultiple
    )

    def __init__(self, *args: Any, team: Team, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["stream"].queryset = EmbeddingStream.objects.filter(team=team)  # type: ignore[attr-defined]
        self.fields["qrels"].queryset = QrelsSource.objects.filter(team=team)  # type: ignore[attr-defined]
        self.fields["channels"].queryset = NotificationChannel.objects.filter(team=team)  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if bool(cleaned.get("stream")) == bool(cleaned.get("qrels")):
            raise ValidationError("Choose a stream, or a qrels source with a run name.")
        if cleaned.get("qrels") and not (cleaned.get("run_name") or "").strip():
            self.add_error("run_name", "Name the runs the rule watches.")
        cleaned["on_undefined"] = cleaned.get("on_undefined") or self.fields["on_undefined"].initial
        return cleaned


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
