"""REST URLs of the series, included under /api/."""

from django.urls import path

from series import api

app_name = "series-api"

urlpatterns = [
    path("teams/<slug:team>/series/", api.series_list, name="list"),
    path("teams/<slug:team>/series/<int:pk>/values/", api.series_values, name="values"),
]
