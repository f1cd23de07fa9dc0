"""Forms of the quality page: a qrels build's parameters and a lead's decision on an annotator."""

from __future__ import annotations

from typing import Any

from django import forms

from annotations.models import SOURCE_RULES, MachineJudge, Project, ProjectMembership, QrelsBuild
from evalcore.judging import DEFAULT_QRELS_PARAMS, QrelsParams


class QrelsBuildForm(forms.Form):
    """The parameters of a qrels build; the thresholds start at the project's."""

    aggregation = forms.ChoiceField(
        choices=QrelsBuild.Aggregation.choices, initial=DEFAULT_QRELS_PARAMS.aggregation
    )
    tolerance = forms.FloatField(
        min_value=0,
        max_value=QrelsParams.MAX_TOLERANCE,
        initial=DEFAULT_QRELS_PARAMS.tolerance,
        help_text="Keep a pair when its labels differ by at most this (±1 by default).",
    )
    min_labels = forms.IntegerField(
        min_value=1,
        max_value=QrelsParams.MAX_MIN_LABELS,
        initial=DEFAULT_QRELS_PARAMS.min_labels,
        label="Minimum labels per pair",
    )
    min_accuracy = forms.FloatField(min_value=0, max_value=1, label="Minimum accuracy on gold")
    min_gold = forms.IntegerField(min_value=0, max_value=QrelsParams.MAX_MIN_GOLD, label="Minimum gold items")
    # Unticked (the default, and a form posted without it) keeps adjudicated grades in the build.
    ignore_adjudications = forms.BooleanField(
        required=False, label="Leave out adjudicated grades", help_text="Judge every pair by the crowd alone."
    )

    sources = forms.ChoiceField(
        choices=[(key, f"{key}: {rule}") for key, rule in SOURCE_RULES.items()],
        initial="human",
        required=False,
        help_text="Which labels the build reads; machine labels never count as an annotator's.",
    )
    machine_judge = forms.ModelChoiceField(
        queryset=MachineJudge.objects.none(), required=False, help_text="For sources machine or both."
    )

    @classmethod
    def for_project(cls, project: Project, data: Any = None) -> QrelsBuildForm:
        form = cls(
            data, initial={"min_accuracy": project.min_gold_accuracy, "min_gold": project.min_gold_items}
        )
        form.fields["machine_judge"].queryset = MachineJudge.objects.filter(project=project)  # type: ignore[attr-defined]
        return form

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        data["sources"] = data.get("sources") or "human"
        if data["sources"] == "human":
            data["machine_judge"] = None
        elif data.get("machine_judge") is None:
            self.add_error("machine_judge", "Choose the machine judge whose labels the build reads.")
        return data


class OverrideForm(forms.Form):
    decision = forms.ChoiceField(choices=ProjectMembership.QualityOverride.choices)
