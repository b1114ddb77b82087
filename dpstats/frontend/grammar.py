"""The formula language: row-wise maps only, decided on the syntax tree before any data are read.

A term's value in a row may depend on that row alone. ``x.mean()``,
``x.max()``, ``np.roll(x, 1)``, ``x.rank()``, ``x.cumsum()``, ``np.sum(x)``
and patsy's stateful transforms (``center``, ``standardize``, splines) change
every row when one row changes, and no sensitivity survives them. So every
factor that patsy hands over (the code of ``x``, ``I(x**2)``, ``np.log(w)``,
``C(g, Sum)``) is parsed as a Python expression and admitted only if it is
built from

* column names of the data (and ``Q("a column name")`` for other spellings);
* numeric literals; ``+ - * / **`` and unary minus; comparisons
  (``x > 5``, ``g == "a"``), which give 0/1 or a two-level factor;
* the element-wise functions of :data:`dpstats.design.bounds.ROWWISE_FUNCTIONS`,
  spelled ``np.log(x)``, ``numpy.log(x)`` or ``log(x)``;
* ``I(...)``; ``C(column)``, ``C(column, contrast)`` and
  ``C(column, levels=[...])`` with one of patsy's contrasts (Treatment, Sum,
  Helmert, Poly, Diff), bare or called with literal arguments.

Everything else is refused with a message that names the token and says why:
attribute access and method calls (``x.mean()`` reads other rows), subscripts,
reductions and any other function, names that are neither a column nor an
allowed function, lambdas, comprehensions. The formula is then evaluated in a
namespace that holds these functions and nothing else: not the caller's
variables, not the rest of numpy.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Collection

from ..design.bounds import NUMPY_MODULES, ROWWISE_FUNCTIONS, function_name

CONTRASTS = frozenset({"Treatment", "Sum", "Helmert", "Poly", "Diff"})
"""patsy's contrast codings; each depends on the declared levels only."""

MARKERS = frozenset({"I", "Q", "C"})
"""patsy's formula builtins that are admitted: identity, quoting and categorical coding."""

_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
_COMPARISONS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
_ALLOWED_LIST = ", ".join(sorted(ROWWISE_FUNCTIONS))


class FormulaRefused(ValueError):
    """A formula term that is not a row-wise map of its row, refused before the data are read."""


def _refuse(node: ast.AST, why: str) -> FormulaRefused:
    return FormulaRefused(f"formula term {ast.unparse(node)!r} is not allowed: {why}")


