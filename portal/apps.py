from django.apps import AppConfig


class PortalConfig(AppConfig):
    """The composition layer (see the package's docstring): no models, only pages, commands and glue."""

    name = "portal"
    verbose_name = "Portal"
