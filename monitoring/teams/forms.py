"""The team forms: a new team, its name and description, a member and their role, a confirmation."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from evalplatform.models import RESERVED_TEAM_SLUGS, Team, TeamMembership
from evalplatform.people import PersonField


class TeamForm(forms.ModelForm):
    class Meta:
        model = Team
        fields = ["name", "slug", "description"]
        help_texts = {"slug": "The team's name in its addresses: /teams/<slug>/ (letters, digits, - and _)."}
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}

    def clean_slug(self) -> Any:
        slug = self.cleaned_data["slug"]
        if slug.lower() in RESERVED_TEAM_SLUGS:
            raise ValidationError("“new” is the address of the new-team page: choose another.")
        if Team.objects.filter(slug=slug).exclude(pk=self.instance.pk).exists():
            raise ValidationError(f"A team is already named {slug!r} in its addresses.")
        return slug


class TeamEditForm(TeamForm):
    """Name and description; the slug stays (addresses, API clients and saved links use it)."""

    class Meta(TeamForm.Meta):
        fields = ["name", "description"]


class MemberAddForm(forms.Form):
    person = PersonField()
    role = forms.ChoiceField(choices=TeamMembership.Role.choices, initial=TeamMembership.Role.VIEWER,
                             help_text="Viewers read; editors upload runs, start jobs and manage members.")  # fmt: skip


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(choices=TeamMembership.Role.choices)
