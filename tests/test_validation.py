"""Schema validation: bad public inputs raise ValueError/TypeError naming the
argument or column; values of the data never decide whether a call raises
(bad cells get the row-wise treatment of dpstats/frontend/cells.py), except under
missing="raise", the curator's opt-in."""

import math
from functools import partial

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats.privacy.noise import make_rng

# The mechanism under test, whatever method="auto" picks in later versions.
dp_ols = partial(dpstats.dp_ols, method="noisystats")

N = 40
BOUNDS = {"x": (0.0, 10.0), "y": (-5.0, 25.0)}
LEVELS = {"g": ["a", "b"]}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    x = rng.uniform(0, 10, N)
    return pd.DataFrame({"x": x, "y": 1 + 2 * x + rng.normal(0, 1, N), "g": rng.choice(["a", "b"], N)})


def fit(frame, formula="y ~ x", **kw):
    kw = {"eps": 1.0, "bounds": BOUNDS, "random_state": 0, **kw}
    return dp_ols(formula, frame, **kw)


# --------------------------------------------------------------------------
# Columns and formula
# --------------------------------------------------------------------------


def test_missing_regressor_column_is_named(data):
    with pytest.raises(ValueError, match="nope"):
        fit(data, "y ~ x + nope")


def test_missing_response_column_is_named(data):
    with pytest.raises(ValueError, match="'nope'"):
        fit(data, "nope ~ x")


def test_non_numeric_column_without_levels_is_named(data):
    with pytest.raises(ValueError, match=r"'g'.*levels="):
        fit(data, "y ~ x + g")


@pytest.mark.parametrize(
    ("formula", "error"), [(3, TypeError), ("y + x", TypeError), ("~ x", ValueError), ("y ~ x +", ValueError)]
)
def test_bad_formula(data, formula, error):
    with pytest.raises(error, match="formula"):
        fit(data, formula)


def test_data_must_be_a_frame_or_dict(data):
    with pytest.raises(TypeError, match="data"):
        fit(data.to_numpy())
    from_dict = fit({"x": data.x.to_list(), "y": data.y.to_list()})
    np.testing.assert_array_equal(from_dict.params.to_numpy(), fit(data).params.to_numpy())


@pytest.mark.parametrize("rows", [0, 1])
def test_fewer_than_two_rows(data, rows):
    with pytest.raises(ValueError, match="at least 2 rows"):
        fit(data.iloc[:rows])


def test_empty_frame_without_columns():
    with pytest.raises(ValueError, match="at least 2 rows"):
        fit(pd.DataFrame())


# --------------------------------------------------------------------------
# Bounds
# --------------------------------------------------------------------------


def test_missing_bounds_name_the_term(data):
    with pytest.raises(ValueError, match=r"'x'"):
        fit(data, bounds={"y": BOUNDS["y"]})


@pytest.mark.parametrize(
    ("pair", "error", "match"),
    [
        ((math.nan, 10.0), ValueError, "finite"),
        ((0.0, math.inf), ValueError, "finite"),
        ((-math.inf, 1.0), ValueError, "finite"),
        ((10.0, 0.0), ValueError, "lower < upper"),
        ((3.0, 3.0), ValueError, "lower < upper"),
        ((0.0,), TypeError, "pair"),
        ((0.0, 1.0, 2.0), TypeError, "pair"),
        (5.0, TypeError, "pair"),
        (("a", "b"), TypeError, "pair"),
    ],
)
def test_invalid_bounds_name_the_variable(data, pair, error, match):
    with pytest.raises(error, match=rf"bounds\['x'\].*{match}"):
        fit(data, bounds={"x": pair, "y": BOUNDS["y"]})


def test_bounds_must_be_a_mapping(data):
    with pytest.raises(TypeError, match="bounds"):
        fit(data, bounds=[(0, 10), (-5, 25)])


# --------------------------------------------------------------------------
# Privacy parameters
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("eps", "error"),
    [
        (0, ValueError),
        (-1.0, ValueError),
        (math.nan, ValueError),
        (math.inf, ValueError),
        (True, TypeError),
        (np.True_, TypeError),
        ("1", TypeError),
        (None, ValueError),  # no budget at all: pass eps (or rho for a zCDP mechanism)
        ([1.0], TypeError),
    ],
)
def test_invalid_eps(data, eps, error):
    with pytest.raises(error, match="eps"):
        fit(data, eps=eps)


def test_numpy_scalar_eps_is_accepted(data):
    expected = fit(data, eps=2.0).params.to_numpy()
    for eps in (np.float64(2.0), np.float32(2.0), np.int64(2)):
        np.testing.assert_array_equal(fit(data, eps=eps).params.to_numpy(), expected)


@pytest.mark.parametrize(
    ("delta", "error"),
    [
        (-0.1, ValueError),
        (1.0, ValueError),
        (2.0, ValueError),
        (math.nan, ValueError),
        ("0", TypeError),
        (True, TypeError),
    ],
)
def test_invalid_delta(data, delta, error):
    with pytest.raises(error, match="delta"):
        fit(data, delta=delta)


def test_positive_delta_for_a_pure_method(data):
    with pytest.raises(ValueError, match=r"delta must be 0"):
        fit(data, method="noisystats", delta=1e-6)


def test_unknown_method_and_option(data):
    with pytest.raises(ValueError, match=r"unknown method 'nope'.*noisystats"):
        fit(data, method="nope")
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['bogus'\]"):
        fit(data, bogus=1)


