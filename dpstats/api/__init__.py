"""The public entry points that read data: ``dp_ols`` and ``dp_quantreg`` (estimators.py: formula ->
design -> mechanism -> results, one call or one fit per declared group) and ``noisy_histogram``
(histogram_release.py: one perturbed histogram, any number of formulas fitted on it).
"""
