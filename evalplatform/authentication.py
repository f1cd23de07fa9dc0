"""How API requests sign in: DRF's token scheme with its lookup written out, and DRF's session scheme.

The judging API's views set their own sign-in (`annotations.api.JudgingTokenAuthentication`), which reads
the judge's project membership in the same statement; every other API request uses this one."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.utils.translation import gettext as _
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

from evalplatform import sqlrows


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's `Authorization: Token <key>`, the token and its user read by one written-out query (every
    API request of an annotator runs it; see `evalplatform.sqlrows`). The same answers as DRF's.

    It reads nothing of the URL: a view that wants more read with the sign-in names a subclass in its
    `authentication_classes` (the judging API's `annotations.api.JudgingTokenAuthentication`)."""

    def authenticate_credentials(self, key: str) -> tuple[User, Token]:
        token_shape, user_shape = sqlrows.columns(Token, "t"), sqlrows.columns(User, "u")
        with sqlrows.cursor() as cursor:
            cursor.execute(
                f"SELECT {token_shape.select}, {user_shape.select} FROM {Token._meta.db_table} t "
                f"JOIN {User._meta.db_table} u ON u.id = t.user_id WHERE t.key = %s",
                [key],
            )
            row: Any = cursor.fetchone()
        if row is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        return self._checked(
            sqlrows.instance(token_shape, row), sqlrows.instance(user_shape, row, token_shape.width)
        )

    @staticmethod
    def _checked(token: Token, user: User) -> tuple[User, Token]:
        """The token's user, refused when inactive (as DRF refuses it)."""
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        token.user = user
        return user, token
