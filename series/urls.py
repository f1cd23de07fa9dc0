"""A team's series pages (included at the site's root)."""

from django.urls import path

from series import views

app_name = "series"

urlpatterns = [
    path("teams/<slug:team>/series/", views.series_list, name="list"),
    path("teams/<slug:team>/series/<int:pk>/", views.series_detail, name="detail"),
    path("teams/<slug:team>/series/<int:pk>/values.csv", views.series_csv, name="csv"),
]
