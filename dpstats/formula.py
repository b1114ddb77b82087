"""Formula front end: the only module that imports patsy.

Turns ``formula + DataFrame + declared metadata`` into a :class:`Design`:

1. every variable the formula uses is checked against the schema: numeric
   variables need declared ``bounds``, categorical ones declared ``levels``
   (or ``C(var, levels=[...])`` in the formula); nothing is read from the data;
2. categorical columns become pandas Categoricals with the declared levels, so
   the design's columns depend on public information only;
3. numeric variables are clipped to their bounds (a row-wise map: free);
4. patsy builds y and X; data-dependent ("stateful") transforms such as
   ``center()``, ``standardize()`` or spline knots are refused, because they
   make every row's design value depend on the other rows;
5. each design column gets bounds by interval arithmetic (products of bounded
   factors, contrast-matrix ranges for categorical codings) and is clipped to
   them, which is a no-op except for expressions bounded directly in ``bounds``.

Errors name arguments and columns, never values or rows of the data.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import patsy
from patsy.build import _subterm_column_combinations
from patsy.tokens import normalize_token_spacing

from .design import Design, FormulaVariables
from .intervals import Interval, UnboundedExpression, expression_bounds, product

MISSING_POLICIES = ("raise", "midpoint")


@dataclass(frozen=True)
class FormulaSpec:
    """Public description of a fitted formula, enough to rebuild X for new data."""

    formula: str
    rhs: str
    levels: dict[str, tuple]
    term_names: tuple[str, ...]


# --------------------------------------------------------------------------
# Schema validation (declared metadata only)
# --------------------------------------------------------------------------


def check_bounds(bounds: Mapping[str, Sequence[float]] | None) -> dict[str, Interval]:
    """Validate ``bounds``: a mapping name -> (lo, hi), finite with lo < hi."""
    if bounds is None:
        return {}
    if not isinstance(bounds, Mapping):
        raise TypeError("bounds must be a dict mapping variable names to (lower, upper)")
    checked: dict[str, Interval] = {}
    for name, pair in bounds.items():
        try:
            lo, hi = (float(v) for v in pair)
        except (TypeError, ValueError):
            raise TypeError(f"bounds[{name!r}] must be a pair of numbers (lower, upper)") from None
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise ValueError(f"bounds[{name!r}] must be finite")
        if not lo < hi:
            raise ValueError(f"bounds[{name!r}] must have lower < upper")
        checked[str(name)] = (lo, hi)
    return checked


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


def check_levels(levels: Mapping[str, Sequence] | None) -> dict[str, tuple]:
    """Validate ``levels``: a mapping name -> non-empty sequence of distinct levels."""
    if levels is None:
        return {}
    if not isinstance(levels, Mapping):
        raise TypeError("levels must be a dict mapping variable names to lists of levels")
    checked: dict[str, tuple] = {}
    for name, values in levels.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence | np.ndarray | pd.Index):
            raise TypeError(f"levels[{name!r}] must be a list of levels")
        # numpy scalars (levels from df[col].unique()) become Python ones, for JSON and the summary
        values = tuple(v.item() if isinstance(v, np.generic) else v for v in values)
        if len(values) == 0:
            raise ValueError(f"levels[{name!r}] must not be empty")
        if len(set(values)) != len(values):
            raise ValueError(f"levels[{name!r}] has duplicated levels")
        checked[str(name)] = values
    return checked


def _names_in(code: str) -> set[str]:
    try:
        tree = ast.parse(code.strip(), mode="eval")
    except SyntaxError:
        return set()
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def _levels_in_formula(code: str) -> bool:
    """True when a factor's code declares its levels, as in ``C(x, levels=[...])``."""
    try:
        tree = ast.parse(code.strip(), mode="eval")
    except SyntaxError:
        return False
    return any(isinstance(node, ast.Call) and any(k.arg == "levels" for k in node.keywords) for node in ast.walk(tree))


