"""Measure names: trec_eval's, ir-measures', and trec_eval's measure sets.

trec_eval's forms, read as trec_eval 9.0.8 reads `-m`:

- a bare name: the measure with its default parameters (`P` is P_5 ... P_1000, one output each);
- `name.params`, everything after the first dot being the parameters: cutoffs `P.5,10` (each read
  as C's `atol` reads it, so `ndcg_cut.10,20,23.4` gives ndcg_cut_23; sorted; a duplicate or a cutoff
  below 1 is refused), fractions `iprec_at_recall..10,.5` (C's `atof`; sorted; printed `_0.10`),
  values `utility.2,-1,0,0` and gains `ndcg.1=3,2=9` (one output, printed `utility_2,-1,0,0`);
- `name_k`, the output name of one parameter (`P_10`, `iprec_at_recall_0.50`), as pytrec_eval takes it;
- a measure set: `official` (trec_eval's default output), `all_trec`, `set`.

A trec_eval-style name may end with `_min_rel_<g>` to set that measure's relevance level, the
counterpart of ir-measures' `(rel=g)`. ir-measures' forms: `P@10`, `nDCG@10`, `RR(rel=2)`,
`AP(rel=2)@100`, `NumRet(rel=1)` (relevant retrieved, trec_eval's num_rel_ret), `SetF(beta=0.5)`,
and `judged_only=True` on the measures ir-measures gives it (`P(judged_only=True)@10`: that measure
on the ranking of the judged documents only, trec_eval's -J for one column).

Each output column is a `MeasureSpec` keyed by the name as given (a name that expands to several
columns keys each by its trec_eval name) and labelled with what trec_eval prints.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from functools import cache

from evalcore.errors import EvalCoreError
from evalcore.metrics import MetricSpec, close_names, did_you_mean
from evalcore.retrieval.gain import GainsAt
from evalcore.retrieval.measures import MEASURES, NICKNAMES, TREC_NAMES, Measure
from evalcore.retrieval.precision import MeasureParam
from evalcore.retrieval.ranking import Gains

#: evaluate()'s default: trec_eval's default output (`official`) less runid, which is text.
OFFICIAL_MEASURES: tuple[str, ...] = tuple(n for n in NICKNAMES["official"] if n != "runid")

_IR_STYLE = re.compile(r"^(?P<base>[A-Za-z][A-Za-z0-9_]*)(?:\((?P<opts>[^()]*)\))?(?:@(?P<param>[0-9.]+))?$")
_MIN_REL = re.compile(r"^(?P<base>.+)_min_rel_(?P<rel>-?[0-9]+)$")
_OUTPUT_NAME = re.compile(r"^(?P<base>[A-Za-z0-9_]+?)_(?P<param>[0-9]+(?:\.[0-9]*)?)$")
_ATOL = re.compile(r"^\s*[+-]?[0-9]+")
_ATOF = re.compile(r"^\s*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_PARAM_TAIL = re.compile(r"(?:[_.@][0-9.,=+-]*|\([^()]*\)(?:@[0-9.]*)?)$")


@dataclass(frozen=True)
class MeasureSpec:
    """One output column: a measure, its parameter, its relevance level override, its key and the
    name trec_eval prints for it."""

    measure: Measure
    param: MeasureParam
    rel_level: int | None  # None: use evaluate()'s rel_level
    key: str
    label: str = ""
    from_set: bool = False  # came from a measure set (`all_trec`), with the measure's defaults
    judged_only: bool = False  # ir-measures' judged_only=True: evaluated as under trec_eval -J

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.key)

    def level(self, default: int) -> int:
        return default if self.rel_level is None else self.rel_level


class UnknownMeasureError(EvalCoreError, ValueError):
    """A name the registry does not know, or a parameter the measure does not take."""


# --- C's number parsing, as trec_eval applies it to parameters ------------------------------------


def _atol(text: str) -> int:
    """C's atol: the leading integer, 0 when there is none."""
    match = _ATOL.match(text)
    return int(match.group()) if match else 0


def _atof(text: str) -> float:
    """C's atof: the longest leading number, 0.0 when there is none."""
    match = _ATOF.match(text)
    return float(match.group()) if match else 0.0


