# R CMD check entry point. The project's test command (tests/test_r_check.py) runs R CMD check
# without Python, as on CRAN (every test skips), and the suite with Python through testthat::test_dir.
library(testthat)
library(dpstats)
test_check("dpstats")