def _formula_levels(formula: str, columns: pd.Index) -> dict[str, tuple]:
    """Levels declared in the formula as ``C(var, levels=[...])``, by column.

    Only for columns that every factor mentioning them wraps in such a call,
    so that turning the column into a Categorical with those levels changes
    nothing but where an undeclared value is caught (with a message that does
    not show it).
    """
    try:
        desc = patsy.ModelDesc.from_formula(formula)
    except patsy.PatsyError:
        return {}
    found: dict[str, tuple] = {}
    other_uses: set[str] = {n for term in desc.lhs_termlist for f in term.factors for n in _names_in(f.code)}
    for term in desc.rhs_termlist:
        for factor in term.factors:
            try:
                node = ast.parse(factor.code.strip(), mode="eval").body
            except SyntaxError:
                continue
            declared = None
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "C"
                and node.args
                and isinstance(node.args[0], ast.Name)
            ):
                for keyword in node.keywords:
                    if keyword.arg == "levels":
                        try:
                            declared = tuple(ast.literal_eval(keyword.value))
                        except (ValueError, TypeError, SyntaxError):
                            declared = None
            if declared is not None and node.args[0].id in columns:
                found.setdefault(node.args[0].id, declared)
            else:
                other_uses |= _names_in(factor.code)
    return {name: values for name, values in found.items() if name not in other_uses}


def _formula_variables(formula: str, columns: pd.Index) -> tuple[list[str], list[str]]:
    """Data columns used by the formula's response and by its regressors."""
    try:
        desc = patsy.ModelDesc.from_formula(formula)
    except patsy.PatsyError as exc:
        raise ValueError(f"formula could not be parsed: {exc.message}") from None
    if not desc.lhs_termlist:
        raise ValueError("formula must have a response, as in 'y ~ x'")

    def used(terms) -> list[str]:
        names: list[str] = []
        for term in terms:
            for factor in term.factors:
                names += [n for n in _names_in(factor.code) if n in columns and n not in names]
        return names

    return used(desc.lhs_termlist), used(desc.rhs_termlist)


def formula_variables(formula: str, columns: Sequence[str]) -> tuple[list[str], list[str]]:
    """The columns among ``columns`` that the formula's response and regressors use.

    For mechanisms that work on the formula's variables (the perturbed
    histogram fits a formula on a subset of its columns).
    """
    return _formula_variables(formula, pd.Index(list(columns)))


# --------------------------------------------------------------------------
# Data preparation (row-wise maps only)
# --------------------------------------------------------------------------


def _prepare_column(
    name: str,
    column: pd.Series,
    bounds: dict[str, Interval],
    levels: dict[str, tuple],
    missing: str,
) -> pd.Series:
    if name in levels:
        declared = pd.Index(levels[name])
        if column.isna().any():
            raise ValueError(f"column {name!r} has missing values; dpstats cannot fill a categorical")
        # Checked before building the Categorical: pandas warns (and will raise,
        # showing the value) when a value is not among the categories.
        if not column.isin(declared).all():
            raise ValueError(f"column {name!r} has a value that is not among levels[{name!r}]")
        as_cat = pd.Categorical(column, categories=declared)
        if (as_cat.codes < 0).any():
            raise ValueError(f"column {name!r} has a value that is not among levels[{name!r}]")
        return pd.Series(as_cat, index=column.index, name=name)
    if pd.api.types.is_bool_dtype(column.dtype):
        if column.isna().any():
            raise ValueError(f"column {name!r} has missing values")
        return pd.Series(pd.Categorical(column, categories=[False, True]), index=column.index, name=name)
    if not pd.api.types.is_numeric_dtype(column.dtype):
        raise TypeError(f"column {name!r} is not numeric; declare its categories with levels={{{name!r}: [...]}}")
    values = column.to_numpy(dtype=float, na_value=np.nan)
    if np.isnan(values).any():
        if missing == "raise" or name not in bounds:
            raise ValueError(
                f"column {name!r} has missing values; remove them before the call or pass missing='midpoint'"
            )
        values = np.where(np.isnan(values), 0.5 * (bounds[name][0] + bounds[name][1]), values)
    if name in bounds:
        values = np.clip(values, *bounds[name])
    return pd.Series(values, index=column.index, name=name)


def prepare_frame(
    data: pd.DataFrame,
    variables: list[str],
    bounds: dict[str, Interval],
    levels: dict[str, tuple],
    missing: str,
) -> pd.DataFrame:
    """Validate, convert and clip the columns the formula uses.

    Rows are matched by position: the caller's index (which may be filtered,
    shuffled or duplicated) is dropped.
    """
    data = data.reset_index(drop=True)
    return pd.DataFrame(
        {name: _prepare_column(name, data[name], bounds, levels, missing) for name in variables},
        index=pd.RangeIndex(len(data)),
    )


# --------------------------------------------------------------------------
# Column bounds by interval arithmetic
# --------------------------------------------------------------------------


