"""Formula front end: the only module that imports patsy.

Turns ``formula + DataFrame + declared metadata`` into a :class:`Design`, in
an order that keeps every data-dependent step after every check:

1. **Public inputs only.** The formula is parsed and each factor is admitted
   by the row-wise grammar of dpstats/frontend/grammar.py (``x.mean()`` and
   friends are refused here, naming the token). A variable is categorical
   when its levels are declared (``levels=`` or ``C(var, levels=[...])``),
   numeric otherwise. patsy then builds the design's columns on a one-row
   *prototype* frame made of the declared metadata alone (midpoints of the
   bounds, the first declared level), and every design column gets bounds by
   interval arithmetic (products of bounded factors, contrast-matrix ranges);
   a transform whose domain the declared box leaves (``np.log(x)`` with 0 in
   x's bounds) is refused, naming the bound to change. Every error up to here
   depends on the formula, the column names and the declarations only.
2. **Row-wise maps of the data.** Each cell gets the treatment of
   dpstats/frontend/cells.py (bad numeric cells imputed, undeclared levels mapped to
   the first level, values clipped to their bounds), patsy evaluates the
   design from the prototype's design information (so the columns are the
   prototype's whatever the data hold), and each design column is clipped to
   its derived bounds, a non-finite value (possible only for a variable
   without bounds) becoming the column's midpoint, or 0.

Nothing in step 2 raises, warns or changes the shape of the output, except
under ``missing="raise"``, the curator's opt-in.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache, partial

import numpy as np
import pandas as pd
import patsy
from patsy.build import _subterm_column_combinations
from patsy.tokens import normalize_token_spacing

from ..design.bounds import Interval, OutsideDomain, UnboundedExpression, expression_bounds, product
from ..design.matrix import Design, Variables
from .axes import ModelScale, model_scale_functions, response_axis
from .cells import CURATOR_ONLY, categorical_cells, check_missing, numeric_cells
from .grammar import check_factor, evaluation_namespace
from .metadata import check_bounds, check_integers, check_levels
from .survey import SurveyDeclaration, check_psu_levels, psus
from .weights import check_weights, weight_values

_NO_NA = patsy.NAAction(on_NA="raise", NA_types=[])  # no value is NA to patsy: nothing raises, nothing is copied


@dataclass(frozen=True)
class FormulaSpec:
    """Public description of a fitted formula, enough to rebuild X for new data."""

    formula: str
    rhs: str
    levels: dict[str, tuple]
    term_names: tuple[str, ...]


# --------------------------------------------------------------------------
# The formula's variables (formula and column names only)
# --------------------------------------------------------------------------


def _normalized_bounds(bounds: dict[str, Interval]) -> dict[str, Interval]:
    """``bounds`` with expression keys spelled as patsy spells factor codes.

    patsy normalises token spacing (``I(x**2)`` becomes ``I(x ** 2)``), so a
    bound declared for an expression must be looked up under that spelling.
    """
    out: dict[str, Interval] = {}
    for name, pair in bounds.items():
        try:
            key = name if name.isidentifier() else normalize_token_spacing(name)
        except Exception:  # not tokenizable: keep the user's spelling
            key = name
        out[key] = pair
        out.setdefault(name, pair)
    return out


def _parse(formula: str) -> patsy.ModelDesc:
    if not isinstance(formula, str) or "~" not in formula:
        raise TypeError("formula must be a string such as 'y ~ x'")
    try:
        desc = patsy.ModelDesc.from_formula(formula)
    except patsy.PatsyError as exc:
        raise ValueError(f"formula could not be parsed: {exc.message}") from None
    if not desc.lhs_termlist:
        raise ValueError("formula must have a response, as in 'y ~ x'")
    return desc


def _codes(terms) -> list[str]:
    return [factor.code for term in terms for factor in term.factors]


def _names_in(code: str) -> set[str]:
    """Names and ``Q("...")`` strings in an admitted factor's code."""
    tree = ast.parse(code.strip(), mode="eval")
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    quoted = {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Q" and node.args
    }
    return names | {q for q in quoted if isinstance(q, str)}


