"""Forms of the machine judges' pages: an upload of labels, a routing to people, a build's sources."""

from __future__ import annotations

from django import forms

from annotations.machine_judges.routing import RouteParams
from annotations.models import MachineJudge

DEFAULT_ROUTE = RouteParams()


class LabelsUploadForm(forms.Form):
    file = forms.FileField(
        help_text="TREC qrels (qid 0 doc_id grade) or JSON Lines {qid, doc_id, label, confidence?, rationale?}."
    )
    name = forms.CharField(
        max_length=100, help_text="The judge's name; the same name and version add to its labels."
    )
    version = forms.CharField(max_length=64, initial="1", help_text="A new prompt or model is a new version.")
    kind = forms.ChoiceField(choices=MachineJudge.Kind.choices, initial=MachineJudge.Kind.LLM)
    model = forms.CharField(max_length=200, required=False)
    configuration = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), required=False, label="Prompt or configuration"
    )


class RouteForm(forms.Form):
    budget = forms.IntegerField(
        min_value=0,
        max_value=100_000,
        initial=DEFAULT_ROUTE.budget,
        help_text="Most pairs routed for a reason, over all routings of this judge.",
    )
    confidence_below = forms.FloatField(min_value=0, max_value=1, initial=DEFAULT_ROUTE.confidence_below)
    topic_agreement_below = forms.FloatField(
        min_value=0, max_value=1, initial=DEFAULT_ROUTE.topic_agreement_below
    )
    sample_share = forms.FloatField(
        min_value=0,
        max_value=1,
        initial=DEFAULT_ROUTE.sample_share,
        help_text="Share of the other unjudged pairs sent to people at random.",
    )
    seed = forms.IntegerField(min_value=0, initial=DEFAULT_ROUTE.seed)

    def params(self) -> RouteParams:
        return RouteParams(**self.cleaned_data)
