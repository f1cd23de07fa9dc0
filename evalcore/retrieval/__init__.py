"""Retrieval evaluation with trec_eval 9.0.8's semantics, vectorised.

The facade: read files with `evalcore.trec`, then

    result = evaluate(qrels, run, ["map", "P@10", "ndcg_cut_10"], rel_level=1, complete=False)
    result.aggregate            # {"map": ..., "P@10": ..., "ndcg_cut_10": ...}
    result.per_query_array("map")

Measures live in one registry (`MEASURES`); `parse_measure` reads trec_eval and ir-measures names.
Preference judgments (trec_eval -R prefs / qrels_prefs) go to `evaluate_prefs`, several users' qrels
(-R qrels_jg) to `evaluate_jg`; `with_zscores` turns a
result into trec_eval -Z's z-scores.
"""

from importlib import import_module
from typing import Any

from evalcore.retrieval.classification import f1_weighted, topk_accuracy
from evalcore.retrieval.data import DuplicateRowError, Qrels, Run
from evalcore.retrieval.evaluation import (
    NoCommonQueriesError,
    RetrievalResult,
    evaluate,
    evaluate_jg,
    evaluate_prefs,
    format_trec,
    require_rel_format,
    restrict_run,
    with_zscores,
)
from evalcore.retrieval.measures import DEFAULT_CUTOFFS, MEASURES, NICKNAMES, Measure
from evalcore.retrieval.names import (
    OFFICIAL_MEASURES,
    MeasureSpec,
    UnknownMeasureError,
    canonical_measure,
    parse_measure,
    parse_measures,
)

__all__ = [
    "DEFAULT_CUTOFFS",
    "OFFICIAL_MEASURES",
    "MEASURES",
    "NICKNAMES",
    "DuplicateRowError",
    "Measure",
    "MeasureSpec",
    "NoCommonQueriesError",
    "PreferenceError",
    "Prefs",
    "Qrels",
    "QrelsJG",
    "RetrievalResult",
    "Run",
    "UnknownMeasureError",
    "canonical_measure",
    "evaluate",
    "evaluate_jg",
    "evaluate_prefs",
    "f1_weighted",
    "format_trec",
    "parse_measure",
    "parse_measures",
    "require_rel_format",
    "restrict_run",
    "topk_accuracy",
    "with_zscores",
]

#: Loaded on first use (`evalcore.retrieval.Prefs`): evaluating qrels never imports these modules.
_LAZY = {"Prefs": "preferences", "PreferenceError": "preferences", "QrelsJG": "judgment_groups"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"evalcore.retrieval.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
