"""The "compare with…" picker of an evaluation's page: the form naming the other evaluation, and what the
page shows of the evaluation's comparisons (`monitoring.recsys_fraud.comparison_views` starts them)."""

from __future__ import annotations

from typing import Any

from django import forms

from evalplatform.jobs import JobStatus
from evalplatform.models import TeamMembership
from monitoring.models import FraudScoreEvaluation, RecommendationEvaluation
from monitoring.recsys_fraud import selectors

Evaluation = FraudScoreEvaluation | RecommendationEvaluation


class CompareForm(forms.Form):
    """What to compare this evaluation with: one of the team's other evaluations of the kind, or another
    set of the kind, evaluated with this evaluation's options (found or started). Exactly one of the two."""

    other = forms.ModelChoiceField(queryset=FraudScoreEvaluation.objects.none(), label="Compare with",
                                   required=False, empty_label="Choose an evaluation…")  # fmt: skip
    other_set = forms.ModelChoiceField(
        queryset=FraudScoreEvaluation.objects.none(), label="or another set, evaluated with these options",
        required=False, empty_label="Choose a set…",
    )  # fmt: skip

    def __init__(self, *args: Any, evaluation: Evaluation, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "compare_%s")  # the page may hold other forms with their own fields
        super().__init__(*args, **kwargs)
        fields: Any = self.fields
        fields["other"].queryset = selectors.compare_choices(evaluation)
        fields["other"].label_from_instance = _choice_label
        fields["other_set"].queryset = selectors.compare_sets(evaluation)
        # The pickers list the newest (one query each); a POST may name any of the team's others.
        for name, label in (("other", _choice_label), ("other_set", str)):
            newest = [(row.pk, label(row)) for row in fields[name].queryset[: selectors.COMPARE_CHOICES]]
            fields[name].widget.choices = [("", fields[name].empty_label), *newest]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not self.errors and (data.get("other") is None) == (data.get("other_set") is None):
            self.add_error(
                "other", "Choose an evaluation, or a set to evaluate with these options (one of the two)."
            )
        return data


def _choice_label(evaluation: Evaluation) -> str:
    owner = (
        evaluation.score_set
        if isinstance(evaluation, FraudScoreEvaluation)
        else evaluation.recommendation_set
    )
    return f"{owner.name}: evaluation #{evaluation.pk} ({JobStatus(evaluation.status).label.lower()})"


def compare_context(
    membership: TeamMembership, evaluation: Evaluation, form: CompareForm | None = None
) -> dict[str, Any]:
    """What an evaluation's page shows of its comparisons: the picker (editors) and the comparisons."""
    return {
        "compare_form": (form or CompareForm(evaluation=evaluation)) if membership.can_edit else None,
        "comparisons": selectors.evaluation_comparisons(evaluation),
        "compare_kind": "fraud" if isinstance(evaluation, FraudScoreEvaluation) else "recsys",
    }
