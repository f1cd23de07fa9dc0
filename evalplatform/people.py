"""People by username or email, and invitations for those who have no account yet.

A team editor or a project lead names a person by their username or their email. An email that no
account uses creates one (with no usable password, in the platform group the invitation is for) and
mails a link to set a password: Django's password-reset link: the same token, valid for
`PASSWORD_RESET_TIMEOUT` seconds, spent once the password is set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.http import HttpRequest
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from rest_framework import serializers

from evalplatform.auth import User
from evalplatform.roles import Role


@dataclass(frozen=True)
class Person:
    """Whom a form named: an active account, or an email to invite."""

    user: User | None
    email: str = ""

    @property
    def label(self) -> str:
        return self.user.get_username() if self.user is not None else self.email


def person_find(identifier: str) -> Person:
    """The active account named `identifier` (a username, or an email one account uses), or an email to
    invite; ValidationError with the reason otherwise."""
    identifier = identifier.strip()
    if not identifier:
        raise ValidationError("Give a username or an email.")
    users = get_user_model().objects
    user = users.filter(username=identifier).first()
    if user is None and "@" in identifier:
        try:
            validate_email(identifier)
        except ValidationError:
            raise ValidationError(f"{identifier!r} is neither a username nor a valid email.") from None
        found = list(users.filter(email__iexact=identifier)[:2])
        if len(found) > 1:
            raise ValidationError(f"Several accounts use {identifier}: give the username instead.")
        if not found:
            return Person(user=None, email=identifier.lower())
        user = found[0]
    if user is None:
        raise ValidationError(f"There is no account named {identifier!r} (give an email to invite someone).")
    if not user.is_active:
        raise ValidationError(f"The account {user.get_username()!r} is deactivated.")
    return Person(user=user)


class PersonField(forms.CharField):
    """A username or an email; cleans to a `Person`."""

    def __init__(self, **kwargs: object) -> None:
        kwargs.setdefault("max_length", 254)
        kwargs.setdefault("label", "Username or email")
        kwargs.setdefault("help_text", "An email with no account gets an invitation to set a password.")
        super().__init__(**kwargs)  # type: ignore[arg-type]

    def clean(self, value: object) -> Person:  # type: ignore[override]
        return person_find(str(super().clean(value)))


class PersonIn(serializers.Serializer):
    """The API's `person` to add to a team or a project: a username or an email; validates to a `Person`."""

    person = serializers.CharField(
        max_length=254, help_text="A username, or an email (invited if no account uses it)."
    )

    def validate_person(self, value: str) -> Person:
        try:
            return person_find(value)
        except ValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None


class MemberOut(serializers.Serializer):
    """A member of a team or a project (a membership row with its user) in the API; each adds its `role`."""

    id = serializers.IntegerField(source="pk")
    username = serializers.CharField(source="user.username")
    email = serializers.CharField(source="user.email", allow_blank=True)
    invited = serializers.SerializerMethodField(help_text="True until an invited person sets a password.")

    def get_invited(self, membership: Any) -> bool:
        return not membership.user.has_usable_password()


class MailErrorOut(serializers.Serializer):
    """With a member just added: why their invitation mail failed (the serializer's `mail_error` context)."""

    mail_error = serializers.SerializerMethodField(
        help_text="Why the invitation mail failed (empty when it was sent, or nobody was invited)."
    )

    def get_mail_error(self, membership: Any) -> str:
        return str(self.context.get("mail_error", ""))


@dataclass(frozen=True)
class Invitation:
    user: User
    invited: bool
    #: Why the invitation mail was not sent ("" when it was, or when nobody was invited).
    mail_error: str = ""


def person_account(
    person: Person, *, group: Role, invited_by: User | None, request: HttpRequest | None, what: str
) -> Invitation:
    """The person's account: theirs, or a new one for an invited email (mailed a set-password link at
    once, on the request's address, or on settings.SITE_URL without a request: a command). `what` says in
    the mail what they were invited to ("the Search team")."""
    if person.user is not None:
        return Invitation(user=person.user, invited=False)
    users = get_user_model().objects
    username = person.email
    if users.filter(username=username).exists():  # another account took the email as its name
        raise ValidationError(f"An account is named {username!r} but uses another email: give its username.")
    user = users.create_user(username=username, email=person.email)
    user.set_unusable_password()
    user.save(update_fields=["password"])
    user.groups.add(Group.objects.get_or_create(name=group.value)[0])
    path = reverse(
        "password-set",
        kwargs={
            "uidb64": urlsafe_base64_encode(force_bytes(user.pk)),
            "token": default_token_generator.make_token(user),
        },
    )
    link = request.build_absolute_uri(path) if request is not None else settings.SITE_URL.rstrip("/") + path
    inviter = (
        (invited_by.get_full_name() or invited_by.get_username()) if invited_by is not None else "An admin"
    )
    body = (
        f"{inviter} invited you to {what} on evalplatform.\n\n"
        f"Your username is {user.get_username()}. Set your password here (the link works once):\n\n{link}\n"
    )

    # Sent now, so that a failure is told on the page; the account and membership stay (the person can
    # be sent a new link with Django's password reset, or an admin sets the password).
    try:
        send_mail(f"You are invited to {what}", body, None, [person.email])
    except Exception as exc:  # noqa: BLE001 - any mail failure is reported, not raised
        return Invitation(user=user, invited=True, mail_error=f"{type(exc).__name__}: {exc}")
    return Invitation(user=user, invited=True)


def invitation_message(invitation: Invitation, what: str) -> tuple[str, str]:
    """(level, text) for the page's message after adding a person."""
    name = invitation.user.get_username()
    if not invitation.invited:
        return "success", f"{name} joined {what}."
    if invitation.mail_error:
        return "warning", (
            f"{name} joined {what}, but the invitation mail could not be sent ({invitation.mail_error}): "
            "ask an admin to check the mail settings."
        )
    return "success", f"Invited {invitation.user.email} to {what}: a link to set a password was mailed."


__all__ = [
    "Invitation",
    "MailErrorOut",
    "MemberOut",
    "Person",
    "PersonField",
    "PersonIn",
    "invitation_message",
    "person_account",
    "person_find",
]
