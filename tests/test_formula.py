"""The formula front end: derived column bounds, clipping, refusals (dpstats/frontend/formula.py)."""

import warnings
from functools import partial

import numpy as np
import pandas as pd
import patsy
import pytest

import dpstats
from dpstats.frontend.formula import build_design

# The mechanism under test, whatever method="auto" picks in later versions.
dp_ols = partial(dpstats.dp_ols, method="noisystats")

N = 60
BOUNDS = {"x": (1.0, 3.0), "z": (-2.0, 5.0), "w": (0.5, 4.0), "y": (-10.0, 30.0)}
LEVELS = {"g": ["a", "b", "c"], "flag": [False, True]}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(20240601)
    frame = pd.DataFrame(
        {
            "x": rng.uniform(1, 3, N),
            "z": rng.uniform(-2, 5, N),
            "w": rng.uniform(0.5, 4, N),
            "g": rng.choice(["a", "b", "c"], N),
            "flag": rng.random(N) < 0.4,
        }
    )
    frame["y"] = 1 + 2 * frame.x - frame.z + 3 * frame.flag + rng.normal(0, 0.5, N)
    assert frame.y.between(*BOUNDS["y"]).all()
    return frame


def _design(formula, frame, bounds=BOUNDS, levels=LEVELS, **kw):
    return build_design(formula, frame, bounds, levels, **kw)


# --------------------------------------------------------------------------
# Derived bounds
# --------------------------------------------------------------------------

FORMULAS = [
    "y ~ x + z",
    "y ~ x * z",
    "y ~ x:z - 1",
    "y ~ C(g) + x",
    "y ~ C(g, Sum) * x",
    "y ~ C(g):z",
    "y ~ C(g) * z - 1",
    "y ~ I(x * z + 1) + np.log(w) + I(z ** 2)",
    "y ~ flag + x:flag",
]


@pytest.mark.parametrize("formula", FORMULAS)
def test_derived_bounds_contain_the_actual_columns(data, formula):
    """Data inside the declared bounds: the derived column bounds must contain
    patsy's own design matrix, so the final clip to them changes nothing."""
    design, _ = _design(formula, data)
    raw = np.asarray(
        patsy.dmatrix(formula.split("~")[1], data.assign(g=pd.Categorical(data.g, categories=["a", "b", "c"])))
    )
    assert design.X.shape == raw.shape
    lo, hi = design.x_bounds[:, 0], design.x_bounds[:, 1]
    assert np.all(lo <= raw.min(axis=0) + 1e-12) and np.all(raw.max(axis=0) <= hi + 1e-12)
    np.testing.assert_allclose(design.X, raw, rtol=0, atol=1e-12)
    assert np.all(np.isfinite(design.x_bounds))


def test_bounds_of_products_dummies_and_sum_contrasts(data):
    design, _ = _design("y ~ x * z + C(g, Sum) + flag", data)
    named = dict(zip(design.term_names, map(tuple, design.x_bounds), strict=True))
    assert named["Intercept"] == (1.0, 1.0)
    assert named["x:z"] == (-6.0, 15.0)  # interval product of (1, 3) and (-2, 5)
    assert named["C(g, Sum)[S.a]"] == (-1.0, 1.0)
    assert named["C(g, Sum)[S.b]"] == (-1.0, 1.0)
    assert named["flag[T.True]"] == (0.0, 1.0)
    assert design.y_bounds == BOUNDS["y"]

    treatment, _ = _design("y ~ C(g) * x", data)
    named = dict(zip(treatment.term_names, map(tuple, treatment.x_bounds), strict=True))
    assert named["C(g)[T.b]"] == (0.0, 1.0)
    assert named["C(g)[T.c]:x"] == (0.0, 3.0)


def test_expression_bounds_can_be_declared_directly(data):
    """A bound declared for an expression is used for its column, whatever the spacing."""
    frame = data.assign(q=data.x * 7)
    bounds = {"y": BOUNDS["y"], "I(q**2)": (0.0, 500.0)}  # patsy spells the factor "I(q ** 2)"
    design, _ = _design("y ~ I(q**2)", frame, bounds=bounds)
    assert tuple(design.x_bounds[1]) == (0.0, 500.0)
    # and it clips: with a tighter declared range the column is cut at the bound
    design, _ = _design("y ~ I(q ** 2)", frame, bounds={"y": BOUNDS["y"], "I(q ** 2)": (0.0, 100.0)})
    assert design.X[:, 1].max() == 100.0
    assert design.X[:, 1].min() == pytest.approx((frame.q**2).min())


