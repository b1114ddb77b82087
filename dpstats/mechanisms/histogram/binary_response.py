"""The response axis of a logit or probit fit on a perturbed histogram: two cells for 0/1, else bins.

Lei (2011), section 3.1, works logistic regression as the example of
conditions (A1)-(A3): the regressors are binned and "the joint histogram for
(X, Y) is constructed by counting the number of data points in each of the
product cells ``B_r x {j}`` for ``j = 0, 1``". A binary design's variables
hold the response itself as one column on the bounds [0, 1], whatever
expression made it (``I(affairs > 0)``: dpstats/frontend/formula.py), so the
histogram bins the outcome, not the variable it was made from. Its axis:

* **A 0/1 response: two cells**, a whole-number axis over [0, 1]
  (dpstats/mechanisms/histogram/layout.py's integer axes: a row counts at
  the nearer of 0 and 1, and each cell is fitted at its value), Lei's
  product cells. Whether the response is 0/1 is a public fact: it is
  declared whole-valued (in the variables' ``integers``), or it is a
  comparison (``I(affairs > 0)``, ``I(x == 1)``: its expression, the
  formula's text, is a comparison, which is 0 or 1 whatever the data).
  Two bound cells of a binned axis would say the same only with at least
  one bin between them, holding nothing but noise for a 0/1 response.
* **Otherwise (a fraction in [0, 1], or a 0/1 column not declared as
  such): K bins and a cell at each bound** (the layout's bound cells). The
  rows exactly at 0 and at 1 are counted in the bounds' cells and fitted at
  0 and 1 exactly; the fractions in between are binned like any numeric
  axis and, with ``moment_share``, placed at their cells' noisy means along y
  (dpstats/mechanisms/histogram/cell_means.py; the quasi-likelihood of Papke
  & Wooldridge is linear in y, so a cell at its rows' mean response has
  their summed log-likelihood). A 0/1 column given as a plain number pays
  for the bins' noise: declare it in ``integers``.

A design without formula variables (arrays: the audit harness) has neither
declaration, and its response takes the second layout. Nothing here reads a
row: the release is the family's (Lemma 2), over public cells.
"""

from __future__ import annotations

import ast

from ...design.matrix import Variables

BINARY_BOUNDS = (0.0, 1.0)
"""The bounds of a binary design's response."""


def is_binary(variables: Variables | None, response: str) -> bool:
    """Whether the response column ``response`` is 0/1 from public facts (module docstring)."""
    if variables is not None and response in variables.integers:
        return True
    try:
        tree = ast.parse(response, mode="eval").body
    except SyntaxError:
        return False
    while isinstance(tree, ast.Call) and len(tree.args) == 1 and getattr(tree.func, "id", None) == "I":
        tree = tree.args[0]
    return isinstance(tree, ast.Compare)


def response_cells(
    variables: Variables | None, response: str, ends: tuple[str, ...], integers: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """The bound-cell columns and whole-valued columns of a binary fit's histogram, and whether the response has
    its two cells (module docstring): a 0/1 response joins ``integers`` (and leaves ``ends``), any other one
    gets a cell at each bound."""
    if is_binary(variables, response):
        whole = integers if response in integers else (*integers, response)
        return tuple(c for c in ends if c != response), whole, True
    return tuple(dict.fromkeys((*ends, response))), integers, False
