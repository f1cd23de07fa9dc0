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
    """The other evaluation to compare this one with: the team's others of the kind, newest first."""

    other = forms.ModelChoiceField(queryset=FraudScoreEvaluation.objects.none(), label="Compare with",
                                   empty_label="Choose an evaluation…")  # fmt: skip

    def __init__(self, *args: Any, evaluation: Evaluation, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "compare_%s")  # the page may hold other forms with their own fields
        super().__init__(*args, **kwargs)
        field: Any = self.fields["other"]
        field.queryset = selectors.compare_choices(evaluation)
        field.label_from_instance = _choice_label
        # The picker lists the newest (one query); a POST may name any of the team's others.
        newest = [(row.pk, _choice_label(row)) for row in field.queryset[: selectors.COMPARE_CHOICES]]
        field.widget.choices = [("", field.empty_label), *newest]


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
