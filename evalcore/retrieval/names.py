"""Measure names: trec_eval's (`P_10`, `ndcg_cut_10`, `P.5,10`, bare `P`) and ir-measures' (`P@10`,
`nDCG@10`, `RR(rel=2)`, `AP(rel=2)@100`).

A bare parametrised trec_eval name means every default parameter, as `trec_eval -m P` does, and
expands to one output key per parameter (`P_5`, ..., `P_1000`). A trec_eval-style name may end with
`_min_rel_<g>` to set that measure's relevance level, the counterpart of ir-measures' `(rel=g)`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evalcore.errors import EvalCoreError
from evalcore.metrics import MetricSpec
from evalcore.retrieval.measures import MEASURES, Measure

#: trec_eval's default output without -m (its "official" set, less runid).
DEFAULT_MEASURES: tuple[str, ...] = (
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "iprec_at_recall",
    "P",
)

_IR_STYLE = re.compile(r"^(?P<base>[A-Za-z][A-Za-z0-9_]*)(?:\((?P<opts>[^()]*)\))?(?:@(?P<param>[0-9.]+))?$")
_MIN_REL = re.compile(r"^(?P<base>.+)_min_rel_(?P<rel>-?[0-9]+)$")
_TREC_PARAM = re.compile(r"^(?P<base>[A-Za-z][A-Za-z0-9_]*?)[_.](?P<param>[0-9.]+(?:,[0-9.]+)*)$")


@dataclass(frozen=True)
class MeasureSpec:
    """One output column: a measure, its parameter, its relevance level override and its key."""

    measure: Measure
    param: float | None
    rel_level: int | None  # None: use evaluate()'s rel_level
    key: str

    def level(self, default: int) -> int:
        return default if self.rel_level is None else self.rel_level


def _ir_aliases() -> dict[tuple[str, bool], Measure]:
    """(ir-measures name, has a parameter) -> measure."""
    table: dict[tuple[str, bool], Measure] = {}
    for m in MEASURES.values():
        if m.ir_name:
            table[(m.ir_name.lower(), m.param != "none")] = m
    table[("ndcg(gain=linear)", False)] = MEASURES["ndcg"]
    table[("ndcg(gain=linear)", True)] = MEASURES["ndcg_cut"]
    table[("map", False)] = MEASURES["map"]
    table[("mrr", False)] = MEASURES["recip_rank"]
    table[("mrr", True)] = MEASURES["recip_rank_cut"]
    return table


_IR_ALIASES = _ir_aliases()


class UnknownMeasureError(EvalCoreError, ValueError):
    """A name the registry does not know, or a parameter the measure does not take."""


def _number(text: str, measure: Measure, name: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UnknownMeasureError(f"{name!r}: {text!r} is not a number") from None
    if measure.param == "cutoff":
        if value != int(value) or value < 1:
            raise UnknownMeasureError(f"{name!r}: a cutoff must be a positive integer")
        return float(int(value))
    if not 0.0 <= value <= 1.0:
        raise UnknownMeasureError(f"{name!r}: a recall level lies in [0, 1]")
    return value


def _param_label(measure: Measure, value: float) -> str:
    return f"{value:.2f}" if measure.param == "recall" else str(int(value))


def _specs(
    measure: Measure, params: list[str] | None, rel: int | None, name: str, key_of: KeyFormat
) -> tuple[MeasureSpec, ...]:
    if rel is not None and not measure.uses_rel_level:
        raise UnknownMeasureError(f"{name!r}: {measure.name} does not use a relevance level")
    if measure.param == "none":
        if params:
            raise UnknownMeasureError(f"{name!r}: {measure.name} takes no parameter")
        return (MeasureSpec(measure, None, rel, name),)
    if params is None:
        values = [float(v) for v in measure.default_params]
        return tuple(MeasureSpec(measure, v, rel, key_of(_param_label(measure, v))) for v in values)
    values = [_number(p, measure, name) for p in params]
    if len(values) == 1:
        return (MeasureSpec(measure, values[0], rel, name),)
    return tuple(MeasureSpec(measure, v, rel, key_of(_param_label(measure, v))) for v in values)


class KeyFormat:
    """Builds the output key of one expanded parameter from the name the caller gave."""

    def __init__(self, prefix: str, suffix: str) -> None:
        self.prefix, self.suffix = prefix, suffix

    def __call__(self, label: str) -> str:
        return f"{self.prefix}{label}{self.suffix}"


def _parse_trec(name: str) -> tuple[MeasureSpec, ...] | None:
    rel: int | None = None
    suffix = ""
    base = name
    m = _MIN_REL.match(name)
    if m:
        base, rel, suffix = m["base"], int(m["rel"]), name[len(m["base"]) :]
    if base in MEASURES:
        return _specs(MEASURES[base], None, rel, name, KeyFormat(f"{base}_", suffix))
    m = _TREC_PARAM.match(base)
    if m and m["base"] in MEASURES and MEASURES[m["base"]].param != "none":
        measure = MEASURES[m["base"]]
        return _specs(measure, m["param"].split(","), rel, name, KeyFormat(f"{m['base']}_", suffix))
    return None


def _parse_ir(name: str) -> tuple[MeasureSpec, ...] | None:
    m = _IR_STYLE.match(name)
    if not m:
        return None
    rel: int | None = None
    options: list[str] = []
    for opt in filter(None, (o.strip() for o in (m["opts"] or "").split(","))):
        key, _, value = opt.partition("=")
        if key.strip() == "rel":
            try:
                rel = int(value)
            except ValueError:
                raise UnknownMeasureError(f"{name!r}: rel must be an integer") from None
        else:
            options.append(f"{key.strip()}={value.strip()}" if value else key.strip())
    base = m["base"] + (f"({','.join(sorted(options))})" if options else "")
    has_param = m["param"] is not None
    measure = _IR_ALIASES.get((base.lower(), has_param))
    if measure is None and not has_param:
        measure = _IR_ALIASES.get((base.lower(), True))  # bare cutoff measure: default cutoffs
    if measure is None:
        return None
    stem = name.split("@", 1)[0]
    return _specs(measure, [m["param"]] if has_param else None, rel, name, KeyFormat(f"{stem}@", ""))


def parse_measure(name: str) -> tuple[MeasureSpec, ...]:
    """The output columns a measure name asks for.

    >>> [s.key for s in parse_measure("P_10")], [s.key for s in parse_measure("nDCG@10")]
    (['P_10'], ['nDCG@10'])
    >>> [s.key for s in parse_measure("P.5,10")]
    ['P_5', 'P_10']
    >>> parse_measure("RR(rel=2)")[0].rel_level
    2
    """
    name = name.strip()
    specs = _parse_trec(name) or _parse_ir(name)
    if specs is None:
        raise UnknownMeasureError(f"unknown measure {name!r}")
    return specs


def parse_measures(names: list[str] | tuple[str, ...]) -> tuple[MeasureSpec, ...]:
    """Every output column of `names`, in order, without repeating a key."""
    seen: dict[str, MeasureSpec] = {}
    for name in names:
        for spec in parse_measure(name):
            seen.setdefault(spec.key, spec)
    return tuple(seen.values())


def resolve_metric(name: str) -> MetricSpec | None:
    """The registry spec of a retrieval measure name, parametrised or not (`P_10`, `nDCG@10`)."""
    from evalcore.retrieval.measures import METRIC_SPECS

    try:
        specs = parse_measure(name)
    except UnknownMeasureError:
        return None
    base = specs[0].measure.name
    return next((spec for spec in METRIC_SPECS if spec.name == base), None)
