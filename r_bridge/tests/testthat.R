# R CMD check entry point; the project's test command runs it with Python through
# tests/test_r_check.py (R CMD check of the built package, with and without Python).
library(testthat)
library(dpstats)
test_check("dpstats")
