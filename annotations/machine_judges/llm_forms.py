"""The form of the LLM judge's page: which pairs to grade."""

from __future__ import annotations

from typing import Any

from django import forms

from annotations.machine_judges.llm import MAX_PAIRS, topics_check
from annotations.models import Project
from evalplatform.errors import InputError


class LLMJudgeForm(forms.Form):
    """The tasks of some topics (or all), up to a limit; the topics are checked against the project."""

    topics = forms.CharField(
        required=False,
        max_length=20_000,
        help_text="Topic ids (qids) separated by spaces or commas; empty: every topic.",
    )
    limit = forms.IntegerField(
        min_value=1, max_value=MAX_PAIRS, initial=100, help_text="Most pairs asked for in this job."
    )

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.project = project

    def clean_topics(self) -> list[str]:
        qids = self.cleaned_data["topics"].replace(",", " ").split()
        try:
            return topics_check(self.project, qids)
        except InputError as error:
            raise forms.ValidationError(str(error)) from None
