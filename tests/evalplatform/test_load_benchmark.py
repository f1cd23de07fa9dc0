"""The load benchmark runs, in each mode and paced, with its floor beside it, and its integrity checks hold: a short
run with few clients on a database of its own (the benchmark measures speed; this checks that it works)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from tests.conftest import _database_url_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.services
@pytest.mark.django_db
@pytest.mark.parametrize(
    "args",
    [
        ["--mode", "next-submit", "--rate", "0", "--rounds", "1"],
        ["--mode", "submit-next", "--rate", "40", "--rounds", "3"],
        ["--mode", "page", "--rate", "40", "--rounds", "2"],
    ],
)
def test_the_load_benchmark_runs_and_loses_nothing(args: list[str]) -> None:
    settings_dict = {**connection.settings_dict, "NAME": f"{connection.settings_dict['NAME']}_load"}
    # Its quality recomputes must not reach the tests' worker, which reads another database.
    env = {**os.environ, "DATABASE_URL": _database_url_for(settings_dict), "CELERY_BROKER_URL": "memory://"}
    command = [sys.executable, "benchmarks/annotation_load.py", "--clients", "4", "--seconds", "3", "--ramp-up",
               "1", "--vacuum-every", "1", "--tasks", "400", "--web-workers", "2", "--floor-seconds", "2",
               "--timeline", *args]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    # The mode asked for, in slices with the floor's measured on its server before, between and after them.
    (result,) = lines
    rounds = int(args[args.index("--rounds") + 1])
    floors = result["floor_runs_per_s"]
    assert result["rounds"] == rounds and len(floors) == rounds + 1
    assert min(floors) > 0 and result["floor_errors"] == 0
    assert result["floor_per_s"] == pytest.approx(sum(floors) / len(floors), abs=0.1)
    assert result["share_of_floor"] == pytest.approx(
        result["throughput_per_s"] / result["floor_per_s"], rel=0.02
    )
    # Each slice against its two neighbours of the floor: together they make up the share above.
    shares = result["slice_shares_of_floor"]
    assert len(shares) == rounds and min(shares) > 0
    assert min(shares) * 0.8 <= result["share_of_floor"] <= max(shares) * 1.25
    assert re.search(
        rf"share of the floor \(\d+ requests/s, the mean of its {rounds + 1} slices", done.stdout
    )
    assert result["floor_web_cpu_ms_per_row"] > 0 and result["floor_db_cpu_ms_per_row"] > 0
    assert result["vacuum_cpu_s"] >= 0
    assert result["web_cpu_ms_per_answer"] > 0 and result["db_cpu_ms_per_answer"] > 0
    assert result["generator_cpu_ms_per_answer"] > 0 and result["floor_generator_cpu_ms_per_row"] > 0
    assert result["throughput_per_s"] > 0 and result["requests"] > 0
    assert (result["errors"], result["lost"], result["duplicated"], result["over_assigned"]) == (0, 0, 0, 0)
    assert result["mode"] == args[1]
    assert result["p50_ms"] <= result["p95_ms"] <= result["p99_ms"]
    assert result["ramp_up_seconds"] == 1.0 and result["ramp_up_p99_ms"] > 0
    assert "second  requests  p50 ms  p99 ms" in done.stdout  # the timeline


@pytest.mark.services
@pytest.mark.django_db
def test_the_in_process_comparison_runs_and_cleans_up() -> None:
    """`benchmarks/annotation_inprocess.py`: the page's answers and the floor's requests called in one
    process, each figure reported, and its project and floor table gone afterwards."""
    import psycopg

    settings_dict = {**connection.settings_dict, "NAME": f"{connection.settings_dict['NAME']}_load"}
    url = _database_url_for(settings_dict)
    env = {**os.environ, "DATABASE_URL": url, "CELERY_BROKER_URL": "memory://"}
    command = [sys.executable, "benchmarks/annotation_inprocess.py", "--answers", "30", "--annotators", "3",
               "--tasks", "300", "--rounds", "2", "--json"]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    (result,) = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert (result["answers"], result["annotators"], len(result["rounds"])) == (30, 3, 2)
    for measured in result["rounds"]:
        for kind in ("page", "floor"):
            assert measured[kind]["python_ms"] > 0 and measured[kind]["wall_ms"] > 0
            assert measured[kind]["db_ms"] >= 0
        cpu = {kind: measured[kind]["python_ms"] + measured[kind]["db_ms"] for kind in ("page", "floor")}
        assert measured["cpu_ratio"] == pytest.approx(cpu["page"] / cpu["floor"], abs=0.01)
    with psycopg.connect(url) as db:
        assert db.execute(
            "SELECT COUNT(*) FROM annotations_project WHERE slug LIKE 'inproc-%'"
        ).fetchone() == (0,)
        assert db.execute("SELECT to_regclass('bench_floor')").fetchone() == (None,)
