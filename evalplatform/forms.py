"""Form pieces every app uses: the confirmation of a destructive action."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError


class ConfirmForm(forms.Form):
    """A destructive POST names what it confirms (`expected`, sent back by the confirmation page's
    button): an empty or stray POST changes nothing. Rendered by `evalplatform/confirm.html`."""

    confirm = forms.CharField(widget=forms.HiddenInput)

    def __init__(self, *args: Any, expected: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.expected = expected
        self.fields["confirm"].initial = expected

    def clean_confirm(self) -> Any:
        if self.cleaned_data["confirm"] != self.expected:
            raise ValidationError("Confirm with the button on this page.")
        return True
