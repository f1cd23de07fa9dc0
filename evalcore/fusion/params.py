"""Fusion methods and normalisations, by ranx's names, and the frozen parameters of one fusion."""

from __future__ import annotations

from dataclasses import dataclass

#: Methods that score a document by its rank in each run, not by its score.
RANK_METHODS = ("rrf", "isr", "log_isr", "logn_isr", "rbc", "bordafuse")
#: Methods that combine (normalised) scores.
SCORE_METHODS = ("sum", "mnz", "max", "min", "med", "anz", "gmnz", "wsum", "wmnz")
METHODS = SCORE_METHODS + RANK_METHODS
#: Methods that take one weight per run.
WEIGHTED_METHODS = ("wsum", "wmnz")
NORMS = ("min-max", "max", "sum", "zmuv", "rank", "borda")

#: Other spellings (Fox and Shaw's CombSUM family, ranx's function names), case-insensitive.
METHOD_ALIASES = {
    "combsum": "sum",
    "comb_sum": "sum",
    "combmnz": "mnz",
    "comb_mnz": "mnz",
    "combmax": "max",
    "comb_max": "max",
    "combmin": "min",
    "comb_min": "min",
    "combmed": "med",
    "comb_med": "med",
    "combanz": "anz",
    "comb_anz": "anz",
    "combgmnz": "gmnz",
    "comb_gmnz": "gmnz",
    "weighted_sum": "wsum",
    "reciprocal_rank_fusion": "rrf",
    "borda": "bordafuse",
    "bordacount": "bordafuse",
}
NORM_ALIASES = {"min_max": "min-max", "minmax": "min-max", "z": "zmuv", "zscore": "zmuv", "none": None}


def method_name(name: str) -> str:
    """ranx's name of a method given any accepted spelling; ValueError for an unknown one."""
    key = name.strip().lower()
    key = METHOD_ALIASES.get(key, key)
    if key not in METHODS:
        raise ValueError(f"unknown fusion method {name!r}; known: {', '.join(METHODS)}")
    return key


def norm_name(name: str | None) -> str | None:
    """ranx's name of a normalisation (None for none); ValueError for an unknown one."""
    if name is None:
        return None
    key = name.strip().lower()
    if key in NORM_ALIASES:
        return NORM_ALIASES[key]
    if key not in NORMS:
        raise ValueError(f"unknown normalisation {name!r}; known: {', '.join(NORMS)}, none")
    return key


#: The one numeric option each method takes besides the weights: `FusionParams`' field of that name.
METHOD_OPTION = {"rrf": "k", "gmnz": "gamma", "logn_isr": "sigma", "rbc": "phi"}


class OptionError(ValueError):
    """A method's option out of its range; `option` names the field (`METHOD_OPTION`'s values)."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


@dataclass(frozen=True)
class FusionParams:
    """One fusion: the method, the normalisation applied to each run first, and the method's options.

    Names are checked and turned into ranx's on construction, so `FusionParams("CombMNZ").method`
    is `"mnz"`. `norm` defaults to `"min-max"`, as ranx's `fuse`. `weights` (one per run) serve
    `wsum` and `wmnz` (None: 1 each); `k` serves `rrf` (60, Cormack et al.), `gamma` `gmnz`,
    `sigma` `logn_isr` (0.01, ranx's default) and `phi` `rbc`.

    >>> FusionParams("CombSUM", norm="zmuv")
    FusionParams(method='sum', norm='zmuv', weights=None, k=60.0, gamma=1.0, sigma=0.01, phi=0.8)
    """

    method: str
    norm: str | None = "min-max"
    weights: tuple[float, ...] | None = None
    k: float = 60.0
    gamma: float = 1.0
    sigma: float = 0.01
    phi: float = 0.8

    def __post_init__(self) -> None:
        object.__setattr__(self, "method", method_name(self.method))
        object.__setattr__(self, "norm", norm_name(self.norm))
        if self.weights is not None:
            object.__setattr__(self, "weights", tuple(float(w) for w in self.weights))
        if self.norm == "borda" and self.method in RANK_METHODS:
            # ranx ranks the borda-normalised run in the order of a Python set: no defined result.
            raise ValueError(f"{self.method} ranks each run itself: use it without the borda normalisation")
        if self.k < 0:
            raise OptionError("k", "k must be at least 0")
        if not 0.0 <= self.sigma <= 1.0:
            raise OptionError("sigma", "sigma must be in [0, 1]")
        if not 0.0 < self.phi < 1.0:
            raise OptionError("phi", "phi must be in (0, 1)")
