"""One shape for every metric the platform computes, and the registry that holds them all.

Every metric family (retrieval, agreement, recommendation, fraud, embeddings) declares its metrics as
`MetricSpec`s: a canonical snake_case name, a human label, the direction in which it is better, its
range and unit, a one-line definition and the kernel that computes it. Families may subclass the spec
to add what only they need (retrieval's cutoffs and trec_eval aggregation, say).

The registry is what the command line, the REST API, the dashboards and the alert rules read: to
label a column, to sort a leaderboard the right way, to check an alert rule's metric name, to draw a
threshold line inside the metric's range. `metric_registry()` collects every family's specs; a family
whose names take parameters (`P_10`, `ndcg_cut_10`, `nDCG@10`) registers a resolver that maps such a
name to its spec.

>>> spec = metric_registry().resolve("ndcg_cut_10")
>>> spec.family, spec.direction, spec.range
('retrieval', 'higher', (0.0, 1.0))
>>> metric_registry().resolve("krippendorff_alpha_ordinal").better(0.8, 0.6)
True
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import import_module
from typing import Any, Literal

from evalcore.errors import EvalCoreError

Family = Literal["retrieval", "agreement", "recsys", "fraud", "embedding", "annotator"]
FAMILIES: tuple[Family, ...] = ("retrieval", "agreement", "recsys", "fraud", "embedding", "annotator")
#: "higher": larger is better (precision, kappa); "lower": smaller is better (cost, MMD);
#: "neutral": a count or a diagnostic with no better side (num_ret, a threshold).
Direction = Literal["higher", "lower", "neutral"]


class UnknownMetricError(EvalCoreError, KeyError):
    """A metric name no family knows; the message suggests the closest names."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class MetricSpec:
    """One metric, declared once.

    `range` is the closed interval of possible values, with None for an open end (a count has
    `(0.0, None)`); None altogether when the metric has no natural bounds. `unit` is empty for a
    plain ratio or score, else what the number counts ("documents", "seconds", "currency").
    `kernel` computes it; its signature belongs to the family.
    """

    name: str
    label: str
    family: Family
    direction: Direction
    definition: str
    kernel: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    range: tuple[float | None, float | None] | None = (0.0, 1.0)
    unit: str = ""
    aliases: tuple[str, ...] = ()

    @property
    def higher_is_better(self) -> bool:
        return self.direction == "higher"

    def better(self, a: float, b: float) -> bool:
        """Whether `a` is strictly better than `b` (False for a neutral metric, or a NaN)."""
        if math.isnan(a) or math.isnan(b) or self.direction == "neutral":
            return False
        return a > b if self.direction == "higher" else a < b

    def sort_descending(self) -> bool:
        """Leaderboards put the best first: descending for higher-is-better metrics."""
        return self.direction != "lower"

    def in_range(self, value: float) -> bool:
        if self.range is None or math.isnan(value):
            return True
        low, high = self.range
        return (low is None or value >= low - 1e-12) and (high is None or value <= high + 1e-12)

    def describe(self) -> dict[str, Any]:
        """The spec as JSON-ready data (the API's and the dashboards' view of it)."""
        low, high = self.range if self.range is not None else (None, None)
        return {
            "name": self.name,
            "label": self.label,
            "family": self.family,
            "direction": self.direction,
            "range": None if self.range is None else [low, high],
            "unit": self.unit,
            "definition": self.definition,
            "aliases": list(self.aliases),
        }


#: A family's resolver: the spec of a parametrised name it understands (`P_10`), else None.
Resolver = Callable[[str], MetricSpec | None]
#: A family's suggester: its names closest to an unknown one, with the parameter the caller wrote kept
#: (`ndgc_cut_10` -> `ndcg_cut_10`); a family without one is offered its plain names.
Suggester = Callable[[str], list[str]]