def _used(codes: list[str], columns: Collection[str]) -> list[str]:
    names: list[str] = []
    for code in codes:
        names += sorted(n for n in _names_in(code) if n in columns and n not in names)
    return names


def _formula_levels(desc: patsy.ModelDesc, columns: Collection[str], declared: dict[str, tuple]) -> dict[str, tuple]:
    """Levels written in the formula as ``C(var, levels=[...])``, by column.

    A column so wrapped must not be used any other way, and its levels must
    agree with ``levels=`` and with every other such call: otherwise patsy
    would meet the data's values in a second coding, where an undeclared
    value raises. All of this is decided on the formula alone.
    """
    found: dict[str, tuple] = {}
    other_uses: set[str] = {n for code in _codes(desc.lhs_termlist) for n in _names_in(code)}
    for code in _codes(desc.rhs_termlist):
        node = ast.parse(code.strip(), mode="eval").body
        written = [k.value for k in getattr(node, "keywords", ()) if k.arg == "levels"]
        is_call = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "C"
        if not (is_call and written and isinstance(node.args[0], ast.Name) and node.args[0].id in columns):
            other_uses |= _names_in(code)
            continue
        name, values = node.args[0].id, tuple(ast.literal_eval(written[0]))
        if found.get(name, values) != values or declared.get(name, values) != values:
            raise ValueError(f"the levels of {name!r} are written differently in the formula and levels=")
        found[name] = values
    both = sorted(set(found) & other_uses - set(declared))
    if both:
        raise ValueError(f"columns {both} are used both inside C(..., levels=[...]) and otherwise; declare levels=")
    return found


def admitted_variables(
    formula: str, columns: Sequence, levels: Mapping[str, Sequence] | None
) -> tuple[list[str], list[str], dict[str, tuple]]:
    """Admit ``formula`` by the row-wise grammar and name what it uses, from public facts only.

    Returns the columns the response uses, those the regressors use, and the
    levels of every categorical variable (declared in ``levels`` or written as
    ``C(var, levels=[...])``).
    """
    desc = _parse(formula)
    levels = check_levels(levels)
    columns = [str(c) for c in columns]
    lhs_codes, rhs_codes = _codes(desc.lhs_termlist), _codes(desc.rhs_termlist)
    for code in lhs_codes + rhs_codes:
        check_factor(code, columns)
    lhs_vars, rhs_vars = _used(lhs_codes, columns), _used(rhs_codes, columns)
    if not lhs_vars:
        raise ValueError(f"the formula's response {formula.split('~', 1)[0].strip()!r} uses no column of data")
    return lhs_vars, rhs_vars, {**_formula_levels(desc, columns, levels), **levels}


# --------------------------------------------------------------------------
# Column bounds by interval arithmetic
# --------------------------------------------------------------------------


def _factor_interval(code: str, bounds: dict[str, Interval]) -> Interval:
    if code in bounds:
        return bounds[code]
    return expression_bounds(code, bounds)


def column_bounds(design_info, bounds: dict[str, Interval]) -> tuple[np.ndarray, list[str]]:
    """Bounds of every design column, and the terms whose bounds are unknown.

    Raises a ValueError when a term's declared box leaves a function's domain.
    """
    out = np.full((len(design_info.column_names), 2), np.nan)
    unknown: list[str] = []
    for term, subterms in design_info.term_codings.items():
        start = design_info.term_slices[term].start
        for subterm in subterms:
            per_factor = []
            for factor in subterm.factors:
                if factor in subterm.contrast_matrices:
                    matrix = subterm.contrast_matrices[factor].matrix
                    per_factor.append([(float(c.min()), float(c.max())) for c in matrix.T])
                elif design_info.factor_infos[factor].num_columns == 1:
                    try:
                        per_factor.append([_factor_interval(factor.code, bounds)])
                    except OutsideDomain as exc:
                        raise ValueError(
                            f"formula term {factor.code!r} is undefined on part of the declared bounds ({exc}); "
                            "change the bounds so that the transform is defined on all of them"
                        ) from None
                    except UnboundedExpression:
                        per_factor.append([None])
                else:
                    per_factor.append([None] * design_info.factor_infos[factor].num_columns)
            for combo in _subterm_column_combinations(design_info.factor_infos, subterm):
                interval: Interval | None = (1.0, 1.0)
                for factor_cols, col in zip(per_factor, combo, strict=True):
                    piece = factor_cols[col]
                    interval = None if piece is None or interval is None else product(interval, piece)
                if interval is None:
                    if term.name() not in unknown:
                        unknown.append(term.name())
                else:
                    out[start] = interval
                start += 1
    return out, unknown


