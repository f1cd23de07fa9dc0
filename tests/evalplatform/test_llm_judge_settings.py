"""The LLM judge's settings: refused when on without an endpoint, numbers and networks checked (that it is
off by default: tests/annotations/test_llm_judge.py)."""

from __future__ import annotations

import pytest

from evalplatform.env import EnvError, env_float
from tests.evalplatform.test_settings import load_settings


def test_it_reads_finite_numbers_only() -> None:
    assert env_float("X", 1.5, {}) == 1.5
    assert env_float("X", 1.5, {"X": " 0.25 "}) == 0.25
    for bad in ("fast", "nan", "inf"):
        with pytest.raises(EnvError, match="X="):
            env_float("X", 1.5, {"X": bad})


def test_it_refuses_to_be_on_without_an_endpoint_and_odd_numbers() -> None:
    code, refused = load_settings(DEBUG="true", LLM_JUDGE_ENABLED="true", LLM_JUDGE_MODEL="m")
    assert code == 3 and "LLM_JUDGE_ENABLED needs LLM_JUDGE_BASE_URL and LLM_JUDGE_MODEL" in str(
        refused["message"]
    )
    code, refused = load_settings(DEBUG="true", LLM_JUDGE_REQUESTS_PER_SECOND="0")
    assert code == 3 and "LLM_JUDGE_REQUESTS_PER_SECOND must be above 0" in str(refused["message"])
    code, refused = load_settings(DEBUG="true", LLM_JUDGE_ALLOWED_NETWORKS="10.0.0.0/33")
    assert code == 3 and "LLM_JUDGE_ALLOWED_NETWORKS" in str(refused["message"])
