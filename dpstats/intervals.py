"""Interval arithmetic for formula expressions.

A design column's bounds are public metadata derived from the declared bounds
of the variables it is computed from, never from the data. This module
evaluates a patsy factor's code (``x``, ``I(x**2)``, ``np.log(income)``,
``I(x * z + 1)``) over intervals. Every rule is a guaranteed enclosure, so a
clipped row's column value always lies inside the derived interval.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping

Interval = tuple[float, float]


class UnboundedExpression(ValueError):
    """Raised when an expression's range cannot be derived from the bounds."""


def product(a: Interval, b: Interval) -> Interval:
    """Enclosure of ``{x * y : x in a, y in b}``."""
    corners = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    return (min(corners), max(corners))


def power(a: Interval, k: int) -> Interval:
    """Enclosure of ``{x**k : x in a}`` for an integer ``k >= 0`` (exact)."""
    lo, hi = a
    if k % 2 == 1:
        return (lo**k, hi**k)
    if lo >= 0:
        return (lo**k, hi**k)
    if hi <= 0:
        return (hi**k, lo**k)
    return (0.0, max(lo**k, hi**k))


def _monotone(fn, a: Interval, domain_lo: float, strict: bool) -> Interval:
    lo, hi = a
    if lo < domain_lo or (strict and lo == domain_lo):
        raise UnboundedExpression("argument may leave the function's domain")
    return (fn(lo), fn(hi))


_FUNCTIONS = {
    "log": lambda a: _monotone(math.log, a, 0.0, strict=True),
    "log2": lambda a: _monotone(math.log2, a, 0.0, strict=True),
    "log10": lambda a: _monotone(math.log10, a, 0.0, strict=True),
    "log1p": lambda a: _monotone(math.log1p, a, -1.0, strict=True),
    "sqrt": lambda a: _monotone(math.sqrt, a, 0.0, strict=False),
    "exp": lambda a: (math.exp(a[0]), math.exp(a[1])),
    "abs": lambda a: (0.0 if a[0] <= 0 <= a[1] else min(abs(a[0]), abs(a[1])), max(abs(a[0]), abs(a[1]))),
    "I": lambda a: a,
}


def _function_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("np", "numpy"):
        return node.attr
    return None


def _eval(node: ast.expr, bounds: Mapping[str, Interval]) -> Interval:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return (float(node.value), float(node.value))
    if isinstance(node, ast.Name):
        if node.id in bounds:
            return bounds[node.id]
        raise UnboundedExpression(f"no bounds declared for {node.id}")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        lo, hi = _eval(node.operand, bounds)
        return (-hi, -lo) if isinstance(node.op, ast.USub) else (lo, hi)
    if isinstance(node, ast.BinOp):
        return _binop(node, bounds)
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        name = _function_name(node.func)
        if name in _FUNCTIONS:
            return _FUNCTIONS[name](_eval(node.args[0], bounds))
    raise UnboundedExpression("unsupported expression")


def _binop(node: ast.BinOp, bounds: Mapping[str, Interval]) -> Interval:
    a = _eval(node.left, bounds)
    if isinstance(node.op, ast.Pow):
        exponent = node.right
        if isinstance(exponent, ast.Constant) and isinstance(exponent.value, int) and exponent.value >= 0:
            return power(a, exponent.value)
        raise UnboundedExpression("only non-negative integer powers are supported")
    b = _eval(node.right, bounds)
    if isinstance(node.op, ast.Add):
        return (a[0] + b[0], a[1] + b[1])
    if isinstance(node.op, ast.Sub):
        return (a[0] - b[1], a[1] - b[0])
    if isinstance(node.op, ast.Mult):
        return product(a, b)
    if isinstance(node.op, ast.Div):
        if b[0] <= 0 <= b[1]:
            raise UnboundedExpression("division by an interval containing 0")
        return product(a, (1.0 / b[1], 1.0 / b[0]))
    raise UnboundedExpression("unsupported operator")


def expression_bounds(code: str, bounds: Mapping[str, Interval]) -> Interval:
    """Bounds of the expression ``code`` given the variables' ``bounds``.

    Raises :class:`UnboundedExpression` when no finite enclosure follows.
    """
    try:
        tree = ast.parse(code.strip(), mode="eval")
    except SyntaxError as exc:
        raise UnboundedExpression("not a Python expression") from exc
    try:
        lo, hi = _eval(tree.body, bounds)
    except (OverflowError, ZeroDivisionError) as exc:
        raise UnboundedExpression("the expression's range overflows") from exc
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise UnboundedExpression("infinite bounds")
    return (lo, hi)
