# The README's two commands are `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

# Tests run against the real services: PostgreSQL and Redis on this machine unless told otherwise.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/evalplatform
TEST_BROKER_URL ?= redis://127.0.0.1:6379/14

.PHONY: screenshots demo test test-gpu lint typecheck docs pytest bench bench-retrieval bench-agreement bench-annotation-load clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(VENV)/.runtime-installed: requirements.txt | $(VENV)/bin/python
	$(PIP) install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev-installed: requirements.txt requirements-dev.txt | $(VENV)/bin/python
	$(PIP) install --quiet -r requirements-dev.txt
	touch $(VENV)/.runtime-installed $@

demo: $(VENV)/.runtime-installed
	DEBUG=true PY=$(PY) bin/demo --setup

lint: $(VENV)/.dev-installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(VENV)/.dev-installed
	DEBUG=true $(VENV)/bin/mypy evalcore evalplatform series annotations monitoring portal

pytest: $(VENV)/.dev-installed
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} \
	CELERY_BROKER_URL=$${CELERY_BROKER_URL:-$(TEST_BROKER_URL)} \
	SECRET_KEY=$${SECRET_KEY:-insecure-key-for-tests-only} \
	DEBUG=false STATIC_MANIFEST=false \
	$(VENV)/bin/pytest $(PYTEST_ARGS)

# The manual (docs/, nav in mkdocs.yml) in strict mode: a broken link or anchor, or a page left out of
# the nav, fails. Built into site/ (git-ignored); nothing is fetched. (Not --quiet: it hides the warnings
# that strict mode counts, and the build passes.)
docs: $(VENV)/.dev-installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

test: lint typecheck docs pytest

# On a machine with a CUDA device: the CPU/GPU agreement tests that `make test` deselects.
test-gpu: $(VENV)/.dev-installed
	DEBUG=true $(VENV)/bin/pytest -m gpu tests/evalcore

# Refresh the README's screenshots (docs/*.png) from the browser tests.
screenshots: $(VENV)/.dev-installed
	$(MAKE) pytest PYTEST_ARGS="-q -k 'five_tasks or draws_the_demo or readable_measure or adjudicates_a_disagreement' tests/annotations" UPDATE_SCREENSHOTS=1
	$(MAKE) pytest PYTEST_ARGS="-q tests/monitoring/test_browser_evaluation.py tests/monitoring/test_recsys_fraud_browser.py tests/monitoring/test_recsys_fraud_comparisons_browser.py tests/monitoring/test_browser_streams.py tests/monitoring/test_browser_stream_journey.py" UPDATE_SCREENSHOTS=1
	$(MAKE) pytest PYTEST_ARGS="-q -m browser tests/monitoring/test_team_people.py tests/monitoring/test_alert_editing.py tests/monitoring/test_editing.py tests/monitoring/test_browser_fusion.py tests/monitoring/test_what_changed.py" UPDATE_SCREENSHOTS=1

bench: bench-retrieval bench-agreement

bench-retrieval: $(VENV)/.dev-installed
	$(PY) -m benchmarks.retrieval

bench-agreement: $(VENV)/.dev-installed
	$(PY) -m benchmarks.agreement

clean:
	rm -rf var staticfiles site .pytest_cache .mypy_cache .ruff_cache

# Embedding monitors against alibi-detect's MMDDrift. alibi-detect is under the Business Source
# License: it lives only in this benchmark's own environment, never in requirements*.txt, with the
# platform's torch pin (the CPU wheel where that is what pip finds).
ALIBI_VENV ?= benchmarks/.venv-alibi
.PHONY: bench-embeddings
bench: bench-embeddings

$(ALIBI_VENV)/.installed:
	$(PYTHON) -m venv $(ALIBI_VENV)
	$(ALIBI_VENV)/bin/pip install --quiet "$$(grep '^torch==' requirements.txt)" "alibi-detect[torch]==0.13.0"
	touch $@

bench-embeddings: $(VENV)/.dev-installed $(ALIBI_VENV)/.installed
	$(PY) -m benchmarks.embeddings --alibi-python $(ALIBI_VENV)/bin/python

# Recommendation and fraud metrics from CSV files (1M users x top-20 over a 1M-item catalog, 10M
# scores) against pandas and scikit-learn, each a whole process, with a scaling check.
.PHONY: bench-recsys-fraud
bench: bench-recsys-fraud

bench-recsys-fraud: $(VENV)/.dev-installed
	$(PY) -m benchmarks.recsys_fraud

# The dashboards' server time on the demo data (a SQLite database of its own in a temporary directory)
# against the floor (a minimal signed-in page) and the stream page's old plotly.graph_objects figures.
.PHONY: bench-dashboards
bench: bench-dashboards

bench-dashboards: $(VENV)/.dev-installed
	$(PY) -m benchmarks.dashboards

# Pooling strategies on a synthetic TREC-style collection (50 topics, 40 runs to depth 100): the yield
# curve and Kendall's tau per strategy up to 100 judgments a topic, and the time of pool_order and of
# the simulation (wall and CPU).
.PHONY: bench-pooling
bench: bench-pooling

bench-pooling: $(VENV)/.dev-installed
	$(PY) -m benchmarks.pooling

# Click models (COEC, PBM, DBN) on simulated search logs of 1M and 10M impressions: the whole
# derive_click_judgments process per model (wall, CPU, peak memory) and how its grades follow the truth.
.PHONY: bench-clicks
bench: bench-clicks

bench-clicks: $(VENV)/.dev-installed
	$(PY) -m benchmarks.clicks

# Fusion of ten 1M-line runs (evalcore.fusion against ranx's fuse on the same runs): wall and CPU seconds.
.PHONY: bench-fusion
bench: bench-fusion

bench-fusion: $(VENV)/.dev-installed
	$(PY) -m benchmarks.fusion

# Not part of `make bench`: it starts gunicorn and writes to a PostgreSQL database (created if missing).
bench-annotation-load: $(VENV)/.dev-installed
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/evalplatform_load} \
	CELERY_BROKER_URL=$${CELERY_BROKER_URL:-redis://127.0.0.1:6379/13} \
	$(PY) benchmarks/annotation_load.py $(LOAD_ARGS)