def _cutoffs(texts: list[str], name: str) -> list[float]:
    values = sorted(_atol(t) for t in texts)
    if values[0] < 1:
        raise UnknownMeasureError(f"{name!r}: a cutoff must be a positive integer")
    if len(set(values)) < len(values):
        raise UnknownMeasureError(f"{name!r}: a cutoff is given twice")
    return [float(v) for v in values]


def _fractions(texts: list[str], measure: Measure, name: str) -> list[float]:
    values = sorted(_atof(t) for t in texts)
    if values[0] < 0 or (measure.name == "iprec_at_recall" and values[-1] > 1):
        raise UnknownMeasureError(f"{name!r}: a recall level lies in [0, 1]")
    if len(set(values)) < len(values):
        raise UnknownMeasureError(f"{name!r}: a level is given twice")
    return values


def _values(text: str, measure: Measure, name: str) -> tuple[float, ...]:
    values = tuple(_atof(t) for t in text.split(","))
    if measure.name == "utility" and len(values) != 4:
        raise UnknownMeasureError(f"{name!r}: utility takes four coefficients a,b,c,d")
    return values


def _gains(text: str, name: str) -> Gains:
    pairs = []
    for item in text.split(","):
        level, equals, gain = item.partition("=")
        if not equals or not level.strip() or not gain.strip():
            raise UnknownMeasureError(f"{name!r}: gains are written level=gain, as in ndcg.1=3,2=9")
        if _atol(level) < 0:
            raise UnknownMeasureError(f"{name!r}: a relevance level is 0 or more")
        pairs.append((_atol(level), _atof(gain)))
    return Gains("linear", tuple(pairs))


def _param_label(measure: Measure, value: float) -> str:
    return f"{value:3.2f}" if measure.param == "fraction" else str(int(value))


# --- trec_eval-style names -----------------------------------------------------------------------


def _defaults(
    measure: Measure, rel: int | None, stem: str, suffix: str, sep: str = "_"
) -> tuple[MeasureSpec, ...]:
    """The bare name: one column per default parameter (P_5, ...), or one with the default values.

    Keys start with `stem`, the name as the caller wrote it; labels with trec_eval's name.
    """
    if measure.param in ("cutoff", "fraction"):
        return tuple(
            MeasureSpec(
                measure,
                float(v),
                rel,
                f"{stem}{sep}{_param_label(measure, v)}{suffix}",
                f"{measure.trec_name}_{_param_label(measure, v)}{suffix}",
            )
            for v in measure.default_params
        )
    param: MeasureParam = None
    if measure.param == "values":
        param = measure.default_params
    elif measure.param == "gains":
        param = Gains()
    return (MeasureSpec(measure, param, rel, f"{stem}{suffix}", f"{measure.trec_name}{suffix}"),)


def _with_params(
    measure: Measure, stem: str, text: str, rel: int | None, name: str, suffix: str
) -> tuple[MeasureSpec, ...]:
    """`name.params`: trec_eval's parameter list."""
    base = measure.trec_name
    if measure.param == "none":
        raise UnknownMeasureError(f"{name!r}: {base} takes no parameter")
    if measure.param in ("cutoff", "fraction"):
        texts = text.split(",")
        numbers = _cutoffs(texts, name) if measure.param == "cutoff" else _fractions(texts, measure, name)
        tails = [f"_{_param_label(measure, v)}{suffix}" for v in numbers]
        if len(numbers) == 1:
            return (MeasureSpec(measure, numbers[0], rel, name, base + tails[0]),)
        return tuple(
            MeasureSpec(measure, v, rel, stem + t, base + t) for v, t in zip(numbers, tails, strict=True)
        )
    param = _values(text, measure, name) if measure.param == "values" else _gains(text, name)
    return (MeasureSpec(measure, param, rel, name, f"{base}_{text}{suffix}"),)


def _output_name(measure: Measure, text: str, rel: int | None, name: str, suffix: str) -> MeasureSpec:
    """`name_k`: one parameter, written as trec_eval prints it."""
    value = float(text)
    if measure.param == "cutoff":
        if value != int(value) or value < 1:
            raise UnknownMeasureError(f"{name!r}: a cutoff must be a positive integer")
    else:
        _fractions([text], measure, name)
    label = f"{measure.trec_name}_{_param_label(measure, value)}{suffix}"
    return MeasureSpec(measure, value, rel, name, label)