class MetricRegistry:
    """Metric specs by name and alias, plus the families' resolvers for parametrised names."""

    def __init__(self) -> None:
        self._specs: dict[str, MetricSpec] = {}
        self._names: dict[str, MetricSpec] = {}
        self._resolvers: list[tuple[Family, Resolver]] = []
        self._suggesters: dict[Family, Suggester] = {}

    def register(self, spec: MetricSpec) -> MetricSpec:
        for name in (spec.name, *spec.aliases):
            known = self._names.get(name)
            if known is not None and known is not spec:
                raise ValueError(f"metric name {name!r} is taken by {known.family}'s {known.name!r}")
            self._names[name] = spec
        self._specs[spec.name] = spec
        return spec

    def register_resolver(self, family: Family, resolver: Resolver) -> None:
        self._resolvers.append((family, resolver))

    def register_suggester(self, family: Family, suggester: Suggester) -> None:
        self._suggesters[family] = suggester

    def __iter__(self) -> Iterator[MetricSpec]:
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.find(name) is not None

    def family(self, family: Family) -> list[MetricSpec]:
        return [spec for spec in self._specs.values() if spec.family == family]

    def find(self, name: str) -> MetricSpec | None:
        spec = self._names.get(name)
        if spec is not None:
            return spec
        for _, resolver in self._resolvers:
            try:
                spec = resolver(name)
            except EvalCoreError:
                spec = None
            if spec is not None:
                return spec
        return None

    def resolve(self, name: str, *, suggest_from: Family | None = None) -> MetricSpec:
        """The spec of `name` (a name, an alias or a parametrised name), or UnknownMetricError.

        The error suggests close names from `suggest_from`, the family the caller applies to (a rule on
        evaluations of runs: retrieval), so that `ndgc_cut_10` suggests `ndcg_cut_10`, not a recommendation
        metric whose name happens to be as close; from every family when None."""
        spec = self.find(name)
        if spec is None:
            raise UnknownMetricError(did_you_mean("metric", name, self.suggest(name, family=suggest_from)))
        return spec

    def suggest(self, name: str, *, family: Family | None = None) -> list[str]:
        """Up to three names close to `name`, the closest first, from `family` (every family when None)."""
        candidates: list[str] = []
        for each in FAMILIES if family is None else (family,):
            suggester = self._suggesters.get(each)
            if suggester is not None:
                candidates += suggester(name)
            else:
                candidates += close_names(name, [n for n, spec in self._names.items() if spec.family == each])
        # Each family's list is ranked already; across families the closest spelling comes first.
        ranked = sorted(dict.fromkeys(candidates), key=lambda close: -_similarity(name, close))
        return ranked[:3]


def _similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a.lower(), b.lower()).ratio()


def close_names(name: str, known: list[str]) -> list[str]:
    """Up to three of `known` close to `name`, the closest first (ignoring case when nothing is close)."""
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if not close:
        lowered = {k.lower(): k for k in known}
        close = [lowered[k] for k in difflib.get_close_matches(name.lower(), list(lowered), n=3, cutoff=0.6)]
    return close


def did_you_mean(kind: str, name: str, close: list[str]) -> str:
    """`unknown metric 'mpa'; did you mean 'map'?`, or without the question when nothing is close."""
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown {kind} {name!r}{hint}"


def unknown_name_message(kind: str, name: str, known: list[str]) -> str:
    """`unknown metric 'mpa'; did you mean 'map'?`, naming up to three close matches."""
    return did_you_mean(kind, name, close_names(name, known))


#: The modules that declare each family's specs, as `module:attribute` of an iterable of specs, and
#: optionally `module:function` of the family's resolver and of its suggester. Imported on first use of
#: the registry.
_FAMILY_MODULES: dict[Family, tuple[str | tuple[str, ...], str | None, str | None]] = {
    "retrieval": (
        "evalcore.retrieval.measures:METRIC_SPECS",
        "evalcore.retrieval.names:resolve_metric",
        "evalcore.retrieval.names:suggest_measures",
    ),
    "agreement": (
        ("evalcore.agreement._stats:METRIC_SPECS", "evalcore.judging.specs:PROJECT_METRIC_SPECS"),
        None,
        None,
    ),
    "recsys": ("evalcore.recsys:METRIC_SPECS", None, None),
    "fraud": ("evalcore.fraud:METRIC_SPECS", None, None),
    "embedding": ("evalcore.embeddings.specs:METRIC_SPECS", None, None),
    "annotator": ("evalcore.judging.specs:METRIC_SPECS", None, None),
}


def _load(reference: str) -> Any:
    module, _, attribute = reference.partition(":")
    return getattr(import_module(module), attribute)


@cache
def metric_registry() -> MetricRegistry:
    """Every family's metrics in one registry (built once, on first use)."""
    registry = MetricRegistry()
    for family, (specs, resolver, suggester) in _FAMILY_MODULES.items():
        for spec in (s for each in ((specs,) if isinstance(specs, str) else specs) for s in _load(each)):
            if spec.family != family:
                raise ValueError(f"{spec.name!r} is declared in {family}'s module as {spec.family}")
            registry.register(spec)
        if resolver is not None:
            registry.register_resolver(family, _load(resolver))
        if suggester is not None:
            registry.register_suggester(family, _load(suggester))
    return registry