def _is_one_hot(matrix: np.ndarray) -> bool:
    """Every row of a contrast matrix is 0 or a unit vector (patsy's Treatment coding, or full rank)."""
    return bool(np.all((matrix == 0) | (matrix == 1)) and np.all(matrix.sum(axis=1) <= 1))


def one_hot_blocks(design_info) -> tuple[tuple[int, ...], ...]:
    """The design's one-hot blocks: columns of which every row has at most one 1 and zeros elsewhere.

    A subterm whose factors are all categorical with one-hot contrast matrices
    (patsy's default Treatment coding, or the full-rank coding without an
    intercept) codes each combination of levels as a product of unit vectors:
    a unit vector or zero. Decided from the formula and the declared levels
    only, so it is public; mechanisms use it for sensitivities that do not grow
    with the number of levels (dpstats/mechanisms/noisystats/mechanism.py).
    """
    blocks = []
    for term, subterms in design_info.term_codings.items():
        start = design_info.term_slices[term].start
        for subterm in subterms:
            width = int(subterm.num_columns)
            categorical = subterm.factors and all(f in subterm.contrast_matrices for f in subterm.factors)
            if categorical and all(_is_one_hot(np.asarray(m.matrix)) for m in subterm.contrast_matrices.values()):
                blocks.append(tuple(range(start, start + width)))
            start += width
    return tuple(blocks)


# --------------------------------------------------------------------------
# Step 1: the design's shape from public metadata
# --------------------------------------------------------------------------


def _categorical_passthrough(data, contrast=None, levels=None):
    """patsy's ``C()``, returning a column that already is a Categorical with the
    declared levels unchanged: patsy checks for a Categorical before unwrapping
    ``C(...)`` and otherwise converts every row in a Python loop (patsy issue 97),
    which made ``C(g)`` the slowest step of a fit."""
    dtype = getattr(data, "dtype", None)
    declared = isinstance(dtype, pd.CategoricalDtype) and (levels is None or tuple(levels) == tuple(dtype.categories))
    if contrast is None and declared:
        return data
    return patsy.builtins.C(data, contrast, levels)


def _environment() -> patsy.EvalEnvironment:
    """The formula's namespace: the row-wise functions and patsy's ``C``, nothing of the caller's."""
    return patsy.EvalEnvironment([{**evaluation_namespace(), "C": _categorical_passthrough}])


def _prototype(schema: tuple[tuple[str, Interval | None, tuple | None], ...]) -> pd.DataFrame:
    """One public row: the midpoint of each numeric variable's bounds (1 if none), each factor's first level."""
    row: dict[str, object] = {}
    for name, bounds, levels in schema:
        if levels is not None:
            row[name] = pd.Categorical([levels[0]], categories=pd.Index(levels))
        else:
            lo, hi = bounds or (1.0, 1.0)
            row[name] = [0.5 * (lo + hi)]
    return pd.DataFrame(row)