def _parse_trec(name: str) -> tuple[MeasureSpec, ...] | None:
    rel: int | None = None
    suffix = ""
    base = name
    m = _MIN_REL.match(name)
    if m:
        base, rel, suffix = m["base"], int(m["rel"]), name[len(m["base"]) :]
    specs = _parse_trec_base(base, rel, name, suffix)
    if specs and rel is not None and not specs[0].measure.uses_rel_level:
        raise UnknownMeasureError(f"{name!r}: {specs[0].measure.trec_name} does not use a relevance level")
    return specs


def _parse_trec_base(base: str, rel: int | None, name: str, suffix: str) -> tuple[MeasureSpec, ...] | None:
    if base in TREC_NAMES:
        return _defaults(TREC_NAMES[base], rel, base, suffix)
    stem, dot, text = base.partition(".")
    if dot and stem in TREC_NAMES:
        return _with_params(TREC_NAMES[stem], stem, text, rel, name, suffix)
    m = _OUTPUT_NAME.match(base)
    if m and m["base"] in TREC_NAMES and TREC_NAMES[m["base"]].param in ("cutoff", "fraction"):
        return (_output_name(TREC_NAMES[m["base"]], m["param"], rel, name, suffix),)
    return None


# --- ir-measures-style names ---------------------------------------------------------------------


def _ir_aliases() -> dict[tuple[str, bool], Measure]:
    """(lower-case ir-measures name, has a parameter) -> measure."""
    table: dict[tuple[str, bool], Measure] = {}
    for m in MEASURES.values():
        if m.ir_name:
            table[(m.ir_name.lower(), m.param in ("cutoff", "fraction"))] = m
    table[("ndcg(gain=linear)", False)] = MEASURES["ndcg"]
    table[("ndcg(gain=linear)", True)] = MEASURES["ndcg_cut"]
    # ir-measures' nDCG(dcg=...): log2 is trec_eval's linear gain, exp-log2 gdeval's 2^rel - 1.
    for dcg, whole, cut in (("log2", "ndcg", "ndcg_cut"), ("exp-log2", "ndcg_exp", "ndcg_exp_cut")):
        table[(f"ndcg(dcg={dcg})", False)] = MEASURES[whole]
        table[(f"ndcg(dcg={dcg})", True)] = MEASURES[cut]
    table[("map", False)] = MEASURES["map"]
    table[("mrr", False)] = MEASURES["recip_rank"]
    table[("mrr", True)] = MEASURES["recip_rank_cut"]
    # ir-measures' other spellings (BPref, NDCG and RPrec differ only in case, which the lookup ignores).
    for alias, canonical in (
        ("precision", "p"),
        ("recall", "r"),
        ("map", "ap"),
        ("setp(relative=false)", "setp"),
    ):
        for has_param in (False, True):
            if (canonical, has_param) in table:
                table.setdefault((alias, has_param), table[(canonical, has_param)])
    table[("setp(relative=true)", False)] = table[("setrelp", False)] = MEASURES["set_relative_P"]
    return table


_IR_ALIASES = _ir_aliases()


#: Measures whose ir-measures parameters are keywords (`RBP(p=0.9)`), by lower-case name.
_KEYWORD_MEASURES: dict[str, Measure] = {
    m.ir_name.lower(): m for m in MEASURES.values() if m.options and m.ir_name
}
_TRUTH = {"true": 1.0, "false": 0.0}
#: ir-measures' measures that take judged_only (lower case; the diversity ones are not read here).
_JUDGED_ONLY = frozenset(
    ("ap", "map", "iprec", "ndcg", "p", "precision", "r", "recall", "rprec", "rr", "mrr", "setap", "setf",
     "setp", "setrelp", "success")
)  # fmt: skip
#: ir-measures' only choice for SDCG's dcg, accepted and dropped.
_FIXED_OPTIONS = {("sdcg", "dcg"): "log2"}


