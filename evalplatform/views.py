"""Project-wide pages of the toolkit: the health endpoint. (The home page, which reads both apps, is
`portal.views.home`.)"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from evalplatform.health import health_report, public_health_report


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The overall status for anyone; each check's details for staff and holders of `HEALTHZ_TOKEN`."""
    status, body = health_report() if _may_see_health_details(request) else public_health_report()
    return JsonResponse(body, status=status)


def _may_see_health_details(request: HttpRequest) -> bool:
    if request.user.is_authenticated and request.user.is_staff:
        return True
    expected = settings.HEALTHZ_TOKEN
    if not expected:
        return False
    scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
    given = credential.strip() if scheme.lower() == "bearer" else request.GET.get("token", "")
    return hmac.compare_digest(given.encode(), expected.encode())