def _evaluate(infos, frame: pd.DataFrame) -> list[np.ndarray]:
    """patsy's design matrices of ``frame``, without a warning, an error, or a dropped row from the values."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [np.asarray(m, dtype=float) for m in patsy.build_design_matrices(infos, frame, NA_action=_NO_NA)]


@lru_cache(maxsize=256)
def _design_infos(formula: str, schema: tuple[tuple[str, Interval | None, tuple | None], ...]):
    """patsy's design information for ``formula`` on the prototype of ``schema`` (public facts only).

    Cached: the same formula and declarations give the same design, so repeated
    fits (several quantiles, simulations, the tests) build it once.
    """
    prototype = _prototype(schema)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y_mat, x_mat = patsy.dmatrices(formula, prototype, eval_env=_environment(), NA_action=_NO_NA)
    except patsy.PatsyError as exc:
        raise ValueError(f"formula could not be evaluated on the declared metadata: {exc.message}") from None
    return y_mat.design_info, x_mat.design_info


def _check_declared_categories(design_info, levels: dict[str, tuple], variables: list[str]) -> None:
    """A categorical term's levels must be public: declared, or False/True of a comparison."""
    for factor, info in design_info.factor_infos.items():
        if info.type != "categorical":
            continue
        names = _names_in(factor.code) & set(variables)
        compares = any(isinstance(n, ast.Compare) for n in ast.walk(ast.parse(factor.code.strip(), mode="eval")))
        if not compares and not (names and all(n in levels for n in names)):
            raise ValueError(
                f"categorical term {factor.code!r} needs declared levels: pass levels={{...}} "
                "or write C(var, levels=[...]) in the formula"
            )


def _derived_bounds(y_info, x_info, bounds: dict[str, Interval], binary: bool = False) -> tuple[Interval, np.ndarray]:
    """The response's and the design columns' bounds; a binary response's are [0, 1] whatever its expression."""
    x_bounds, unknown = column_bounds(x_info, bounds)
    y_col, y_unknown = (np.array([BINARY_BOUNDS]), []) if binary else column_bounds(y_info, bounds)
    unknown = y_unknown + unknown
    if unknown:
        raise ValueError(
            "cannot derive bounds for the formula terms "
            + ", ".join(repr(t) for t in unknown)
            + "; declare bounds=... for their numeric variables (or for the expression itself), "
            "or levels=... for categorical ones"
        )
    degenerate = [c for j, c in enumerate(x_info.column_names) if x_bounds[j, 0] == x_bounds[j, 1] and c != "Intercept"]
    if degenerate:
        raise ValueError(f"design columns {degenerate} have zero-width bounds")
    return (float(y_col[0, 0]), float(y_col[0, 1])), x_bounds


# --------------------------------------------------------------------------
# Step 2: row-wise maps of the data
# --------------------------------------------------------------------------


def prepare_frame(
    data: pd.DataFrame,
    variables: list[str],
    bounds: dict[str, Interval],
    levels: dict[str, tuple],
    missing: str,
) -> pd.DataFrame:
    """The formula's variables after the cell-wise treatment of dpstats/frontend/cells.py.

    Rows are matched by position: the caller's index (which may be filtered,
    shuffled or duplicated) is dropped.
    """
    columns = {}
    for name in variables:
        column = data[name].reset_index(drop=True)
        if name in levels:
            columns[name] = categorical_cells(name, column, levels[name], missing)
        else:
            columns[name] = numeric_cells(name, column, bounds.get(name), missing)
    return pd.DataFrame(columns, index=pd.RangeIndex(len(data)))


def _encode(
    infos, variables: list[str], levels: dict[str, tuple], scale: ModelScale, rows: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray]:
    """``(y, X)`` of public ``rows`` of the variables on the model's scale, with the design's columns
    (Variables.encode)."""
    y, X = _evaluate(infos, prepare_frame(scale.inverse(rows), variables, {}, levels, "impute"))
    return y[:, 0], X


def _finite(values: np.ndarray, limits: np.ndarray | None, names: Sequence[str], missing: str) -> np.ndarray:
    """A transform's non-finite values (only for variables without bounds) made finite, then clipped."""
    bad = ~np.isfinite(values)
    if missing == "raise" and bad.any():
        terms = [n for n, b in zip(names, bad.any(axis=0), strict=True) if b]
        raise ValueError(f"formula terms {terms} have non-finite values. {CURATOR_ONLY}")
    if limits is None:
        return np.where(bad, 0.0, values)
    if bad.any():  # a NaN to its column's midpoint (an infinity is clipped below)
        values = np.where(np.isnan(values), 0.5 * (limits[:, 0] + limits[:, 1]), values)
    return np.clip(values, limits[:, 0], limits[:, 1])


# --------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------


