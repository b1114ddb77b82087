"""Fuzz battery, the formula front end: random formulas from a grammar, on neighbouring data.

(i)  A formula with a cross-row token anywhere (``x.mean()``, ``np.roll(x, 1)``,
     ``x.rank()``, ``np.sum(x)``, ``center(x)``, a name from no namespace, a
     subscript, a lambda) is refused on both neighbours with the same type and
     message, naming the token (or, for syntax patsy cannot parse, saying so),
     before any data are read.
(ii) A row-wise formula (columns, literals, + - * / **, comparisons and the
     row-wise functions, nested) has the same outcome on neighbouring data with
     a corrupted row: both fit (same shape, no warning) or both raise the same
     error (a public one, such as a transform undefined on the declared box).
(iii) A returned result is finite or says it failed; (iv) no sentinel leaks.

Derandomized (a fixed sequence of examples: false-failure rate 0); 100
examples each. The refusals read no data, so their neighbours are small
(n <= 4); the fits draw 100 bootstrap replicates (conftest.FEW_REPLICATES,
the same code paths as the default 1,000).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from fuzz_support import BOUNDS, LEVELS, assert_finite_or_failed, assert_no_sentinel, neighbour_pair, outcome
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpstats

SETTINGS = settings(
    derandomize=True, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=100
)
NUMERIC = ("x", "z", "w")
FUNCTIONS = ("np.exp", "np.abs", "np.sin", "np.cos", "np.tanh", "np.arctan", "np.square", "np.expm1", "log1p")
POSITIVE = ("np.log", "np.sqrt", "np.log10", "np.log2")
CROSS_ROW = (
    "{v}.mean()",
    "{v}.max()",
    "np.roll({v}, 1)",
    "{v}.rank()",
    "{v}.cumsum()",
    "np.sum({v})",
    "{v}.shift(1)",
    "center({v})",
    "standardize({v})",
    "np.mean({v})",
    "len({v})",
    "{v}[0]",
    "sorted({v})",
    "(lambda t: t)({v})",
    "my_function({v})",
    "{v}.values",
)

literal = st.sampled_from(["1", "2", "0.5", "3"])
variable = st.sampled_from(NUMERIC)


def expression(depth: int = 2) -> st.SearchStrategy[str]:
    """A row-wise expression over x, z, w (w is bounded away from 0, so log and sqrt of w are defined)."""
    leaves = st.one_of(variable, literal)
    if depth == 0:
        return leaves
    inner = expression(depth - 1)
    return st.one_of(
        leaves,
        st.builds(lambda a, op, b: f"({a} {op} {b})", inner, st.sampled_from(["+", "-", "*"]), inner),
        st.builds(lambda a, k: f"({a}) ** {k}", inner, st.sampled_from(["2", "3"])),
        st.builds(lambda f, a: f"{f}({a})", st.sampled_from(FUNCTIONS), inner.filter(lambda e: len(e) < 40)),
        st.builds(lambda f: f"{f}(w)", st.sampled_from(POSITIVE)),
        st.builds(lambda a: f"({a}) / w", inner),
    )


@st.composite
def rowwise_formula(draw) -> str:
    terms = draw(st.lists(expression(), min_size=1, max_size=3))
    rhs = " + ".join(f"I({t})" for t in terms)
    if draw(st.booleans()):
        rhs += " + C(g)"
    if draw(st.booleans()):
        rhs += f" + I({draw(variable)} > 0.5)"
    return f"y ~ {rhs}"


@st.composite
def cross_row_formula(draw) -> tuple[str, str]:
    token = draw(st.sampled_from(CROSS_ROW)).format(v=draw(variable))
    rowwise = draw(expression(1))
    where = draw(st.sampled_from(["I({t} - {r})", "I({r} * {t})", "{t}", "C(g) + I({t})"]))
    return f"y ~ x + {where.format(t=token, r=rowwise)}", token


pytestmark = pytest.mark.usefixtures("few_replicates_in_module")


def _fit(formula: str, frame):
    return lambda: dpstats.dp_ols(formula, frame, eps=1.0, bounds=BOUNDS, levels=LEVELS, method="noisystats")


@pytest.mark.slow
@SETTINGS
@given(case=cross_row_formula(), pair=neighbour_pair(max_n=4))
def test_cross_row_formulas_are_refused_on_both_neighbours(case: tuple[str, str], pair) -> None:
    formula, token = case
    first, _ = outcome(_fit(formula, pair[0]))
    second, _ = outcome(_fit(formula, pair[1]))
    assert first.raised == second.raised and first.message == second.message, (formula, first.message)
    if first.raised == "ValueError":  # patsy's own parser refused the syntax, before any data were read
        assert "could not be parsed" in first.message, (formula, first.message)
    else:
        assert first.raised == "FormulaRefused" and token in first.message, (formula, first.message)
    assert first.warnings == second.warnings == ()
    assert_no_sentinel(first)


@pytest.mark.slow
@SETTINGS
@given(formula=rowwise_formula(), pair=neighbour_pair(max_n=20))
def test_rowwise_formulas_have_the_same_outcome_on_neighbours(formula: str, pair) -> None:
    first, res = outcome(_fit(formula, pair[0]))
    second, res_other = outcome(_fit(formula, pair[1]))
    assert first.observable() == second.observable(), (formula, first.observable(), second.observable())
    assert first.raised != "FormulaRefused", (formula, first.message)
    assert first.warnings == ()
    for result, fitted in ((first, res), (second, res_other)):
        assert_no_sentinel(result)
        assert_finite_or_failed(fitted)


@pytest.mark.parametrize(
    "formula", ["y ~ np.log(w)", "y ~ I(x**2)", "y ~ I(2*x + 1)", "y ~ np.sqrt(w) + C(g)", "y ~ I(x > 0.5) + z"]
)
def test_rowwise_transforms_still_fit(formula: str) -> None:
    """Deterministic: the whitelist keeps the transforms economists write."""
    rng = np.random.default_rng(5)
    data = pd.DataFrame(
        {
            "x": rng.uniform(0, 1, 200),
            "z": rng.uniform(-1, 1, 200),
            "w": rng.uniform(1, 4, 200),
            "g": rng.choice(LEVELS["g"], 200),
        }
    )
    data["y"] = data.x + rng.normal(0, 0.1, 200)
    res = dpstats.dp_ols(formula, data, eps=1e9, bounds=BOUNDS, levels=LEVELS, method="noisystats", random_state=0)
    assert not res.failed and np.isfinite(res.params).all()
