# R CMD check entry point; the project's test command runs the same files with
# testthat::test_dir() through tests/test_r_bridge.py.
library(testthat)
library(dpstats)
test_check("dpstats")