def _literal(node: ast.expr) -> bool:
    """A constant, or a list / tuple of constants (as in ``levels=[...]``, ``reference="a"``)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return isinstance(node.operand, ast.Constant)
    return isinstance(node, ast.List | ast.Tuple) and all(_literal(e) for e in node.elts)


class _Checker:
    """Walks one factor's expression and raises :class:`FormulaRefused` at the first foreign token."""

    def __init__(self, columns: Collection[str]):
        self.columns = columns

    def expression(self, node: ast.expr) -> None:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int | float | str):
                raise _refuse(node, "only numbers and strings may appear as literals")
            return
        if isinstance(node, ast.Name):
            if node.id not in self.columns:
                raise _refuse(node, "it is neither a column of data nor an allowed function")
            return
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            self.expression(node.operand)
            return
        if isinstance(node, ast.BinOp):
            if not isinstance(node.op, _OPERATORS):
                raise _refuse(node, "only + - * / ** are allowed between terms' values")
            self.expression(node.left)
            self.expression(node.right)
            return
        if isinstance(node, ast.Compare):
            if not all(isinstance(op, _COMPARISONS) for op in node.ops):
                raise _refuse(node, "only the comparisons < <= > >= == != are allowed")
            for part in (node.left, *node.comparators):
                self.expression(part)
            return
        if isinstance(node, ast.Call):
            self.call(node)
            return
        if isinstance(node, ast.Attribute):
            raise _refuse(
                node,
                f"attribute access reads more than the row (x.mean(), x.max() or x.shift() read other rows); "
                f"use only the row-wise functions {_ALLOWED_LIST}",
            )
        if isinstance(node, ast.Subscript):
            raise _refuse(node, "a subscript reads another row than the row itself")
        raise _refuse(node, f"a {type(node).__name__} is not part of the formula language")

    def call(self, node: ast.Call) -> None:
        name = function_name(node.func)
        if name is None:
            if isinstance(node.func, ast.Attribute):
                raise _refuse(node, f"{ast.unparse(node.func)}() reads other rows: only row-wise functions are allowed")
            raise _refuse(node, "only the row-wise functions and I(), Q(), C() may be called")
        if isinstance(node.func, ast.Attribute) and name not in ROWWISE_FUNCTIONS:
            raise _refuse(
                node, f"np.{name} is not a row-wise function of the formula language (allowed: {_ALLOWED_LIST})"
            )
        if name in ROWWISE_FUNCTIONS or name == "I":
            if len(node.args) != 1 or node.keywords:
                raise _refuse(node, f"{name}() takes exactly one argument")
            self.expression(node.args[0])
            return
        if name == "Q":
            if len(node.args) != 1 or node.keywords or not isinstance(node.args[0], ast.Constant):
                raise _refuse(node, 'Q() takes one column name as a string, as in Q("my column")')
            if node.args[0].value not in self.columns:
                raise _refuse(node, "it names no column of data")
            return
        if name == "C":
            self.categorical(node)
            return
        if name in CONTRASTS:
            raise _refuse(node, f"{name} is a contrast: use it inside C(), as in C(g, {name})")
        raise _refuse(
            node,
            f"{name}() is not a row-wise function of the formula language "
            f"(reductions, ranks, lags and stateful transforms read other rows; allowed: {_ALLOWED_LIST})",
        )

    def categorical(self, node: ast.Call) -> None:
        if not node.args or len(node.args) > 2:
            raise _refuse(node, "C() takes a column and optionally a contrast, as in C(g, Sum)")
        self.expression(node.args[0])
        if len(node.args) == 2:
            self.contrast(node.args[1])
        for keyword in node.keywords:
            if keyword.arg != "levels" or not _literal(keyword.value):
                raise _refuse(node, "C() accepts only levels=[...] with literal levels as a keyword")

    def contrast(self, node: ast.expr) -> None:
        if isinstance(node, ast.Name) and node.id in CONTRASTS:
            return
        called = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CONTRASTS
        if called and all(_literal(a) for a in node.args) and all(_literal(k.value) for k in node.keywords):
            return
        raise _refuse(node, f"the contrast of C() must be one of {sorted(CONTRASTS)}, with literal arguments")


def check_factor(code: str, columns: Collection[str]) -> None:
    """Refuse the factor ``code`` unless it is a row-wise map in the formula language.

    ``columns`` are the data's column names (public: the schema). Raises
    :class:`FormulaRefused` naming the first foreign token and why.
    """
    try:
        tree = ast.parse(code.strip(), mode="eval")
    except SyntaxError:
        raise FormulaRefused(f"formula term {code!r} is not a valid expression") from None
    names_as_functions = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    clash = names_as_functions & set(columns) & (set(ROWWISE_FUNCTIONS) | MARKERS)
    if clash:
        raise FormulaRefused(f"data columns {sorted(clash)} shadow formula functions of the same name; rename them")
    _Checker(columns).expression(tree.body)


def evaluation_namespace() -> dict[str, object]:
    """The only names a formula is evaluated with, besides the data's columns.

    ``np`` and ``numpy`` are stand-ins that hold the row-wise functions only,
    so that even an expression that slipped past :func:`check_factor` could
    reach nothing else.
    """
    functions = {name: f.ufunc for name, f in ROWWISE_FUNCTIONS.items()}
    module = types.SimpleNamespace(**functions)
    return {**functions, **dict.fromkeys(NUMPY_MODULES, module)}
