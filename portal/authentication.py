"""How API requests sign in: DRF's token scheme with its lookup written out, and DRF's session scheme.

In the composition layer because a judging request's sign-in reads the judge's project membership in the
same statement (`annotations.hotpath`), while every other API request uses the toolkit's `sqlrows`."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.utils.translation import gettext as _
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token
from rest_framework.request import Request

from evalplatform import sqlrows


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's `Authorization: Token <key>`, the token and its user read by one written-out query (every
    API request of an annotator runs it; see `evalplatform.sqlrows`). The same answers as DRF's. On a URL
    that names a project (`<slug>`), the same statement reads the user's membership of it too."""

    #: The project slug of the URL signed in to, if it names one (set per request: DRF makes its
    #: authenticators anew for each request).
    slug: str | None = None

    def authenticate(self, request: Request) -> tuple[User, Token] | None:
        self.slug = (request.parser_context or {}).get("kwargs", {}).get("slug")
        return super().authenticate(request)  # type: ignore[no-any-return]

    def authenticate_credentials(self, key: str) -> tuple[User, Token]:
        if self.slug is not None:
            # A judging request: the user's membership of the project is read in the same statement, and
            # kept on the request's user for the view's membership check (`selectors.get_project_for_member`).
            from annotations import hotpath

            found = hotpath.token_member_of(key=key, slug=self.slug)
            if found is None:
                raise exceptions.AuthenticationFailed(_("Invalid token."))
            token, user, membership = found
            hotpath.membership_remember(user, self.slug, membership)
            return self._checked(token, user)
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

    def _checked(self, token: Token, user: User) -> tuple[User, Token]:
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        token.user = user
        return user, token