def _keyword_value(name: str, option: str, text: str) -> float:
    if option == "normalize":
        if text.lower() not in _TRUTH:
            raise UnknownMeasureError(f"{name!r}: normalize is true or false")
        return _TRUTH[text.lower()]
    try:
        value = float(text)
    except ValueError:
        raise UnknownMeasureError(f"{name!r}: {option} must be a number") from None
    if not math.isfinite(value):
        raise UnknownMeasureError(f"{name!r}: {option} must be a finite number")
    if option == "p" and not 0 < value <= 1:
        raise UnknownMeasureError(f"{name!r}: p lies in (0, 1]")
    if option == "T" and value <= 0:
        raise UnknownMeasureError(f"{name!r}: T, the gain wanted, must be above 0")
    if option == "cutoff" and (value != int(value) or value < 1):
        raise UnknownMeasureError(f"{name!r}: a cutoff must be a positive integer")
    return value


def _keyword_spec(
    measure: Measure, name: str, options: dict[str, str], cutoff: str | None, rel: int | None
) -> MeasureSpec:
    """`RBP(p=0.9)`, `SDCG(max_rel=3)@10`: the keyword parameters, in the measure's order."""
    given = {k: v for k, v in options.items() if _FIXED_OPTIONS.get((measure.name.lower(), k)) != v}
    if cutoff is not None:
        given["cutoff"] = cutoff
    unknown = [k for k in given if k not in measure.options]
    if unknown:
        takes = ", ".join("@k" if option == "cutoff" else option for option in measure.options)
        given_as = "@k" if unknown[0] == "cutoff" else unknown[0]
        raise UnknownMeasureError(f"{name!r}: {measure.ir_name} takes {takes}, not {given_as}")
    params = []
    for option, default in zip(measure.options, measure.default_params, strict=True):
        value = default if option not in given else _keyword_value(name, option, given[option])
        if math.isnan(value):
            written = "@k" if option == "cutoff" else f"{option}="
            raise UnknownMeasureError(f"{name!r}: {measure.ir_name} needs {written}")
        params.append(value)
    if "max_rel" in measure.options and params[-1] <= params[-2]:
        raise UnknownMeasureError(f"{name!r}: max_rel must be above min_rel")
    return MeasureSpec(measure, tuple(params), rel, name)


_IR_GAINS = re.compile(r"(?:^|,)\s*gains\s*=\s*\{(?P<pairs>[^{}]*)\}\s*")


def _ir_gains(name: str, text: str | None) -> tuple[str | None, tuple[tuple[int, float], ...] | None]:
    """ir-measures' `gains={0:0,1:1,2:3}` taken out of the options: (the other options, the gains)."""
    match = _IR_GAINS.search(text or "")
    if match is None:
        return text, None
    pairs = []
    for item in filter(None, (i.strip() for i in match["pairs"].split(","))):
        level, colon, gain = item.partition(":")
        try:
            pairs.append((int(level), float(gain if colon else "")))
        except ValueError:
            raise UnknownMeasureError(f"{name!r}: gains are written as in gains={{0:0,1:1,2:3}}") from None
    return _IR_GAINS.sub("", text or "", count=1).strip(","), tuple(pairs)


def _ir_options(name: str, text: str | None) -> tuple[int | None, dict[str, str]]:
    rel: int | None = None
    options: dict[str, str] = {}
    for opt in filter(None, (o.strip() for o in (text or "").split(","))):
        key, _, value = opt.partition("=")
        if key.strip() == "rel":
            try:
                rel = int(value)
            except ValueError:
                raise UnknownMeasureError(f"{name!r}: rel must be an integer") from None
        else:
            options[key.strip()] = value.strip().strip("'\"")  # ir-measures quotes text: dcg='exp-log2'
    return rel, options