def _factor_interval(code: str, bounds: dict[str, Interval]) -> Interval:
    if code in bounds:
        return bounds[code]
    return expression_bounds(code, bounds)


def column_bounds(design_info, bounds: dict[str, Interval]) -> tuple[np.ndarray, list[str]]:
    """Bounds of every design column, and the terms whose bounds are unknown."""
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


# --------------------------------------------------------------------------
# The adapter
# --------------------------------------------------------------------------


def _check_no_stateful_transforms(*design_infos) -> None:
    for info in design_infos:
        for factor, factor_info in info.factor_infos.items():
            state = factor_info.state
            if isinstance(state, dict) and state.get("transforms"):
                raise ValueError(
                    f"formula term {factor.code!r} uses a data-dependent transform (such as center, "
                    "standardize or spline knots); it would make each row depend on the others. "
                    "Use a fixed transform with declared bounds instead"
                )


def _check_declared_categories(design_info, levels: dict[str, tuple], variables: list[str]) -> None:
    for factor, factor_info in design_info.factor_infos.items():
        if factor_info.type != "categorical":
            continue
        names = _names_in(factor.code) & set(variables)
        declared = names and all(n in levels for n in names)
        if not declared and not _levels_in_formula(factor.code):
            raise ValueError(
                f"categorical term {factor.code!r} needs declared levels: pass levels={{...}} "
                "or write C(var, levels=[...]) in the formula"
            )


def _patsy_message(exc: patsy.PatsyError) -> str:
    """A message about a failed evaluation that cannot show a data value.

    patsy's own messages may quote a value ("observation with value ...") and
    an exception raised inside a user's function may say anything, so only
    a NameError (which names a formula variable) is passed through.
    """
    message = exc.message
    if "observation with value" in message or "unhashable value" in message:
        return "a categorical term has a value that is not among its declared levels"
    if message.startswith("Error evaluating factor: NameError:"):
        return message.split("\n", 1)[0].removeprefix("Error evaluating factor: ")
    return "a formula term raised an error when evaluated on the data"


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


FORMULA_NAMESPACE = {"np": np, "numpy": np, "C": _categorical_passthrough}


def _outside_domain(X, y, x_info, y_info, x_bounds, y_bounds, missing: str):
    """NaN made by a transform of clipped data (``np.log`` of a value <= 0 when
    only the expression was bounded) follows the ``missing`` policy, like a
    missing value in a column: raise naming the terms, or the midpoint of the
    column's bounds (a row-wise map)."""
    bad_x, bad_y = np.isnan(X).any(axis=0), bool(np.isnan(y).any())
    if not (bad_x.any() or bad_y):
        return X, y
    if missing == "raise" or x_bounds is None:
        names = [y_info.column_names[0]] * bad_y + [c for c, b in zip(x_info.column_names, bad_x, strict=True) if b]
        raise ValueError(
            f"formula terms {names} have missing values (a transform left its domain); declare bounds for "
            "their variables, so that the data are clipped into the domain"
            + (", or pass missing='midpoint'" if x_bounds is not None else "")
        )
    X = np.where(np.isnan(X), 0.5 * (x_bounds[:, 0] + x_bounds[:, 1]), X)
    y = np.where(np.isnan(y), 0.5 * (y_bounds[0] + y_bounds[1]), y)
    return X, y


def caller_environment(depth: int) -> patsy.EvalEnvironment:
    """The namespace ``depth`` frames above the caller, for user functions in formulas."""
    return patsy.EvalEnvironment.capture(depth + 1)


