"""URL configuration."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, reverse_lazy
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView

from evalplatform import api, charts, csp, views
from portal import views as portal_views

urlpatterns = [
    # The judging API first: a URL is tried against the patterns in order, and every answer an annotator
    # gives comes this way (behind the pages' 60-odd patterns, matching cost a twentieth of a request).
    path("api/", include("annotations.api_urls")),
    path("", portal_views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("vendor/plotly-<str:version>.min.js", charts.plotly_js, name="plotly-js"),
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # An invited person's link (evalplatform.people): Django's password-reset confirmation, as "set".
    path(
        "accounts/set-password/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(
            template_name="registration/password_set.html", success_url=reverse_lazy("password-set-done")
        ),
        name="password-set",
    ),
    path(
        "accounts/set-password/done/",
        auth_views.PasswordResetCompleteView.as_view(template_name="registration/password_set_done.html"),
        name="password-set-done",
    ),
    path("admin/", admin.site.urls),
    path("api/me/", api.me, name="api-me"),
    path("", include("annotations.urls")),
    path("", include("monitoring.urls")),
    path("", include("series.urls")),
    path("api/", include("monitoring.api_urls")),
    path("api/", include("series.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Both under the Content-Security-Policy (`evalplatform.csp`): Swagger UI's start-up script is a file
    # of its own (the split view); the Redoc page loads no web fonts from Google and may start a worker.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path(
        "api/redoc/",
        csp.with_policy(csp.REDOC_POLICY)(
            SpectacularRedocView.as_view(url_name="api-schema", template_name="evalplatform/redoc.html")
        ),
        name="api-redoc",
    ),
]
