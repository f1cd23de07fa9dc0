"""Settings of the load benchmark's web server and set-up (benchmarks/annotation_load.py), never the
product's: the project's settings with the benchmark's URLconf (`benchmarks.load_urls`, the site's URLs
plus the floor endpoint), and a fast password hasher for the simulated annotators' sign-ins through the
login page, which are untimed (the default hasher would spend some 20 s of the two cores on 50 of them).
"""

from evalplatform.settings import *  # noqa: F403

ROOT_URLCONF = "benchmarks.load_urls"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Pages link their static files through the manifest `collectstatic` writes; where it was not run (a
# checkout), by their own names, as in development: the pages render either way.
if not (STATIC_ROOT / "staticfiles.json").exists():  # noqa: F405
    STORAGES = {  # noqa: F405
        **STORAGES,  # noqa: F405
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
