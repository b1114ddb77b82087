"""Interval arithmetic behind derived design-column bounds (dpstats/design/bounds.py).

Every rule must be an enclosure: for any point inside the declared bounds the
expression's value lies inside the derived interval. Checked on a dense grid
that includes the corners of the box (where the extremes of these expressions
are attained), so a rule that is too narrow fails.
"""

import itertools

import numpy as np
import pytest

from dpstats.design.bounds import UnboundedExpression, expression_bounds, product

BOUNDS = {"x": (1.0, 3.0), "z": (-2.0, 5.0), "w": (0.5, 4.0), "u": (0.0, 1.0)}


def _grid(names, points=9):
    axes = [np.linspace(*BOUNDS[name], points) for name in names]
    mesh = np.meshgrid(*axes, indexing="ij")
    return {name: m.ravel() for name, m in zip(names, mesh, strict=True)}


ENCLOSURES = [
    ("x", lambda v: v["x"]),
    ("I(x * z)", lambda v: v["x"] * v["z"]),
    ("I(x ** 2)", lambda v: v["x"] ** 2),
    ("I(z ** 2)", lambda v: v["z"] ** 2),
    ("I(z ** 3)", lambda v: v["z"] ** 3),
    ("I(x - z)", lambda v: v["x"] - v["z"]),
    ("I(-x + 2 * z)", lambda v: -v["x"] + 2 * v["z"]),
    ("I(x / w)", lambda v: v["x"] / v["w"]),
    ("I((x - z) ** 2)", lambda v: (v["x"] - v["z"]) ** 2),
    ("np.log(w)", lambda v: np.log(v["w"])),
    ("numpy.log10(w)", lambda v: np.log10(v["w"])),
    ("np.log2(w)", lambda v: np.log2(v["w"])),
    ("np.log1p(u)", lambda v: np.log1p(v["u"])),
    ("np.sqrt(u)", lambda v: np.sqrt(v["u"])),
    ("np.exp(z)", lambda v: np.exp(v["z"])),
    ("abs(z)", lambda v: np.abs(v["z"])),
    ("np.abs(x)", lambda v: np.abs(v["x"])),
    ("I(x * z + 1)", lambda v: v["x"] * v["z"] + 1),
    ("I(np.log(w) * z)", lambda v: np.log(v["w"]) * v["z"]),
]


@pytest.mark.parametrize(("code", "fn"), ENCLOSURES, ids=[c for c, _ in ENCLOSURES])
def test_expression_bounds_enclose_every_value(code, fn):
    lo, hi = expression_bounds(code, BOUNDS)
    names = [n for n in BOUNDS if n in code.replace("np.", "").replace("numpy.", "")]
    values = fn(_grid(names))
    assert lo <= values.min() + 1e-12
    assert values.max() <= hi + 1e-12


def test_product_is_exact_on_corners():
    for a, b in itertools.product([(1.0, 3.0), (-2.0, 5.0), (-4.0, -1.0)], repeat=2):
        corners = [x * y for x in a for y in b]
        assert product(a, b) == (min(corners), max(corners))


def test_simple_rules_are_tight():
    # Tightness (not just enclosure) for the rules whose extremes are at corners.
    assert expression_bounds("I(x * z)", BOUNDS) == (-6.0, 15.0)
    assert expression_bounds("I(z ** 2)", BOUNDS) == (0.0, 25.0)
    assert expression_bounds("I(x - z)", BOUNDS) == (-4.0, 5.0)
    assert expression_bounds("abs(z)", BOUNDS) == (0.0, 5.0)
    assert expression_bounds("np.log(w)", BOUNDS) == pytest.approx((np.log(0.5), np.log(4.0)))


@pytest.mark.parametrize(
    "code",
    [
        "np.log(z)",  # z may be <= 0
        "np.log(u)",  # the lower bound 0 is outside log's domain
        "np.sqrt(z)",
        "I(x / z)",  # divisor interval contains 0
        "I(x ** 0.5)",  # only non-negative integer powers
        "I(x ** z)",
        "np.tan(x)",  # not a row-wise function of the formula language
        "I(x % 2)",  # unsupported operator
        "q",  # no bounds declared
        "I(x + q)",
        "np.exp(I(x * 1000))",  # overflows: must not escape as OverflowError
        "I(x ** 100000)",
    ],
)
def test_unbounded_expressions_raise_unbounded(code):
    with pytest.raises(UnboundedExpression):
        expression_bounds(code, BOUNDS)
