"""Interval arithmetic for formula expressions, and the row-wise functions a formula may use.

A design column's bounds are public metadata derived from the declared bounds
of the variables it is computed from, never from the data. This module
evaluates a patsy factor's code (``x``, ``I(x**2)``, ``np.log(income)``,
``I(x * z + 1)``) over intervals. Every rule is a guaranteed enclosure, so a
clipped row's column value always lies inside the derived interval, and a
function whose domain the box leaves (``log`` over a box that contains 0) is
refused before any data are read: after clipping, a transform can never give
NaN or inf.

:data:`ROWWISE_FUNCTIONS` is the fixed list of element-wise functions that a
formula may call (as ``np.log(x)``, ``numpy.log(x)`` or ``log(x)``); the
formula grammar (dpstats/frontend/grammar.py) admits exactly these.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

Interval = tuple[float, float]


class UnboundedExpression(ValueError):
    """Raised when an expression's range cannot be derived from the bounds."""


class OutsideDomain(UnboundedExpression):
    """Raised when the declared box contains points where a function is undefined."""


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


def _increasing(fn: Callable[[float], float], domain_lo: float = -math.inf, strict: bool = False):
    """Enclosure rule of an increasing function defined on ``[domain_lo, inf)`` (``(domain_lo, inf)`` if strict)."""

    def rule(a: Interval) -> Interval:
        lo, hi = a
        if lo < domain_lo or (strict and lo == domain_lo):
            bound = f"> {domain_lo:g}" if strict else f">= {domain_lo:g}"
            raise OutsideDomain(f"defined only for arguments {bound}")
        return (fn(lo), fn(hi))

    return rule


def _absolute(a: Interval) -> Interval:
    lo, hi = a
    return (0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi)), max(abs(lo), abs(hi)))


def _periodic(fn: Callable[[float], float], peak: float) -> Callable[[Interval], Interval]:
    """Exact enclosure of sin (peak pi/2) or cos (peak 0), period 2 pi."""

    def rule(a: Interval) -> Interval:
        lo, hi = a
        values = [fn(lo), fn(hi)]
        if hi - lo >= 2 * math.pi:
            return (-1.0, 1.0)
        for extreme, value in ((peak, 1.0), (peak + math.pi, -1.0)):
            k = math.ceil((lo - extreme) / (2 * math.pi))
            if extreme + 2 * math.pi * k <= hi:
                values.append(value)
        return (min(values), max(values))

    return rule


@dataclass(frozen=True)
class RowwiseFunction:
    """An element-wise function a formula may call: its numpy ufunc and its interval rule."""

    ufunc: np.ufunc
    enclosure: Callable[[Interval], Interval]


ROWWISE_FUNCTIONS: dict[str, RowwiseFunction] = {
    "log": RowwiseFunction(np.log, _increasing(math.log, 0.0, strict=True)),
    "log2": RowwiseFunction(np.log2, _increasing(math.log2, 0.0, strict=True)),
    "log10": RowwiseFunction(np.log10, _increasing(math.log10, 0.0, strict=True)),
    "log1p": RowwiseFunction(np.log1p, _increasing(math.log1p, -1.0, strict=True)),
    "sqrt": RowwiseFunction(np.sqrt, _increasing(math.sqrt, 0.0)),
    "exp": RowwiseFunction(np.exp, _increasing(math.exp)),
    "expm1": RowwiseFunction(np.expm1, _increasing(math.expm1)),
    "abs": RowwiseFunction(np.absolute, _absolute),
    "absolute": RowwiseFunction(np.absolute, _absolute),
    "square": RowwiseFunction(np.square, lambda a: power(a, 2)),
    "sin": RowwiseFunction(np.sin, _periodic(math.sin, math.pi / 2)),
    "cos": RowwiseFunction(np.cos, _periodic(math.cos, 0.0)),
    "arctan": RowwiseFunction(np.arctan, _increasing(math.atan)),
    "tanh": RowwiseFunction(np.tanh, _increasing(math.tanh)),
}
"""The element-wise functions of the formula language, by name."""

NUMPY_MODULES = frozenset({"np", "numpy"})
"""Names under which a formula may spell a row-wise function, as in ``np.log(x)``."""


def function_name(node: ast.expr) -> str | None:
    """``log`` for ``log``, ``np.log`` or ``numpy.log``; None for any other callee."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in NUMPY_MODULES:
        return node.attr
    return None


def _eval(node: ast.expr, bounds: Mapping[str, Interval]) -> Interval:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return (float(node.value), float(node.value))
    if isinstance(node, ast.Name):
        if node.id in bounds:
            return bounds[node.id]
        raise UnboundedExpression(f"no bounds declared for {node.id}")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        lo, hi = _eval(node.operand, bounds)
        return (-hi, -lo) if isinstance(node.op, ast.USub) else (lo, hi)
    if isinstance(node, ast.BinOp):
        return _binop(node, bounds)
    if isinstance(node, ast.Compare):
        return (0.0, 1.0)
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        name = function_name(node.func)
        if name == "I":
            return _eval(node.args[0], bounds)
        if name == "Q" and isinstance(node.args[0], ast.Constant) and node.args[0].value in bounds:
            return bounds[node.args[0].value]
        if name in ROWWISE_FUNCTIONS:
            argument = _eval(node.args[0], bounds)
            try:
                return ROWWISE_FUNCTIONS[name].enclosure(argument)
            except OutsideDomain as exc:
                raise OutsideDomain(
                    f"{ast.unparse(node)}: {name} is {exc}, but the declared bounds give "
                    f"{ast.unparse(node.args[0])} the range [{argument[0]:g}, {argument[1]:g}]"
                ) from None
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
            raise OutsideDomain(
                f"{ast.unparse(node)}: the declared bounds let the divisor {ast.unparse(node.right)} "
                f"reach 0 (its range is [{b[0]:g}, {b[1]:g}])"
            )
        return product(a, (1.0 / b[1], 1.0 / b[0]))
    raise UnboundedExpression("unsupported operator")


def expression_bounds(code: str, bounds: Mapping[str, Interval]) -> Interval:
    """Bounds of the expression ``code`` given the variables' ``bounds``.

    Raises :class:`OutsideDomain` when the declared box contains points where
    a function in ``code`` is undefined, and :class:`UnboundedExpression` when
    no finite enclosure follows for another reason (a variable without bounds,
    an unsupported operation, overflow).
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
