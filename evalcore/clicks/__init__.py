"""Judgments from clicks: read a search log (`read_click_log`) and fit a click model (COEC, PBM or DBN)
that grades every (query, document) pair shown often enough. Framework-free; `docs/clicks.md` is the
manual.

Two sessions of one query: d1 clicked at the top, then d2 at the top and d1 below it, both clicked. The
click-through rates are 1 at position 1 and 1/2 at position 2, so d1 got 2 clicks where 1 + 1/2 were
expected (COEC 4/3, grade 2) and d2 got 1 (COEC 2/3, grade 1):

    >>> from evalcore.clicks import ClickLog, ClickModelParams, fit
    >>> log = ClickLog.from_codes(
    ...     [0, 0, 1, 1], [0, 0, 0, 0], [0, 1, 1, 0], [1, 2, 1, 2], [1, 0, 1, 1],
    ...     sessions=("s1", "s2"), queries=("laptop",), docs=("d1", "d2"),
    ... )
    >>> fit(log, ClickModelParams("coec", min_impressions=2)).qrels_lines()
    ['laptop 0 d1 2', 'laptop 0 d2 1']
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