@pytest.mark.parametrize(
    ("random_state", "error"),
    [("abc", TypeError), (1.5, TypeError), (True, TypeError), (np.random.RandomState(0), TypeError), (-1, ValueError)],
)
def test_invalid_random_state(data, random_state, error):
    with pytest.raises(error, match="random_state"):
        fit(data, random_state=random_state)


def test_random_state_int_and_generator_agree(data):
    by_int = fit(data, random_state=123).params.to_numpy()
    by_gen = fit(data, random_state=make_rng(123)).params.to_numpy()
    np.testing.assert_array_equal(by_int, by_gen)
    assert not np.array_equal(by_int, fit(data, random_state=124).params.to_numpy())


# --------------------------------------------------------------------------
# Levels
# --------------------------------------------------------------------------


def test_undeclared_level_becomes_the_first_level_or_raises_for_the_curator(data):
    frame = data.assign(g=data.g.where(data.index != 3, "c"))
    by_hand = data.assign(g=data.g.where(data.index != 3, "a"))
    np.testing.assert_array_equal(
        fit(frame, "y ~ x + g", levels=LEVELS).params.to_numpy(),
        fit(by_hand, "y ~ x + g", levels=LEVELS).params.to_numpy(),
    )
    with pytest.raises(ValueError, match=r"column 'g'.*levels.*curator"):
        fit(frame, "y ~ x + g", levels=LEVELS, missing="raise")


@pytest.mark.parametrize(
    ("levels", "error"), [("ab", TypeError), ([], ValueError), (["a", "a", "b"], ValueError), (3, TypeError)]
)
def test_invalid_levels(data, levels, error):
    with pytest.raises(error, match=r"levels\['g'\]"):
        fit(data, "y ~ x + g", levels={"g": levels})


def test_levels_must_be_a_mapping(data):
    with pytest.raises(TypeError, match="levels"):
        fit(data, "y ~ x + g", levels=["a", "b"])


# --------------------------------------------------------------------------
# Missing and infinite values
# --------------------------------------------------------------------------


@pytest.mark.parametrize("column", ["x", "y"])
def test_nan_raises_naming_the_column_for_the_curator_only(data, column):
    frame = data.copy()
    frame.loc[[2, 9], column] = np.nan
    with pytest.raises(ValueError, match=rf"column '{column}' has a missing.*never for publication"):
        fit(frame, missing="raise")


def test_nan_in_a_categorical_column_becomes_the_first_level(data):
    frame = data.assign(g=data.g.where(data.index != 4, None))
    by_hand = data.assign(g=data.g.where(data.index != 4, "a"))
    np.testing.assert_array_equal(
        fit(frame, "y ~ x + g", levels=LEVELS).params.to_numpy(),
        fit(by_hand, "y ~ x + g", levels=LEVELS).params.to_numpy(),
    )
    with pytest.raises(ValueError, match="column 'g' has a missing value"):
        fit(frame, "y ~ x + g", levels=LEVELS, missing="raise")


@pytest.mark.parametrize("bad", [np.nan, None, "n/a", "", [1, 2]])
def test_a_bad_numeric_cell_equals_the_midpoint_filled_by_hand(data, bad):
    frame = data.astype({"x": object, "y": object})
    frame.loc[[2, 9], "x"] = pd.Series([bad, bad], index=[2, 9], dtype=object)
    frame.loc[[5], "y"] = pd.Series([bad], index=[5], dtype=object)
    by_hand = data.copy()
    by_hand.loc[[2, 9], "x"] = 5.0
    by_hand.loc[[5], "y"] = 10.0
    np.testing.assert_array_equal(
        fit(frame, random_state=4).params.to_numpy(), fit(by_hand, random_state=4).params.to_numpy()
    )


def test_numbers_written_as_text_read_as_the_numbers(data):
    """A CSV column with one text cell arrives as text: its other cells keep their values."""
    as_text = data.assign(x=data.x.map(repr).astype(object))
    np.testing.assert_array_equal(fit(as_text).params.to_numpy(), fit(data).params.to_numpy())


def test_unknown_missing_policy(data):
    with pytest.raises(ValueError, match="missing"):
        fit(data, missing="drop")


def test_infinite_values_are_clipped_not_an_error(data):
    frame, at_bounds = data.copy(), data.copy()
    frame.loc[0, "x"], frame.loc[1, "x"], frame.loc[2, "y"] = np.inf, -np.inf, np.inf
    at_bounds.loc[0, "x"], at_bounds.loc[1, "x"], at_bounds.loc[2, "y"] = 10.0, 0.0, 25.0
    res = fit(frame, eps=5.0, random_state=8)
    assert np.all(np.isfinite(res.params))
    np.testing.assert_array_equal(res.params.to_numpy(), fit(at_bounds, eps=5.0, random_state=8).params.to_numpy())


def test_nullable_and_integer_columns(data):
    frame = data.assign(x=data.x.round().astype("Int64"))
    plain = data.assign(x=data.x.round())
    np.testing.assert_array_equal(fit(frame).params.to_numpy(), fit(plain).params.to_numpy())
    frame.loc[3, "x"] = pd.NA
    assert np.isfinite(fit(frame).params).all()
    with pytest.raises(ValueError, match="column 'x' has a missing"):
        fit(frame, missing="raise")
