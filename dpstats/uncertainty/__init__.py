"""Standard errors, tests and confidence intervals shared by the mechanisms: from a covariance or
bootstrap replicates (intervals.py), heteroskedasticity-robust covariances from noisy moments
(sandwich.py), and coverage by simulation where the truth is known (coverage.py).
"""