def build_design(
    formula: str,
    data: pd.DataFrame,
    bounds: Mapping[str, Sequence[float]] | None,
    levels: Mapping[str, Sequence] | None,
    eval_env: patsy.EvalEnvironment,
    need_bounds: bool = True,
    missing: str = "raise",
) -> tuple[Design, FormulaSpec]:
    """Build the clipped :class:`Design` of ``formula`` on ``data``.

    ``need_bounds=False`` is for mechanisms that need no data bounds (Tukey
    depth); categorical levels are always required.
    """
    if not isinstance(formula, str) or "~" not in formula:
        raise TypeError("formula must be a string such as 'y ~ x'")
    if isinstance(data, Mapping):
        data = pd.DataFrame(data)
    if not isinstance(data, pd.DataFrame):
        raise TypeError("data must be a pandas DataFrame or a dict of columns")
    if missing not in MISSING_POLICIES:
        raise ValueError(f"missing must be one of {MISSING_POLICIES}")
    bounds = _normalized_bounds(check_bounds(bounds))
    levels = check_levels(levels)
    if len(data) < 2:
        raise ValueError("data must have at least 2 rows")

    lhs_vars, rhs_vars = _formula_variables(formula, data.columns)
    variables = lhs_vars + [v for v in rhs_vars if v not in lhs_vars]
    if not lhs_vars:
        response = formula.split("~", 1)[0].strip()
        raise ValueError(f"the formula's response {response!r} uses no column of data")
    # Public levels: declared, written in the formula, or implied by a bool dtype.
    implied = {
        name: (False, True)
        for name in rhs_vars
        if name not in lhs_vars and pd.api.types.is_bool_dtype(data[name].dtype)
    }
    levels = {**implied, **_formula_levels(formula, data.columns), **levels}
    frame = prepare_frame(data, variables, bounds, levels, missing)

    env = eval_env.with_outer_namespace(FORMULA_NAMESPACE)
    try:
        # A transform leaving its domain (log of 0) must neither warn nor raise
        # here: that would tell the caller something about one row. Missing
        # values were dealt with column by column; a NaN made by a transform is
        # handled below, after the (data-independent) bounds checks.
        with np.errstate(all="ignore"):
            y_mat, x_mat = patsy.dmatrices(formula, frame, eval_env=env, NA_action=patsy.NAAction(NA_types=[]))
    except patsy.PatsyError as exc:
        raise ValueError(f"formula could not be evaluated: {_patsy_message(exc)}") from None
    _check_no_stateful_transforms(y_mat.design_info, x_mat.design_info)
    _check_declared_categories(x_mat.design_info, levels, variables)
    if y_mat.shape[1] != 1:
        raise ValueError("the response must be a single numeric column")
    if x_mat.shape[1] == 0:
        raise ValueError("the formula has no regressors (not even an intercept)")

    y_info, x_info = y_mat.design_info, x_mat.design_info
    y = np.asarray(y_mat, dtype=float)[:, 0]
    X = np.asarray(x_mat, dtype=float)
    y_bounds: Interval | None = None
    x_bounds: np.ndarray | None = None
    if need_bounds:
        x_bounds, unknown = column_bounds(x_info, bounds)
        y_col, y_unknown = column_bounds(y_info, bounds)
        unknown = y_unknown + unknown
        if unknown:
            raise ValueError(
                "cannot derive bounds for the formula terms "
                + ", ".join(repr(t) for t in unknown)
                + "; declare bounds=... for their variables (or for the expression itself)"
            )
        degenerate = [x_info.column_names[j] for j in range(X.shape[1]) if x_bounds[j, 0] == x_bounds[j, 1]]
        degenerate = [c for c in degenerate if c != "Intercept"]
        if degenerate:
            raise ValueError(f"design columns {degenerate} have zero-width bounds")
        y_bounds = (float(y_col[0, 0]), float(y_col[0, 1]))
    X, y = _outside_domain(X, y, x_info, y_info, x_bounds, y_bounds, missing)
    if need_bounds:
        X = np.clip(X, x_bounds[:, 0], x_bounds[:, 1])
        y = np.clip(y, *y_bounds)

    intercept = [j for j, name in enumerate(x_info.column_names) if name == "Intercept"]
    design = Design(
        y=y,
        X=X,
        y_name=y_info.column_names[0],
        term_names=tuple(x_info.column_names),
        y_bounds=y_bounds,
        x_bounds=x_bounds,
        intercept_index=intercept[0] if intercept else None,
        variables=FormulaVariables(formula=formula, frame=frame, bounds=bounds, levels=levels, eval_env=eval_env),
    )
    rhs = formula.split("~", 1)[1]
    spec = FormulaSpec(
        formula=formula,
        rhs=rhs,
        levels={k: v for k, v in levels.items() if k in rhs_vars},
        term_names=tuple(x_info.column_names),
    )
    return design, spec


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
    env = patsy.EvalEnvironment([FORMULA_NAMESPACE])
    try:
        X = patsy.dmatrix(spec.rhs, frame, eval_env=env, NA_action="raise")
    except patsy.PatsyError as exc:
        raise ValueError(f"newdata could not be evaluated: {exc.message}") from None
    if tuple(X.design_info.column_names) != spec.term_names:
        raise ValueError("newdata does not produce the fitted model's design columns")
    return np.asarray(X, dtype=float)