# --------------------------------------------------------------------------
# Clipping
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "outside", "bound"), [("x", 50.0, 3.0), ("x", -7.0, 1.0), ("y", 1e6, 30.0), ("y", -np.inf, -10.0)]
)
def test_a_point_outside_the_bounds_counts_as_the_point_on_the_bound(data, column, outside, bound):
    far, near = data.copy(), data.copy()
    far.loc[5, column] = outside
    near.loc[5, column] = bound
    fit_far = dp_ols("y ~ x + z", far, eps=2.0, bounds=BOUNDS, random_state=11)
    fit_near = dp_ols("y ~ x + z", near, eps=2.0, bounds=BOUNDS, random_state=11)
    fit_orig = dp_ols("y ~ x + z", data, eps=2.0, bounds=BOUNDS, random_state=11)
    np.testing.assert_array_equal(fit_far.params.to_numpy(), fit_near.params.to_numpy())
    assert not np.array_equal(fit_far.params.to_numpy(), fit_orig.params.to_numpy())


def test_clipping_applies_to_design_columns_and_response(data):
    frame = data.copy()
    frame.loc[0, "x"], frame.loc[1, "z"], frame.loc[2, "y"] = 100.0, -100.0, 1e9
    design, _ = _design("y ~ x + z", frame)
    assert design.X[0, 1] == 3.0
    assert design.X[1, 2] == -2.0
    assert design.y[2] == 30.0


# --------------------------------------------------------------------------
# Refusals
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("formula", "bounds", "needing"),
    [
        ("y ~ x + q", BOUNDS, "'q'"),
        ("y ~ x + x:q", BOUNDS, "'x:q'"),
        ("y ~ np.sin(q)", BOUNDS, "'np.sin(q)'"),
        ("y ~ x", {"x": (1.0, 3.0)}, "'y'"),
    ],
)
def test_underivable_bounds_name_the_terms(data, formula, bounds, needing):
    frame = data.assign(q=data.x)
    with pytest.raises(ValueError, match="cannot derive bounds") as info:
        dp_ols(formula, frame, eps=1.0, bounds=bounds, levels=LEVELS, random_state=0)
    assert needing in str(info.value)


@pytest.mark.parametrize(
    ("formula", "term", "bound"),
    [
        ("y ~ np.log(z)", "'np.log(z)'", "[-2, 5]"),  # z's bounds include values <= 0
        ("np.log(y) ~ x", "'np.log(y)'", "[-10, 30]"),
        ("y ~ I(x * np.log(z + 2))", "np.log(z + 2)", "[0, 7]"),
        ("y ~ I(x / (z + 2))", "'I(x / (z + 2))'", "[0, 7]"),
    ],
)
def test_a_transform_undefined_on_the_declared_box_is_refused_naming_the_bound(data, formula, term, bound):
    """Decided by interval arithmetic before the data are read: the same error on any data."""
    for frame in (data, data.assign(z=1.0, y=1.0)):
        with pytest.raises(ValueError, match="undefined on part of the declared bounds") as info:
            dp_ols(formula, frame, eps=1.0, bounds=BOUNDS, levels=LEVELS, random_state=0)
        assert term in str(info.value) and bound in str(info.value)


@pytest.mark.parametrize("transform", ["center(x)", "standardize(x)", "scale(x)", "bs(x, df=3)"])
def test_stateful_transforms_are_refused(data, transform):
    with pytest.raises(ValueError, match="not allowed") as info:
        dp_ols(f"y ~ {transform}", data, eps=1.0, bounds=BOUNDS, random_state=0)
    assert transform in str(info.value)


def test_string_column_without_levels_is_refused_naming_it(data):
    """Without declared levels a column is numeric, whatever its dtype: it needs bounds."""
    for frame in (data, data.assign(g=data.g.astype("category"))):
        with pytest.raises(ValueError, match=r"'g'.*levels="):
            dp_ols("y ~ x + g", frame, eps=1.0, bounds=BOUNDS, random_state=0)