def check_data(data: object, min_rows: int = 2) -> pd.DataFrame:
    """``data`` as a DataFrame (a dict of columns converted) with unique names and at least ``min_rows`` rows:
    its schema only, no value is read."""
    if isinstance(data, Mapping):
        data = pd.DataFrame(data)
    if not isinstance(data, pd.DataFrame):
        raise TypeError("data must be a pandas DataFrame or a dict of columns")
    if data.columns.duplicated().any():
        raise ValueError("data has duplicated column names")
    if len(data) < min_rows:
        raise ValueError("data must have at least 2 rows")
    return data


def build_design(
    formula: str,
    data: pd.DataFrame,
    bounds: Mapping[str, Sequence[float]] | None,
    levels: Mapping[str, Sequence] | None,
    need_bounds: bool = True,
    missing: str = "impute",
    min_rows: int = 2,
    integers: Sequence[str] | None = None,
    binary: bool = False,
    survey: SurveyDeclaration | None = None,
) -> tuple[Design, FormulaSpec]:
    """Build the clipped :class:`Design` of ``formula`` on ``data`` (module docstring).

    ``need_bounds=False`` is for mechanisms that need no data bounds (Tukey
    depth); categorical levels are always required. ``min_rows=0`` builds the
    design of one partition of a Dask DataFrame, or of its empty ``_meta``
    (dpstats/distributed/dask_design.py). ``integers``: declared whole-valued
    variables (:func:`~dpstats.frontend.metadata.check_integers`), kept on
    their own scale. ``binary=True`` is for a binary-response model (:func:`_binary_variables`). ``survey``
    declares the survey-weight column, whose range ``bounds`` declares (dpstats/frontend/weights.py), and the
    PSUs' and strata's columns, whose levels ``levels`` declares (dpstats/frontend/survey.py).
    """
    data = check_data(data, min_rows)
    missing = check_missing(missing)
    bounds = _normalized_bounds(check_bounds(bounds))
    lhs_vars, rhs_vars, levels = admitted_variables(formula, data.columns, levels)
    variables = lhs_vars + [v for v in rhs_vars if v not in lhs_vars]
    if binary:  # a bare response column lives in [0, 1]; a comparison's variable keeps its own declaration
        bare = formula.split("~", 1)[0].strip()
        bounds = {**{v: BINARY_BOUNDS for v in lhs_vars if v == bare and v not in bounds and v not in levels}, **bounds}
    whole = check_integers(integers, bounds)
    weight_bounds = None if survey is None else check_weights(survey.weights, data.columns, bounds)
    if survey is not None:
        check_psu_levels(survey, data.columns, levels)

    schema = tuple((name, bounds.get(name), levels.get(name)) for name in variables)
    y_info, x_info = _design_infos(formula, schema)
    _check_declared_categories(x_info, levels, variables)
    y_column = _true_column(y_info) if binary else 0 if len(y_info.column_names) == 1 else None
    if y_column is None:
        raise ValueError("the response must be a single numeric column")
    if not x_info.column_names:
        raise ValueError("the formula has no regressors (not even an intercept)")
    y_bounds, x_bounds = _derived_bounds(y_info, x_info, bounds, binary) if need_bounds else (None, None)

    frame = prepare_frame(data, variables, bounds, levels, missing)
    y_raw, X = _evaluate([y_info, x_info], frame)
    y_raw = y_raw[:, [y_column]]
    y = _finite(y_raw, None if y_bounds is None else np.array([y_bounds]), y_info.column_names, missing)[:, 0]
    X = _finite(X, x_bounds, x_info.column_names, missing)

    intercept = [j for j, name in enumerate(x_info.column_names) if name == "Intercept"]
    codes = [factor.code for info in (y_info, x_info) for term in info.terms for factor in term.factors]
    own_scale = [v for v in variables if v in bounds and v not in levels and v not in whole]
    scale = ModelScale(model_scale_functions(codes, own_scale))
    design = Design(
        y=y,
        X=X,
        y_name=_response_name(y_info, y_column),
        term_names=tuple(x_info.column_names),
        y_bounds=y_bounds,
        x_bounds=x_bounds,
        intercept_index=intercept[0] if intercept else None,
        one_hot_blocks=one_hot_blocks(x_info),
        variables=Variables(
            frame=scale.forward(frame),
            response=tuple(lhs_vars),
            bounds=scale.bounds(bounds),
            levels=levels,
            encode=partial(_encode, [y_info, x_info], variables, levels, scale),
            response_axis=response_axis(y_info.terms[0].factors[0].code, lhs_vars, scale),
            integers=tuple(v for v in whole if v in variables),
        ),
    )
    if binary:
        design = replace(design, variables=_binary_variables(design, x_info, rhs_vars, bounds, levels, scale, whole))
    if survey is not None and weight_bounds is not None:
        values = weight_values(data[survey.weights], survey.weights, weight_bounds, missing)
        design = replace(design, weights=values, weight_bounds=weight_bounds, psus=psus(survey, data, levels, missing))
    spec = FormulaSpec(
        formula=formula,
        rhs=formula.split("~", 1)[1],
        levels={k: v for k, v in levels.items() if k in rhs_vars},
        term_names=tuple(x_info.column_names),
    )
    return design, spec


