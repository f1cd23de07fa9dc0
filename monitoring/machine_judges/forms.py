"""The leaderboard's form that starts scoring it on a machine judge's labels."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from annotations.models import MachineJudge
from monitoring.machine_judges.models import MachineJudgeEvaluation


class MachineJudgeEvaluationForm(forms.Form):
    """A judge of the qrels' project, and which queries form the human sample."""

    judge = forms.TypedChoiceField(coerce=int, label="Machine judge")
    sample = forms.ChoiceField(
        choices=MachineJudgeEvaluation.Sample.choices, initial=MachineJudgeEvaluation.Sample.ALL,
        label="Human sample",
    )  # fmt: skip
    sample_size = forms.IntegerField(
        min_value=2, required=False, label="Queries drawn", help_text="With a random sample: how many."
    )
    seed = forms.IntegerField(min_value=0, initial=0, required=False, label="Seed")

    def __init__(self, *args: Any, judges: Sequence[MachineJudge], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.judges = {judge.pk: judge for judge in judges}
        self.fields["judge"].choices = [(judge.pk, str(judge)) for judge in judges]  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("sample") == MachineJudgeEvaluation.Sample.RANDOM and not data.get("sample_size"):
            self.add_error("sample_size", ValidationError("Say how many queries to draw (at least 2)."))
        if data.get("sample") != MachineJudgeEvaluation.Sample.RANDOM:
            data["sample_size"], data["seed"] = 0, 0
        data["seed"] = data.get("seed") or 0
        return data

    def params(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "judge": self.judges[data["judge"]], "sample": data["sample"],
            "sample_size": data["sample_size"] or 0, "seed": data["seed"],
        }  # fmt: skip