def test_numeric_categorical_without_levels_is_refused_naming_the_term(data):
    frame = data.assign(k=np.resize([1.0, 2.0, 3.0], N))
    with pytest.raises(ValueError, match=r"'C\(k\)'"):
        dp_ols("y ~ x + C(k)", frame, eps=1.0, bounds=BOUNDS, random_state=0)
    # declaring them (with ints for float data) works
    res = dp_ols("y ~ x + C(k)", frame, eps=1.0, bounds=BOUNDS, levels={"k": [1, 2, 3]}, random_state=0)
    assert res.term_names == ["Intercept", "C(k)[T.2]", "C(k)[T.3]", "x"]


def test_levels_written_in_the_formula_equal_declared_levels(data):
    in_formula = dp_ols("y ~ x + C(g, levels=['a', 'b', 'c'])", data, eps=1.0, bounds=BOUNDS, random_state=5)
    declared = dp_ols("y ~ x + C(g)", data, eps=1.0, bounds=BOUNDS, levels=LEVELS, random_state=5)
    np.testing.assert_array_equal(in_formula.params.to_numpy(), declared.params.to_numpy())
    reordered = dp_ols("y ~ x + C(g, levels=['c', 'b', 'a'])", data, eps=1e9, bounds=BOUNDS, random_state=5)
    assert reordered.term_names[1:3] == ["C(g, levels=['c', 'b', 'a'])[T.b]", "C(g, levels=['c', 'b', 'a'])[T.a]"]


def test_a_bool_column_works_and_equals_the_factor_of_its_01_coding(data):
    """A bool column is a two-level factor (a one-hot block): the same fit as C(f01) with levels [0, 1]."""
    as_bool = dp_ols("y ~ x + flag", data, eps=50.0, bounds=BOUNDS, levels=LEVELS, random_state=3)
    as_int = dp_ols(
        "y ~ C(f01) + x",
        data.assign(f01=data.flag.astype(int)),
        eps=50.0,
        bounds=BOUNDS,
        levels={"f01": [0, 1]},
        random_state=3,
    )
    assert as_bool.term_names == ["Intercept", "flag[T.True]", "x"]
    np.testing.assert_allclose(as_bool.params.to_numpy(), as_int.params.to_numpy(), rtol=1e-12)
    # prediction on new data that holds only one of the two values
    pred = as_bool.predict(pd.DataFrame({"x": [2.0, 2.5], "flag": [True, True]}))
    assert pred.shape == (2,) and np.all(np.isfinite(pred))


def test_the_data_index_does_not_matter(data):
    """Filtered, shuffled or duplicated index labels: rows are matched by position."""
    base = dp_ols("y ~ x + C(g)", data, eps=1.0, bounds=BOUNDS, levels=LEVELS, random_state=9)
    for index in (np.arange(N) + 1000, np.random.default_rng(0).permutation(N), np.zeros(N, dtype=int)):
        relabelled = data.set_axis(index, axis=0)
        res = dp_ols("y ~ x + C(g)", relabelled, eps=1.0, bounds=BOUNDS, levels=LEVELS, random_state=9)
        np.testing.assert_array_equal(res.params.to_numpy(), base.params.to_numpy())
    subset = data[data.x > 1.5]
    np.testing.assert_array_equal(
        dp_ols("y ~ x", subset, eps=1.0, bounds=BOUNDS, random_state=1).params.to_numpy(),
        dp_ols("y ~ x", subset.reset_index(drop=True), eps=1.0, bounds=BOUNDS, random_state=1).params.to_numpy(),
    )


def test_a_formula_without_columns_is_refused(data):
    with pytest.raises(ValueError, match="no regressors"):
        dp_ols("y ~ 0", data, eps=1.0, bounds=BOUNDS, random_state=0)


def test_a_transform_leaving_its_domain_follows_the_missing_policy(data):
    """Only the expression is bounded, so w is not clipped and log(w) of a
    value <= 0 is NaN: no warning and, by default, the column's midpoint
    there; -inf is clipped to the lower bound. missing='raise' names the term."""
    bounds = {"y": BOUNDS["y"], "np.log(w)": (-1.0, 1.5)}
    frame = data.copy()
    frame.loc[3, "w"] = -4.0
    frame.loc[4, "w"] = 0.0  # log(0) = -inf: clipped to the lower bound, silently
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"'np\.log\(w\)'.*curator"):
            dp_ols("y ~ np.log(w)", frame, eps=1.0, bounds=bounds, random_state=0, missing="raise")
        design, _ = _design("y ~ np.log(w)", frame, bounds=bounds)
    assert design.X[3, 1] == 0.25 and design.X[4, 1] == -1.0