BINARY_BOUNDS = (0.0, 1.0)
"""The response's range in a binary-response model: a 0/1 outcome or a fractional one, clipped row-wise."""


def _binary_variables(
    design: Design,
    x_info,
    rhs_vars: list[str],
    bounds: dict[str, Interval],
    levels: dict[str, tuple],
    scale: ModelScale,
    whole: Sequence[str],
) -> Variables:
    """A binary design's variables: the regressors' variables and the response itself as one column in [0, 1]
    (named as the design's response), whatever expression of other variables it is (``I(wage > 500)``): a
    mechanism that bins variables bins the outcome, not the variable it was made from."""
    name = design.y_name
    frame = design.variables.frame[rhs_vars].assign(**{name: design.y})
    return Variables(
        frame=frame,
        response=(name,),
        bounds={**{k: v for k, v in scale.bounds(bounds).items() if k in rhs_vars}, name: BINARY_BOUNDS},
        levels={k: v for k, v in levels.items() if k in rhs_vars},
        encode=partial(_encode_binary, x_info, rhs_vars, levels, scale, name),
        response_axis=name,
        integers=tuple(v for v in whole if v in rhs_vars) + ((name,) if name in whole else ()),
    )


def _encode_binary(
    x_info, variables: list[str], levels: dict[str, tuple], scale: ModelScale, response: str, rows: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray]:
    """``(y, X)`` of public rows of a binary design's variables (:func:`_binary_variables`)."""
    (X,) = _evaluate([x_info], prepare_frame(scale.inverse(rows[variables]), variables, {}, levels, "impute"))
    return rows[response].to_numpy(dtype=float), X


def _true_column(y_info) -> int | None:
    """The response's column: its only one, or the ``[True]`` column of a comparison (``I(kids > 0)``), which
    patsy codes as a two-level categorical; None for anything else."""
    names = y_info.column_names
    if len(names) == 1:
        return 0
    if len(names) == 2 and names[0].endswith("[False]") and names[1].endswith("[True]"):
        return 1
    return None


def _response_name(y_info, column: int) -> str:
    """The response's name, without the ``[True]`` of a comparison."""
    name = y_info.column_names[column]
    return name.removesuffix("[True]") if column else name


def design_for_new_data(spec: FormulaSpec, newdata: pd.DataFrame) -> np.ndarray:
    """Design matrix of ``spec``'s right-hand side on new (public) data.

    Categorical columns get the declared levels, so the columns match the fit.
    New data are not clipped: predictions are evaluated where asked.
    """
    if isinstance(newdata, Mapping):
        newdata = pd.DataFrame(newdata)
    frame = newdata.copy()
    for name, declared in spec.levels.items():
        if name in frame:
            frame[name] = pd.Categorical(frame[name], categories=pd.Index(declared))
    try:
        X = patsy.dmatrix(spec.rhs, frame, eval_env=_environment(), NA_action="raise")
    except patsy.PatsyError as exc:
        raise ValueError(f"newdata could not be evaluated: {exc.message}") from None
    if tuple(X.design_info.column_names) != spec.term_names:
        raise ValueError("newdata does not produce the fitted model's design columns")
    return np.asarray(X, dtype=float)
