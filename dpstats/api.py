"""The public entry points: formula -> design -> mechanism -> results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from .formula import build_design
from .mechanisms import PrivacyRequest, get_mechanism
from .metadata import check_bounds
from .noise import RandomState, make_rng
from .planning.facts import PublicFacts
from .planning.selection import choose
from .privacy import PrivacySpent, check_budget, check_delta, check_eps, check_share
from .quantile_fits import DPQuantileFits
from .quantiles import check_quantiles
from .results import DPRegressionResults


def dp_ols(
    formula: str,
    data: pd.DataFrame,
    eps: float | None = None,
    bounds: Mapping[str, Sequence[float]] | None = None,
    levels: Mapping[str, Sequence] | None = None,
    method: str = "auto",
    delta: float = 0.0,
    random_state: RandomState = None,
    missing: str = "impute",
    *,
    rho: float | None = None,
    se_share: float | None = None,
    **options: object,
) -> DPRegressionResults:
    """Differentially private least squares from a formula.

    Parameters
    ----------
    formula : patsy formula, e.g. ``"y ~ x + C(region)"``, of row-wise maps
        only (dpstats/formula_grammar.py): column names, numbers,
        ``+ - * / **``, comparisons, the element-wise functions ``np.log``,
        ``np.log1p``, ``np.exp``, ``np.sqrt``, ``np.abs``, ``np.sin``, ...,
        ``I()``, ``Q()``, ``C()`` with patsy's contrasts, interactions and
        ``- 1``. Anything that reads other rows (``x.mean()``, ``np.roll``,
        ranks, cumulative sums, ``center``, ``standardize``) is refused before
        the data are read.
    data : DataFrame (or dict of columns) holding the private rows.
    eps : total privacy budget of the call (> 0, finite). What is reported
        never exceeds it.
    bounds : public bounds ``{name: (lower, upper)}`` for every numeric variable
        (or expression) the formula uses; the data are clipped to them.
    levels : public levels ``{name: [...]}`` of every categorical variable.
    method : ``"auto"`` or a registered mechanism (``"noisystats"``).
    delta : for approximate-DP mechanisms; must be 0 for pure ones.
    random_state : None (fresh OS entropy), an int, or a numpy Generator.
    rho : for a zCDP mechanism (``method="gradient", variant="zcdp"``), the
        rho of rho-zCDP, given instead of eps; a zCDP mechanism given eps and
        delta uses the largest rho that meets them (dpstats/privacy.py).
    se_share : the part of the budget spent on what the standard errors need
        (a noisy residual spread, say), in [0, 1); None takes the mechanism's
        default, 0 spends nothing on them (then only what post-processing of
        the point release gives for free is reported, NaN otherwise). The
        split is listed in ``res.privacy.split``; the whole still adds up to
        eps.
    missing : ``"impute"`` (default) gives every bad cell a row-wise
        treatment, so that no private row can make the call raise: a missing,
        non-finite or non-numeric numeric cell becomes the midpoint of its
        declared bounds (infinities the bound they pass), an undeclared or
        missing level the first declared level (dpstats/cells.py). The
        guarantee is unchanged; the estimate is biased towards the imputed
        values, so inspect the data first (:func:`dpstats.inspect`).
        ``"raise"`` is the curator's opt-in: it raises on the first bad cell,
        and that error describes confidential data (never for publication).
    **options : the mechanism's hyperparameters.

    Neighbouring datasets differ in one row and have the same n (public).
    """
    eps, rho = check_budget(eps, rho)
    privacy = PrivacyRequest(eps=eps, delta=check_delta(delta), rho=rho, se_share=check_share(se_share))
    return _fit("ols", formula, data, privacy, bounds, levels, method, random_state, missing, options)


def dp_quantreg(
    formula: str,
    data: pd.DataFrame,
    q: float | Sequence[float] = 0.5,
    *,
    eps: float,
    bounds: Mapping[str, Sequence[float]] | None = None,
    levels: Mapping[str, Sequence] | None = None,
    method: str = "auto",
    delta: float = 0.0,
    random_state: RandomState = None,
    missing: str = "impute",
    se_share: float | None = None,
    **options: object,
) -> DPRegressionResults | DPQuantileFits:
    """Differentially private quantile regression from a formula.

    Parameters
    ----------
    formula, data, bounds, levels, delta, random_state, missing, se_share : as
        for :func:`dp_ols`. Bounds are needed for the response and every numeric
        variable (the data are clipped to them and they define the scaled
        problem of the mechanism).
    q : the quantile tau in (0, 1), or a list of distinct quantiles.
    eps : total privacy budget of the call; with several quantiles it is split
        evenly between them (basic composition), and the split is reported.
    method : ``"auto"`` (the K-norm gradient mechanism, ``"kng"``) or another
        registered quantile-regression mechanism.
    **options : the mechanism's hyperparameters; for ``"kng"``: ``norm``
        (``"linf"``, ``"l2"``, ``"l1"``), ``B`` (the radius of the domain
        ``||theta||_1 <= B`` on the scaled problem, default 2) and ``steps``
        (the chain length; see dpstats/mechanisms/kng/mechanism.py).

    Returns a :class:`~dpstats.results.DPRegressionResults` for one quantile,
    a :class:`~dpstats.quantile_fits.DPQuantileFits` for a list.
    """
    quantiles = check_quantiles(q)
    eps, delta, share = check_eps(eps), check_delta(delta), check_share(se_share)
    if isinstance(quantiles, float):
        privacy = PrivacyRequest(eps=eps, delta=delta, se_share=share)
        return _fit(
            "quantreg", formula, data, privacy, bounds, levels, method, random_state, missing, options, quantiles
        )
    rng = make_rng(random_state)  # one stream for all quantiles: their noise is independent
    part = PrivacyRequest(eps=eps / len(quantiles), delta=delta / len(quantiles), se_share=share)
    fits = tuple(
        _fit("quantreg", formula, data, part, bounds, levels, method, rng, missing, options, tau) for tau in quantiles
    )
    split = tuple((f"q={tau:g}", part.eps) for tau in quantiles)
    caveats = tuple(dict.fromkeys(c for fit in fits for c in fit.privacy.caveats))  # each once, in order
    spent = PrivacySpent(
        notion="pure" if delta == 0 else "approx",
        eps=eps,
        delta=delta,
        split=split,
        caveats=caveats,
        proven=all(fit.privacy.proven for fit in fits),
    )
    return DPQuantileFits(quantiles=quantiles, fits=fits, privacy=spent)


def _fit(
    estimator: str,
    formula: str,
    data: pd.DataFrame,
    privacy: PrivacyRequest,
    bounds: Mapping[str, Sequence[float]] | None,
    levels: Mapping[str, Sequence] | None,
    method: str,
    random_state: RandomState,
    missing: str,
    options: Mapping[str, object],
    q: float | None = None,
) -> DPRegressionResults:
    """One fit. Every check of a public input comes before the data are read;
    ``method="auto"`` chooses from n, the budget and the design's shape, which
    the formula and the declarations alone decide (dpstats/planning/)."""
    reason = None
    if method == "auto":
        if options:
            raise ValueError(f"options {sorted(options)} need an explicit method=...")
        if privacy.rho is not None:
            raise ValueError("method='auto' takes eps (and delta); rho is for method='gradient', variant='zcdp'")
        need_bounds = True
    else:
        spec = get_mechanism(method, estimator)
        hyper = spec.check_options(options)
        spec.check_privacy(privacy, hyper)
        need_bounds = spec.needs_bounds
    rng = make_rng(random_state)
    design, formula_spec = build_design(formula, data, bounds, levels, need_bounds=need_bounds, missing=missing)
    if method == "auto":
        choice = choose(PublicFacts.of(design, privacy.eps, privacy.delta, estimator))
        method, reason = choice.method, choice.reason
        spec = get_mechanism(method, estimator)
        hyper = spec.check_options(choice.options)
        spec.check_privacy(privacy, hyper)
    spec.check_design(design)
    quantile = {} if q is None else {"q": q}  # quantile regression: the mechanism's fit gets q
    release = spec.fit(design, privacy, rng, **hyper, **quantile)
    return DPRegressionResults.from_release(
        release,
        estimator=estimator,
        spec=formula_spec,
        y_name=design.y_name,
        method=spec.name,
        method_title=spec.title,
        citation=spec.citation,
        nobs=design.n,
        declared_bounds=check_bounds(bounds),
        hyperparameters=hyper,
        method_reason=reason,
    )
