"""Judgments from clicks: read a search log and fit a click model (COEC, PBM or DBN) that grades every
(query, document) pair shown often enough. Framework-free; `docs/clicks.md` is the manual.

    >>> from evalcore.clicks import ClickModelParams, fit, read_click_log  # doctest: +SKIP
    >>> judgments = fit(read_click_log("log.csv"), ClickModelParams("pbm", min_impressions=20))  # doctest: +SKIP
"""

from evalcore.clicks._files import FORMATS, LOG_CSV, UBI_CLICKS, UBI_IMPRESSIONS, read_click_log
from evalcore.clicks._log import ClickLog, ClickLogError
from evalcore.clicks._models import (
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_THRESHOLDS,
    MODELS,
    ClickJudgments,
    ClickModelParams,
    dbn_em_step,
    fit,
    grades,
    pbm_em_step,
    position_ctr,
)
from evalcore.clicks._simulate import SimulatedLog, simulate_log

__all__ = [
    "DEFAULT_MAX_ITERATIONS",
    "DEFAULT_THRESHOLDS",
    "FORMATS",
    "LOG_CSV",
    "MODELS",
    "UBI_CLICKS",
    "UBI_IMPRESSIONS",
    "ClickJudgments",
    "ClickLog",
    "ClickLogError",
    "ClickModelParams",
    "SimulatedLog",
    "dbn_em_step",
    "fit",
    "grades",
    "pbm_em_step",
    "position_ctr",
    "read_click_log",
    "simulate_log",
]