def _options_text(options: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" if v else k for k, v in sorted(options.items()))


def _parse_ir(name: str) -> tuple[MeasureSpec, ...] | None:
    specs = _parse_ir_columns(name)
    # trec_eval has no such names to print: the text output shows them as the caller wrote them.
    return None if specs is None else tuple(replace(spec, label=spec.key) for spec in specs)


def _judged_only(name: str, base: str, text: str | None) -> bool:
    """ir-measures' `judged_only=` option: false (its default, which its measures spell out in full) or
    true, for the measures that take it."""
    if text is None or text.lower() == "false":
        return False
    if text.lower() != "true":
        raise UnknownMeasureError(f"{name!r}: judged_only is true or false")
    if base.lower() not in _JUDGED_ONLY:
        raise UnknownMeasureError(f"{name!r}: {base} does not take judged_only")
    return True


def _parse_ir_columns(name: str) -> tuple[MeasureSpec, ...] | None:
    m = _IR_STYLE.match(name)
    if not m:
        return None
    opts, gains = _ir_gains(name, m["opts"])
    rel, options = _ir_options(name, opts)
    keyword = _KEYWORD_MEASURES.get(m["base"].lower())
    if keyword is not None:
        if rel is not None and not keyword.uses_rel_level:
            raise UnknownMeasureError(f"{name!r}: {keyword.ir_name} does not use a relevance level")
        return (_keyword_spec(keyword, name, options, m["param"], rel),)
    judged = options.pop("judged_only", None)
    specs = _ir_specs(name, m["base"], m["param"], options, rel, gains)
    if specs is None or not _judged_only(name, m["base"], judged):
        return specs
    return tuple(replace(spec, judged_only=True) for spec in specs)


def _ir_specs(
    name: str,
    stem: str,
    cutoff: str | None,
    options: dict[str, str],
    rel: int | None,
    gains: tuple[tuple[int, float], ...] | None,
) -> tuple[MeasureSpec, ...] | None:
    """The columns of an ir-measures name that is not a keyword measure's (`AP(rel=2)@100`)."""
    param: MeasureParam = None
    if stem.lower() == "setf" and "beta" in options:
        param = (_atof(options.pop("beta")),)
    base = stem + (f"({_options_text(options)})" if options else "")
    has_param = cutoff is not None
    if base.lower() == "numret" and rel is not None and not has_param:
        # ir-measures' NumRet(rel=g): the retrieved documents with rel >= g.
        return (MeasureSpec(MEASURES["num_rel_ret"], None, rel, name),)
    measure = _IR_ALIASES.get((base.lower(), has_param))
    if measure is None and not has_param:
        measure = _IR_ALIASES.get((base.lower(), True))  # bare cutoff measure: default cutoffs
    if measure is None:
        return None
    if rel is not None and not measure.uses_rel_level:
        raise UnknownMeasureError(f"{name!r}: {measure.trec_name} does not use a relevance level")
    if gains is not None:
        if measure.name not in ("ndcg", "ndcg_cut"):
            raise UnknownMeasureError(f"{name!r}: gains apply to nDCG with dcg='log2' only")
        cut = math.inf
        if cutoff is not None:
            _output_name(measure, cutoff, rel, name, "")  # checks the cutoff
            cut = float(cutoff)
        return (MeasureSpec(MEASURES["ndcg"], GainsAt("linear", gains, cut), rel, name),)
    if cutoff is not None:
        return (_output_name(measure, cutoff, rel, name, ""),)
    defaults = _defaults(measure, rel, name, "", sep="@")
    if param is None or len(defaults) > 1:
        return defaults
    return (MeasureSpec(measure, param, rel, name, defaults[0].label),)


# --- the facade ----------------------------------------------------------------------------------


def parse_measure(name: str) -> tuple[MeasureSpec, ...]:
    """The output columns a measure name asks for.

    >>> [s.key for s in parse_measure("P_10")], [s.key for s in parse_measure("nDCG@10")]
    (['P_10'], ['nDCG@10'])
    >>> [s.key for s in parse_measure("P.5,10")]
    ['P_5', 'P_10']
    >>> [(s.key, s.label) for s in parse_measure("ndcg_cut.10,20,23.4")][-1]
    ('ndcg_cut_23', 'ndcg_cut_23')
    >>> parse_measure("RR(rel=2)")[0].rel_level
    2
    """
    name = name.strip()
    if name in NICKNAMES:
        return tuple(replace(spec, from_set=True) for spec in parse_measures(NICKNAMES[name]))
    specs = _parse_trec(name) or _parse_ir(name)
    if specs is None:
        raise UnknownMeasureError(_unknown(name))
    return specs


def parse_measures(names: list[str] | tuple[str, ...]) -> tuple[MeasureSpec, ...]:
    """Every output column of `names`, in order, without repeating a key.

    As in trec_eval, parameters given for a measure replace its defaults in a measure set:
    `-m all_trec -m relstring.20` prints relstring_20, not relstring as well.
    """
    seen: dict[str, MeasureSpec] = {}
    for name in names:
        for spec in parse_measure(name):
            seen.setdefault(spec.key, spec)
    explicit = {spec.measure.name for spec in seen.values() if not spec.from_set}
    return tuple(s for s in seen.values() if not (s.from_set and s.measure.name in explicit))


def known_names() -> list[str]:
    """Every measure name without parameters: trec_eval's, ir-measures' and the measure sets."""
    names = dict.fromkeys([*TREC_NAMES, *NICKNAMES, "MRR", "MAP"])
    names.update(dict.fromkeys(m.ir_name for m in MEASURES.values() if m.ir_name))
    return list(names)


def suggest_measures(name: str) -> list[str]:
    """Measure names close to an unknown `name`, with the parameter the caller wrote put back: the stem is
    compared without its cutoff (`ndgc_cut_10` -> `ndcg_cut_10`, `Pp.10` -> `P.10`, `nDGC@10` ->
    `nDCG@10`), so a cutoff never pulls the match towards another name."""
    known = known_names()
    tail = _PARAM_TAIL.search(name)
    if tail and tail.start() and tail.group() not in ("_", ".", "@"):
        close = close_names(name[: tail.start()], known)
        valid = [c + tail.group() for c in close if _parses(c + tail.group())]
        if valid:
            return valid
    return close_names(name, known)


def _unknown(name: str) -> str:
    """`unknown measure 'ndcg_cutt_10'; did you mean 'ndcg_cut_10'?`."""
    return did_you_mean("measure", name, suggest_measures(name))


def _parses(name: str) -> bool:
    try:
        return bool(_parse_trec(name) or _parse_ir(name))
    except UnknownMeasureError:
        return False


@cache
def canonical_measure(name: str) -> str:
    """The one name of the column `name` asks for: trec_eval's output name where it reads back as the very
    same column (measure, parameter, relevance level), else `name` as given.

    Evaluations store each value under the name it was asked by (the command-line tools print it so), so
    one measure may be stored under two spellings; pages that group values by measure key them by this,
    so that `nDCG@10` and `ndcg_cut_10` are one column, not two with equal values. A name that asks for
    several columns (`P`), that trec_eval cannot spell (`RBP(p=0.9)`, `Judged@10`, judged_only) or that
    is no measure stays as given.

    >>> [canonical_measure(n) for n in ("nDCG@10", "ndcg_cut.10", "P@10", "MAP", "RR", "nDCG")]
    ['ndcg_cut_10', 'ndcg_cut_10', 'P_10', 'map', 'recip_rank', 'ndcg']
    >>> [canonical_measure(n) for n in ("ndcg_cut_10", "RBP(p=0.9)", "Judged@10", "P", "no such")]
    ['ndcg_cut_10', 'RBP(p=0.9)', 'Judged@10', 'P', 'no such']
    """
    try:
        specs = parse_measure(name)
    except UnknownMeasureError:
        return name
    if len(specs) != 1 or specs[0].judged_only:
        return name
    spec = specs[0]
    measure = spec.measure
    candidate = measure.trec_name
    if measure.param in ("cutoff", "fraction") and isinstance(spec.param, float):
        candidate += f"_{_param_label(measure, spec.param)}"
    if spec.rel_level is not None:
        candidate += f"_min_rel_{spec.rel_level}"
    if candidate == name or not _same_column(candidate, spec):
        return name
    return candidate


def _same_column(name: str, spec: MeasureSpec) -> bool:
    """Whether trec_eval-style `name` asks for exactly `spec`'s column."""
    try:
        found = _parse_trec(name)
    except UnknownMeasureError:
        return False
    if found is None or len(found) != 1:
        return False
    (other,) = found
    return (other.measure, other.param, other.rel_level, other.judged_only) == (
        spec.measure, spec.param, spec.rel_level, spec.judged_only
    )  # fmt: skip


def resolve_metric(name: str) -> MetricSpec | None:
    """The registry spec of a retrieval measure name, parametrised or not (`P_10`, `nDCG@10`)."""
    try:
        specs = parse_measure(name)
    except UnknownMeasureError:
        return None
    measures = {spec.measure.name for spec in specs}
    return specs[0].measure if len(measures) == 1 else None
