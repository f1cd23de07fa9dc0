"""Fusion of runs with ranx's methods and normalisations, vectorised over all rows at once.

    from evalcore.fusion import FusionParams, fuse
    fused = fuse([run_a, run_b], FusionParams("rrf", k=60))

`optimize_weights` picks `wsum`/`wmnz` weights (or RRF's k) by grid search, with k-fold
cross-validation over queries for the held-out score; `write_trec_run` writes a fused run.
"""

from evalcore.fusion.combine import fuse
from evalcore.fusion.optimize import FoldResult, Optimization, chosen_text, optimization_json, optimize_fusion
from evalcore.fusion.output import write_trec_run
from evalcore.fusion.params import (
    METHOD_ALIASES,
    METHOD_OPTION,
    METHODS,
    NORMS,
    RANK_METHODS,
    WEIGHTED_METHODS,
    FusionParams,
    OptionError,
    method_name,
    norm_name,
)

__all__ = [
    "METHODS",
    "METHOD_ALIASES",
    "METHOD_OPTION",
    "NORMS",
    "RANK_METHODS",
    "WEIGHTED_METHODS",
    "FoldResult",
    "FusionParams",
    "Optimization",
    "OptionError",
    "chosen_text",
    "fuse",
    "method_name",
    "norm_name",
    "optimization_json",
    "optimize_fusion",
    "write_trec_run",
]
