"""Settings for evalplatform, read from the environment.

Defaults give an embedded setup (SQLite and kombu's filesystem broker under ./var) that needs no
server. Production sets DATABASE_URL, CELERY_BROKER_URL, SECRET_KEY, DEBUG=false and ALLOWED_HOSTS.
`make demo` writes its own settings to var/demo.env, read for what the environment does not set.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from evalplatform.env import (
    DEMO_ENV_NAME,
    default_broker_url,
    default_sqlite_url,
    env_bool,
    env_float,
    env_int,
    env_list,
    filesystem_broker_options,
    is_filesystem_broker,
    load_env_file,
)
from evalplatform.outbound import networks_parse

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("EVALPLATFORM_VAR_DIR", BASE_DIR / "var"))
# The settings `make demo` ran with (`bin/demo` writes them), so that a command typed later in another shell
# works as the README and docs/ show it, without DEBUG or a SECRET_KEY of its own. Variables set in the environment
# win; where the file is absent (any deployment) nothing changes, and SECRET_KEY stays required below.
load_env_file(VAR_DIR / DEMO_ENV_NAME)

DEBUG = env_bool("DEBUG", False)

DEV_SECRET_KEY = "django-insecure-development-only-key-never-use-in-production"
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set when DEBUG is off. Set DEBUG=true for local development, or run "
            f"`make demo` once: later commands then read its settings from {VAR_DIR / DEMO_ENV_NAME}."
        )
    SECRET_KEY = DEV_SECRET_KEY
elif SECRET_KEY == DEV_SECRET_KEY and not DEBUG:
    raise ImproperlyConfigured("The development SECRET_KEY is refused when DEBUG is off.")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "axes",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "evalplatform",
    "series",
    "annotations",
    "monitoring",
    "portal",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    # Django's, reading the session and its user in one statement (evalplatform.auth).
    "evalplatform.auth.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "evalplatform.csp.ContentSecurityPolicyMiddleware",
    # A request that lost its database connection (a restart, a failover) answers 503 with Retry-After.
    "evalplatform.dbdown.DatabaseUnavailableMiddleware",
    # Last: it turns a login that axes refused into the lockout page (HTTP 429).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "evalplatform.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "evalplatform.context_processors.roles",
            ],
        },
    },
]

WSGI_APPLICATION = "evalplatform.wsgi.application"
ASGI_APPLICATION = "evalplatform.asgi.application"

DATABASE_URL = os.environ.get("DATABASE_URL") or default_sqlite_url(VAR_DIR)
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL,
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web process read while the worker writes.
    DATABASES["default"].setdefault("OPTIONS", {})["init_command"] = "PRAGMA journal_mode=WAL;"
    DATABASES["default"]["OPTIONS"]["transaction_mode"] = "IMMEDIATE"
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # The judging hot path's statements (evalplatform.sqlrows.cursor) bind on the server, and psycopg
    # prepares them after this many runs on a connection; Django's own queries bind on the client and are
    # never prepared. 0 turns it off, for a pooler in transaction mode without prepared-statement support.
    _prepare_threshold = env_int("DATABASE_PREPARE_THRESHOLD", 5)
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    _options["prepare_threshold"] = _prepare_threshold if _prepare_threshold > 0 else None
    # Server settings for each connection, unless DATABASE_URL's `options` set them:
    # - no JIT compilation: a claim's candidate query is read off an index in a fraction of a millisecond,
    #   but its cost estimate (a probe per candidate row) can pass jit_above_cost, and PostgreSQL then spent
    #   5-50 ms compiling it on every run. Nothing here runs the long analytic queries JIT is for;
    # - prepared statements (only the server-binding ones above are prepared) always run their generic
    #   plan. Each is keyed by ids and written so that its generic plan is the right one (the candidate
    #   windows are in the text: `annotations.hotpath._limit`); left to choose, PostgreSQL compared that
    #   plan's estimate with the custom plans of the first runs on a connection, made while the annotators
    #   had answered little, and planned the claim's largest statement afresh on every run (0.4 ms);
    # - random pages cost about what sequential ones do (`random_page_cost` 1.1, PostgreSQL's own advice
    #   for solid-state storage; its default, 4, models spinning disks): the tables judging reads live in
    #   memory, and at the default the generic plans read a small table (the users, the memberships, a few
    #   hundred rows) whole into a hash or a sequential scan on every sign-in, answer and foreign-key
    #   check, where an index reads one row: about 6% of the database's CPU per answer under load
    #   (`perf` on the load benchmark's backends).
    for _name, _value in (
        ("jit", "off"),
        ("plan_cache_mode", "force_generic_plan"),
        ("random_page_cost", "1.1"),
    ):
        if _name not in str(_options.get("options", "")):
            _options["options"] = f"{_options.get('options', '')} -c {_name}={_value}".strip()
    # Django's backend, with a health check of a kept connection that makes no round trip unless the
    # server sent something unasked (evalplatform/postgresql/base.py).
    DATABASES["default"]["ENGINE"] = "evalplatform.postgresql"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Brute-force protection of password logins (django-axes, `evalplatform.lockout`): failures are counted
# per account from one address, per account and per address, each against its limit (0 turns the wider
# two off), within a cool-off that each new failure restarts. Admins unlock in the Django admin (Axes:
# access attempts) or with `manage.py axes_reset_username USER` / `axes_reset_ip IP` / `axes_reset`.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses a locked-out login before any password check
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10)
LOGIN_ACCOUNT_FAILURE_LIMIT = env_int("LOGIN_ACCOUNT_FAILURE_LIMIT", 50)
LOGIN_ADDRESS_FAILURE_LIMIT = env_int("LOGIN_ADDRESS_FAILURE_LIMIT", 50)
LOGIN_COOLOFF_MINUTES = env_int("LOGIN_COOLOFF_MINUTES", 15)
# The number of reverse proxies in front of the web server that append to X-Forwarded-For. 0 (the
# default): the client address is REMOTE_ADDR, and X-Forwarded-For, which a client can forge, is ignored.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)
if LOGIN_FAILURE_LIMIT < 1 or LOGIN_COOLOFF_MINUTES < 1:
    raise ImproperlyConfigured("LOGIN_FAILURE_LIMIT and LOGIN_COOLOFF_MINUTES must be at least 1.")
if min(LOGIN_ACCOUNT_FAILURE_LIMIT, LOGIN_ADDRESS_FAILURE_LIMIT, TRUSTED_PROXY_COUNT) < 0:
    raise ImproperlyConfigured(
        "LOGIN_ACCOUNT_FAILURE_LIMIT, LOGIN_ADDRESS_FAILURE_LIMIT and TRUSTED_PROXY_COUNT cannot be negative."
    )
AXES_HANDLER = "evalplatform.lockout.LoginLockoutHandler"
AXES_FAILURE_LIMIT = LOGIN_FAILURE_LIMIT
AXES_LOCKOUT_PARAMETERS = "evalplatform.lockout.lockout_parameters"
AXES_COOLOFF_TIME = timedelta(minutes=LOGIN_COOLOFF_MINUTES)
AXES_RESET_ON_SUCCESS = False
AXES_CLIENT_IP_CALLABLE = "evalplatform.lockout.client_address"
AXES_LOCKOUT_CALLABLE = "evalplatform.lockout.lockout_response"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG or not env_bool("STATIC_MANIFEST", True)
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT") or VAR_DIR / "media")
MEDIA_URL = "media/"  # uploads are never served as static files; views stream them after a permission check
# Every upload (judging imports; runs, qrels, score sets, snapshots) and import command file is refused above
# UPLOAD_MAX_BYTES as it is (compressed or not), and a gzipped document collection once it has expanded past
# UPLOAD_MAX_DECOMPRESSED_BYTES: decompression stops there (`evalcore.textfiles`), so a small file that
# expands to gigabytes costs a read buffer, not its expanded size.
UPLOAD_MAX_BYTES = env_int("UPLOAD_MAX_BYTES", 2 * 1024**3)
UPLOAD_MAX_DECOMPRESSED_BYTES = env_int("UPLOAD_MAX_DECOMPRESSED_BYTES", 4 * 1024**3)
# Judging imports: a document whose title and text hold more than DOCUMENT_MAX_BYTES (UTF-8) is refused at
# its line, and nothing of its file is imported. An upload that holds (or, gzipped, expands to) more than
# IMPORT_SYNC_MAX_BYTES is not imported inside the web request: it is kept under MEDIA_ROOT and imported by
# a job on the heavy queue (`annotations.imports.import_request`), the request answering at once.
DOCUMENT_MAX_BYTES = env_int("DOCUMENT_MAX_BYTES", 1024**2)
IMPORT_SYNC_MAX_BYTES = env_int("IMPORT_SYNC_MAX_BYTES", 4 * 1024**2)
# An uploaded run or qrels file (web, API, upload_* commands) is refused, naming the line, when a query or
# document id is longer than this many characters; trec_eval reads any length, and so do the standalone
# eval_retrieval and compare_runs commands, whose keying costs the ids' bytes, not rows times the longest.
TREC_MAX_ID_CHARS = env_int("TREC_MAX_ID_CHARS", 1000)
if TREC_MAX_ID_CHARS < 1:
    raise ImproperlyConfigured("TREC_MAX_ID_CHARS must be at least 1.")
# Judging under load: each web process counts a project's open tasks at most once in this many seconds
# (the annotator's "remaining" lags other annotators' claims by as much; 0 counts on every claim), and
# releases expired reservations at most once in JUDGING_EXPIRY_SWEEP_SECONDS per project (a claim that
# finds nothing sweeps at once before it answers "empty").
JUDGING_OPEN_TOTALS_SECONDS = env_int("JUDGING_OPEN_TOTALS_SECONDS", 1)
JUDGING_EXPIRY_SWEEP_SECONDS = env_int("JUDGING_EXPIRY_SWEEP_SECONDS", 5)
# An answer joins the project's pending quality recompute; having seen it, a web process joins it without
# asking the database for this many seconds (each recompute requests the next when answers changed while
# it ran; 0 asks on every answer).
QUALITY_JOIN_MEMO_SECONDS = env_int("QUALITY_JOIN_MEMO_SECONDS", 2)

# Security: secure by default when DEBUG is off; each can be relaxed from the environment (e.g. behind
# a TLS-terminating proxy that already redirects, set SECURE_SSL_REDIRECT=false).
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_TLS_PROXY", False) else None
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
# /healthz shows anyone the overall status; each check's details (hosts, worker names, errors) go to staff
# and to a request with `Authorization: Bearer <HEALTHZ_TOKEN>` (or `?token=`). Unset: staff only.
HEALTHZ_TOKEN = os.environ.get("HEALTHZ_TOKEN", "")
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG and SECURE_SSL_REDIRECT)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG and SECURE_SSL_REDIRECT)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# Django's database sessions, read by a written-out statement (evalplatform/sessions.py).
SESSION_ENGINE = "evalplatform.sessions"

# Email (alerts and invitations).
EMAIL_BACKEND = os.environ.get(
    "EMAIL_BACKEND",
    "django.core.mail.backends.console.EmailBackend"
    if DEBUG
    else "django.core.mail.backends.smtp.EmailBackend",
)
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "evalplatform@localhost")
# Seconds an SMTP connection may wait on the server (Django's default: for ever, holding a worker).
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
# The address links in alert emails and webhooks point to.
SITE_URL = os.environ.get("SITE_URL", "http://127.0.0.1:8000")

# Webhooks (`evalplatform.outbound`): a URL whose host is or resolves to a loopback, private, link-local,
# multicast or reserved address is refused, when a channel is saved and when it is sent, unless the address
# lies in one of these comma-separated networks (CIDRs: an internal range the operator trusts). The whole
# request, from resolving to the answer's headers, must end within WEBHOOK_TIMEOUT_SECONDS.
WEBHOOK_ALLOWED_NETWORKS = env_list("WEBHOOK_ALLOWED_NETWORKS", [])
try:
    networks_parse(WEBHOOK_ALLOWED_NETWORKS)
except ValueError as _error:
    raise ImproperlyConfigured(f"WEBHOOK_ALLOWED_NETWORKS: {_error}") from None
WEBHOOK_TIMEOUT_SECONDS = env_int("WEBHOOK_TIMEOUT_SECONDS", 10)
if WEBHOOK_TIMEOUT_SECONDS < 1:
    raise ImproperlyConfigured("WEBHOOK_TIMEOUT_SECONDS must be at least 1.")

# The LLM judge (`annotations.machine_judges.llm`, docs/llm-judge.md): off unless LLM_JUDGE_ENABLED, and then it
# needs the base URL of an OpenAI-compatible API (`.../v1`, to which `/chat/completions` is added) and a model.
# The key is read from the environment only (never stored, logged or shown). Requests go through
# `evalplatform.outbound` as webhooks do: an internal address only inside LLM_JUDGE_ALLOWED_NETWORKS (a model
# served on the local network), no redirect followed, LLM_JUDGE_TIMEOUT_SECONDS for each whole request. A job
# sends at most LLM_JUDGE_REQUESTS_PER_SECOND, tries a pair up to LLM_JUDGE_MAX_ATTEMPTS times (429, 5xx,
# timeouts; waits LLM_JUDGE_BACKOFF_SECONDS, doubled each time) and stops before its spend would pass
# LLM_JUDGE_MAX_TOKENS tokens or LLM_JUDGE_MAX_COST (0: no cap in money; prices per 1,000 tokens below).
LLM_JUDGE_ENABLED = env_bool("LLM_JUDGE_ENABLED", False)
LLM_JUDGE_BASE_URL = os.environ.get("LLM_JUDGE_BASE_URL", "").strip()
LLM_JUDGE_MODEL = os.environ.get("LLM_JUDGE_MODEL", "").strip()
LLM_JUDGE_API_KEY = os.environ.get("LLM_JUDGE_API_KEY", "")
LLM_JUDGE_ALLOWED_NETWORKS = env_list("LLM_JUDGE_ALLOWED_NETWORKS", [])
LLM_JUDGE_TIMEOUT_SECONDS = env_float("LLM_JUDGE_TIMEOUT_SECONDS", 60.0)
LLM_JUDGE_REQUESTS_PER_SECOND = env_float("LLM_JUDGE_REQUESTS_PER_SECOND", 1.0)
LLM_JUDGE_MAX_ATTEMPTS = env_int("LLM_JUDGE_MAX_ATTEMPTS", 4)
LLM_JUDGE_BACKOFF_SECONDS = env_float("LLM_JUDGE_BACKOFF_SECONDS", 2.0)
LLM_JUDGE_MAX_TOKENS = env_int("LLM_JUDGE_MAX_TOKENS", 200_000)
LLM_JUDGE_MAX_COST = env_float("LLM_JUDGE_MAX_COST", 0.0)
LLM_JUDGE_PRICE_PROMPT_PER_1K = env_float("LLM_JUDGE_PRICE_PROMPT_PER_1K", 0.0)
LLM_JUDGE_PRICE_COMPLETION_PER_1K = env_float("LLM_JUDGE_PRICE_COMPLETION_PER_1K", 0.0)
LLM_JUDGE_ANSWER_MAX_TOKENS = env_int("LLM_JUDGE_ANSWER_MAX_TOKENS", 300)
LLM_JUDGE_PASSAGE_MAX_CHARS = env_int("LLM_JUDGE_PASSAGE_MAX_CHARS", 4000)
try:
    networks_parse(LLM_JUDGE_ALLOWED_NETWORKS)
except ValueError as _error:
    raise ImproperlyConfigured(f"LLM_JUDGE_ALLOWED_NETWORKS: {_error}") from None
if LLM_JUDGE_ENABLED and not (LLM_JUDGE_BASE_URL and LLM_JUDGE_MODEL):
    raise ImproperlyConfigured("LLM_JUDGE_ENABLED needs LLM_JUDGE_BASE_URL and LLM_JUDGE_MODEL.")
if LLM_JUDGE_MAX_ATTEMPTS < 1 or LLM_JUDGE_MAX_TOKENS < 1 or LLM_JUDGE_ANSWER_MAX_TOKENS < 1:
    raise ImproperlyConfigured(
        "LLM_JUDGE_MAX_ATTEMPTS, LLM_JUDGE_MAX_TOKENS and LLM_JUDGE_ANSWER_MAX_TOKENS must be at least 1."
    )
if (
    min(LLM_JUDGE_TIMEOUT_SECONDS, LLM_JUDGE_REQUESTS_PER_SECOND) <= 0
    or min(
        LLM_JUDGE_BACKOFF_SECONDS,
        LLM_JUDGE_MAX_COST,
        LLM_JUDGE_PRICE_PROMPT_PER_1K,
        LLM_JUDGE_PRICE_COMPLETION_PER_1K,
    )
    < 0
):
    raise ImproperlyConfigured(
        "LLM_JUDGE_TIMEOUT_SECONDS and LLM_JUDGE_REQUESTS_PER_SECOND must be above 0; the backoff, cost cap "
        "and prices cannot be negative."
    )
if LLM_JUDGE_PASSAGE_MAX_CHARS < 100:
    raise ImproperlyConfigured("LLM_JUDGE_PASSAGE_MAX_CHARS must be at least 100.")

# REST API.
REST_FRAMEWORK = {
    # Token first: a request with no credentials gets 401 with a `WWW-Authenticate: Token` challenge (the
    # first class's), as HTTP says, rather than the 403 that session authentication answers.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "evalplatform.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # Strict JSON, with NaN and infinities as null (evalplatform.renderers): never a 500 for an undefined figure.
    "DEFAULT_RENDERER_CLASSES": [
        "evalplatform.renderers.FiniteJSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 100,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "evalplatform API",
    "DESCRIPTION": "Annotation, evaluation and monitoring.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Choice sets several components share get one name each (else spectacular names them by a hash).
    "ENUM_NAME_OVERRIDES": {
        "JobStatusEnum": "evalplatform.jobs.JobStatus",
        "TeamRoleEnum": "evalplatform.models.TeamMembership.Role",
        "ProjectRoleEnum": "annotations.models.ProjectMembership.Role",
        "ChannelKindEnum": "monitoring.alerts.models.NotificationChannel.Kind",
        "SeriesKindEnum": "series.models.Series.Kind",
        "MachineJudgeKindEnum": "annotations.models.MachineJudge.Kind",
        "ClickLogFormatEnum": "evalcore.clicks._files.FORMATS",
        "ImportFormatEnum": ["jsonl", "trec", "tsv"],
    },
}

# Celery. Metric jobs go to the "heavy" queue, notifications to "notifications"; everything else to "default".
REDIS_URL = os.environ.get("REDIS_URL", "")
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or REDIS_URL or default_broker_url()
# A web request that queues a job must not hang when the broker is down: connecting gives up after
# BROKER_CONNECT_TIMEOUT_MS with at most one quick retry, and the job is then marked failed with the reason
# (`evalplatform.jobs.job_enqueue`); answering never waits on the broker at all. Workers reconnect on their
# own loop (broker_connection_max_retries), so these bounds do not make them give up.
BROKER_CONNECT_TIMEOUT = env_int("BROKER_CONNECT_TIMEOUT_MS", 500) / 1000
CELERY_BROKER_CONNECTION_TIMEOUT = BROKER_CONNECT_TIMEOUT
# A message a worker took but never acknowledged (it died) is delivered again after the visibility timeout.
# Jobs do not wait for it: a beat task re-queues every job whose renewed lease lapsed (JOB_LEASE_SECONDS)
# within a minute or two (`evalplatform.jobs.jobs_requeue_stale`), and a late duplicate meets a finished
# job. It is still set deliberately, above the longest task time limit, so that a task running its full
# time is never delivered twice while it runs.
CELERY_VISIBILITY_TIMEOUT = env_int(
    "CELERY_VISIBILITY_TIMEOUT", env_int("CELERY_TASK_TIME_LIMIT", 3600) + 300
)
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = (
    filesystem_broker_options(VAR_DIR)
    if is_filesystem_broker(CELERY_BROKER_URL)
    else {
        "visibility_timeout": CELERY_VISIBILITY_TIMEOUT,
        "socket_connect_timeout": BROKER_CONNECT_TIMEOUT,
        # Web requests read with this bound; worker processes raise it (`evalplatform.celery`), since they
        # block on the queue a second at a time.
        "socket_timeout": BROKER_CONNECT_TIMEOUT,
        "max_retries": 1,
        "interval_start": 0,
        "interval_step": 0.1,
        "interval_max": 0.2,
    }
)
if is_filesystem_broker(CELERY_BROKER_URL):
    for folder_key in ("data_folder_in", "control_folder", "processed_folder"):
        Path(str(CELERY_BROKER_TRANSPORT_OPTIONS[folder_key])).mkdir(parents=True, exist_ok=True)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A Celery chord (a monitor run split over several workers, `monitoring.embeddings`) needs a result backend to
# count its finished chunks: the Redis broker serves as one unless CELERY_RESULT_BACKEND says otherwise. The
# filesystem broker has none; monitor runs then compute each snapshot in one task. Jobs store their own
# results in the database either way.
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or (
    CELERY_BROKER_URL if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else None
)
# Jobs keep their results in the database; only a chord's chunks store theirs (`ignore_result=False`).
# Ignoring results by default also spares every publish a subscription to the result backend.
CELERY_TASK_IGNORE_RESULT = True
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = BROKER_CONNECT_TIMEOUT
CELERY_REDIS_SOCKET_TIMEOUT = 5
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 3600)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 3300)
# A running job's claim lasts this long unless renewed; its worker renews it every third of it, so a
# dead worker's job is taken over within this many seconds (`evalplatform.jobs`).
JOB_LEASE_SECONDS = env_int("JOB_LEASE_SECONDS", 120)
# How often beat queues again the jobs no worker is on (a lapsed lease, a lost message).
JOBS_REQUEUE_SECONDS = env_int("JOBS_REQUEUE_SECONDS", 60)
# Embedding monitors: a snapshot with more rows than this is split over several workers (a chord); how long
# a dispatched chord may wait in the queue; where the monitors compute (auto: CUDA when there is one).
MONITOR_CHUNK_ROWS = env_int("MONITOR_CHUNK_ROWS", 1_000_000)
MONITOR_CHORD_WAIT_SECONDS = env_int("MONITOR_CHORD_WAIT_SECONDS", 900)
MONITOR_DEVICE = os.environ.get("MONITOR_DEVICE", "auto")
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {
    # Its own queue, for its own worker: a slow webhook never holds a monitor run or an evaluation back.
    "monitoring.tasks.notification_send": {"queue": "notifications"},
    "monitoring.tasks.*": {"queue": "heavy"},
    "annotations.tasks.*": {"queue": "heavy"},
}
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = TIME_ZONE
# Every periodic schedule is declared here, in one place. Beat's database scheduler syncs it.
CELERY_BEAT_SCHEDULE = {
    # /healthz counts a worker as up for three intervals after its last heartbeat. A heartbeat not
    # picked up within one interval expires, so a stopped worker does not come back to a backlog.
    "worker-heartbeat": {
        "task": "evalplatform.tasks.record_heartbeat",
        "schedule": 60.0,
        "options": {"expire_seconds": 60},
    },
    # The safety net of every job (`evalplatform.jobs`): queue again a pending job whose message was lost
    # and a running job whose worker died (its lease lapsed).
    # With a 120 s lease and a 60 s interval, a killed worker's job runs again within about three minutes
    # (Redis itself redelivers the unacknowledged message only after CELERY_VISIBILITY_TIMEOUT).
    "requeue-stale-jobs": {
        "task": "evalplatform.tasks.requeue_stale_jobs",
        "schedule": float(JOBS_REQUEUE_SECONDS),
        "options": {"expire_seconds": JOBS_REQUEUE_SECONDS},
    },
    # Expired sessions are never read (the session store checks the expiry) but stay in the table until
    # deleted: `manage.py clearsessions`, daily.
    "sessions-clear-expired": {
        "task": "evalplatform.tasks.sessions_clear_expired",
        "schedule": 86400.0,
        "options": {"expire_seconds": 3600},
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "filters": {"plain_refusals": {"()": "evalplatform.logs.PlainRefusals"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        # django-axes announces itself at INFO in every process (commands included); lockouts are warnings.
        "axes": {"level": "WARNING"},
        # A 403 or 404 is a one-line warning, not a traceback.
        "django.request": {"filters": ["plain_refusals"]},
    },
}
