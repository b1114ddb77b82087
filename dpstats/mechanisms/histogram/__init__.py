"""The perturbed histogram of Lei (2011): one noisy release, any number of fits.

The family: ``layout`` (public cells, default bins, thresholding),
``release`` (the private steps: noisy counts and, with a share of eps, the
noisy sums of the rows' offsets inside their cells), ``cell_means`` (those
sums and the fits' points at the cells' noisy means), ``cell_fits`` and
``weighted_fits`` (fits on the cells: post-processing), ``cell_moments``
and ``inference`` (their standard errors: post-processing), ``mechanism``
(``method="histogram"`` on a :class:`~dpstats.design.matrix.Design`). The front end
``dpstats.noisy_histogram`` (dpstats/api/histogram_release.py) releases a histogram
over named columns, on which any number of formulas can then be fitted at no
further cost (Lei 2011, section 1 and section 4.1).

The release (Lei 2011, section 2.2 and section 4.1):

* each numeric column is rescaled by its declared bounds and cut into K equal
  bins (the last one closed, the paper's footnote 1); the data are clipped to
  the bounds first (a row-wise map). A column declared in ``bound_cells``
  also has a cell of its own at each bound (its rows exactly at a bound). Each categorical column contributes one
  cell per *declared* level and nothing else (an undeclared value is a schema
  error); the cells are the product of the columns' bins and levels, all of
  them public;
* every cell count, empty cells included, gets independent Laplace noise of
  scale ``2 / eps``: the paper's density ``alpha exp(-alpha |z| / 2) / 4``.
  Under replace-one neighbours (docs/DESIGN.md section 2) one changed row moves
  one count down by 1 and another up by 1, an L1 sensitivity of 2 (Lemma 2).

The fits (Algorithm 1): the formula is evaluated at the cell centres (numeric
columns) and levels (categorical ones), and a weighted fit is run with the
noisy counts as weights; ``dp_ols`` and ``dp_quantreg`` by default place each
cell at its rows' noisy mean instead (``moment_share``, dpstats/mechanisms/histogram/cell_means.py:
the binning bias of the centres goes, and the fits converge to the fits on
the rows as eps grows), after

* **enhanced thresholding** (section 4.2, the default): counts below
  ``A log(n) / eps`` with ``A = 1/2`` (the paper's housing example) become
  0. The cut-off is positive, so every negative count becomes 0 too;
* or ``threshold="nonnegative"``: ``max(n^_r, 0)`` (Algorithm 1');
* or ``threshold="none"``: the raw noisy counts (Algorithm 1). Least squares
  then uses the negative weights as they are and fails (an output, not an
  exception) when ``X'WX`` is not positive definite, the case the paper
  notes where the objective has no minimiser; quantile regression, whose
  check-loss objective is unbounded below with a negative weight, clips
  them at 0 as Algorithm 1' does.

Thresholding is applied per cell of the release, before cells are summed
over the columns a formula does not use. A fit that a cut-off leaves failed
(no retained cell in a regressor's sparse bin) is redone on the non-negative
counts, Algorithm 1' (dpstats/mechanisms/histogram/cell_fits.py).

Least squares, ``sheppard=`` (off by default: Algorithm 1 as published).
Putting each row of a smooth continuous regressor at its bin centre acts
like classical measurement error: the centres vary more than the data by
about ``h^2 / 12`` (Sheppard 1898), which attenuates the slope by about
``h^2 / (12 Var(x))`` and moves the intercept with it -- the dominant error
of Algorithm 1 at eps = 1 on the housing benchmark (with K = 10 the size
slope is 4.0% low and the intercept 9.8% high from binning alone; Sheppard's
correction brings every coefficient within 1.3% of OLS at eps = 1).
``sheppard=True`` (or a list of columns) subtracts the within-bin
covariance of the design row from ``X'WX``:
``sum_r w_r (h^2 / 12) g_r g_r'`` per corrected column, with ``g_r`` the
derivative of the design row in that column at the cell centre (exact for
columns linear in the variable, first-order for transforms). It is for
continuous variables whose density is smooth on the scale of a bin, never
for a variable whose values are the bin centres themselves (an integer
variable with one bin per value), which binning does not move.

Quantile regression, ``response=`` (post-processing either way):

* ``"integrated"`` (the default when the formula's response is a binned
  column): each cell's mass is spread uniformly over its response bin and
  the check loss is integrated exactly over it -- the paper's objective (6),
  ``int f^_PH(x) m(x, theta) dx``, taken exactly along the response, with
  the regressors at their centres as in Algorithm 1 (dpstats/mechanisms/histogram/weighted_fits.py).
  Least squares needs no such option: its integrated loss differs from the
  loss at the centre by a constant, so Algorithm 1 is already exact there;
* ``"centre"``: Algorithm 1 exactly, every cell's mass at its centre, solved
  as a linear program. Its optimum is a vertex through p cell centres, so
  the coefficients move in steps of the response's bin width; on the
  housing benchmark at eps = 1 it misses QuantReg on county effects by
  8-17% where the integrated fit stays within 3% (benchmarks/bench_histogram.py). It is the
  fallback when the response is a transform of a column.

Standard errors and intervals (dpstats/mechanisms/histogram/inference.py,
dpstats/mechanisms/histogram/cell_moments.py): a parametric bootstrap of the
released histogram, post-processing that spends nothing (``se_share`` is not
used). Every cell's count is redrawn with fresh noise of the release's scale
and the same thresholding, through the exact moments of a thresholded noisy
Poisson count and normal sums across cells; least squares is refitted in
one batched solve, quantile regression moves by one Newton step with a
kernel density at the fit (Powell's sandwich in the limit). The interval is
centred at the estimate corrected for the thresholding's bias, with the
spread of that corrected estimate. Binning bias is not in the bootstrap: the
default bins undersmooth the paper's rule so that it stays small next to the
intervals' width (x 1.5 bins per axis for least squares, x 3 for quantiles),
and a least-squares fit carries a bound on it that the results' intervals
hold (dpstats/mechanisms/histogram/binning_bias.py); quantile and binary
fits name it without one.

Logit and probit (``dp_logit`` / ``dp_probit``, the mechanism's ``link=``;
Lei 2011, section 3.1, whose logistic example meets (A1)-(A3)): the release
is unchanged -- the noisy counts and, with ``moment_share``, the cells' noisy
means -- and the fit on its cells is a weighted binary MLE, the thresholded
counts clipped at 0 as weights and the cells' points as rows
(dpstats.glm.mle.fit_mle; dpstats/mechanisms/histogram/weighted_fits.py),
post-processing only. The response is an axis of its own: a 0/1 response
(a comparison such as ``I(affairs > 0)``, or declared in ``integers``) has
two cells, 0 and 1, Lei's product cells ``B_r x {0, 1}``; a fractional one K
bins and a cell at each bound, placed at its cells' noisy means
(dpstats/mechanisms/histogram/binary_response.py). The default bins are
coarser than for least squares (``0.75 K`` of Lei's rule while the noise
rule binds: fewer cells erode fewer of a rare outcome's sparse cells, and
at the cells' means coarse bins cost little binning bias). The intervals are
the delta method for the MLE with the thresholding's bias corrected from the
raw noisy counts (dpstats/mechanisms/histogram/binary_inference.py): on
simulated logits and probits with a base rate of 10% and three regressors
(n = 1,000 to 100,000, eps = 1 and 5, 200 data sets each;
benchmarks/bench_histogram_logit.py) the 95% intervals covered the true
coefficients in 0.92-0.98 of the data sets (48 rates, spread as binomial
noise around 0.95 would be: 1.5 points at 200 data sets), 1.1-4.3 times
Logit's width. The estimate keeps the thresholding's bias, which the
intervals cover (up to 2 sd at n = 100,000); the binning bias is named as for
the other fits. At eps = 1e9 with bins that hold one value each, the fit is
statsmodels' Logit and Probit on fair (1e-6) with its HC0 standard errors.

Survey weights (``weights=`` with a declared range ``[lo, W]``, every estimator): each row adds its weight to
its cell's count and within-cell sums, with sensitivities 2W and mW, released in units of W
(dpstats/mechanisms/histogram/survey_weights.py); the fit on the cells is the weighted fit of the binned data
(WLS, the weighted MLE at eps = 1e9 where the cells hold one value each). Its intervals take the noise and the
thresholding from the bootstrap above with the counts held fixed, and the rows' sampling error from a
design-based meat released at the fit's cell scores with 0.1 of eps (dpstats/mechanisms/histogram/cell_meat.py;
declared PSUs and strata as svyglm's).

The public layout, the default number of bins (the paper's rule of thumb,
section 4.3, its undersmoothing, and a cap on the expected weight of the
noise in cells without rows), the bound cells and the thresholding rules are
in dpstats/mechanisms/histogram/layout.py.
"""

from __future__ import annotations

from ..base import MechanismSpec
from .mechanism import DEFAULTS, fit

SPEC = MechanismSpec(
    name="histogram",
    title="Perturbed histogram (weighted fit on cell centres)",
    citation="Lei (2011), Algorithm 1 with enhanced thresholding (section 4.2)",
    estimators=frozenset({"ols", "quantreg", "logit", "probit"}),
    needs_bounds=True,
    max_slopes=None,
    needs_delta=False,
    options=DEFAULTS,
    fit=fit,
    distributed=frozenset({"ols", "quantreg"}),
    weighted=frozenset({"ols", "quantreg", "logit", "probit"}),
)
