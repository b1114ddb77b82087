# The privacy unit is a person: dp_ols(..., unit = "id", max_rows = k) on AER's PSID7682 wage panel
# (595 workers over 7 years), with the worker as the unit.

psid <- function() {
  data("PSID7682", package = "AER", envir = environment())
  PSID7682
}
PSID_BOUNDS <- list(wage = c(50, 6000), experience = c(0, 55), education = c(4, 17))

test_that("at eps = 1e9 a unit-level NoisyStats fit is lm, and the summary names the worker as the unit", {
  skip_if_no_dpstats()
  skip_if_not_installed("AER")
  d <- psid()
  fit <- dp_ols(log(wage) ~ education + experience, data = d, eps = 1e9,
                bounds = PSID_BOUNDS, method = "noisystats", unit = "id", max_rows = 7, random_state = 1)
  ref <- lm(log(wage) ~ education + experience, data = d)
  expect_lt(max_rel_error(coef(fit), coef(ref)), 1e-4)
  expect_equal(fit$nobs, nrow(d))
  expect_match(fit$privacy$neighbours, "one id \\(at most 7 rows; 595 units\\)")
  expect_true(any(grepl("one id (at most 7 rows", capture.output(summary(fit)), fixed = TRUE)))
  expect_match(generics::glance(fit)$neighbours, "one id \\(at most 7 rows")
})

test_that("max_rows bounds each worker's rows, and a mechanism without clustered intervals reports none", {
  skip_if_no_dpstats()
  skip_if_not_installed("AER")
  fit <- dp_ols(log(wage) ~ education, data = psid(), eps = 2, bounds = PSID_BOUNDS, method = "theilsen",
                unit = "id", max_rows = 3, random_state = 2)
  expect_equal(fit$nobs, 595L * 3L)
  expect_true(all(is.na(fit$bse)))
  expect_error(dp_ols(log(wage) ~ education, data = psid(), eps = 1, bounds = PSID_BOUNDS, unit = "id"),
               "needs max_rows")
  expect_error(dp_ols(log(wage) ~ education, data = psid(), eps = 1, bounds = PSID_BOUNDS, unit = "worker",
                      max_rows = 3), "must name a column")
})

test_that("the budget's ledger names each release's privacy unit", {
  skip_if_no_dpstats()
  skip_if_not_installed("AER")
  b <- dp_budget(eps = 5)
  dp_ols(log(wage) ~ education, data = psid(), eps = 1, bounds = PSID_BOUNDS, method = "noisystats",
         unit = "id", max_rows = 7, budget = b, random_state = 3)
  dp_ols(log(wage) ~ education, data = psid(), eps = 1, bounds = PSID_BOUNDS, method = "noisystats",
         budget = b, random_state = 4)
  expect_equal(dp_ledger(b)$unit, c("id", "row"))
})

test_that("dp_compare_methods plans a worker-level call", {
  skip_if_no_dpstats()
  plan <- dp_compare_methods(log(wage) ~ education, n = 4165, eps = 5, bounds = PSID_BOUNDS,
                             max_rows = 7, units = 595)
  expect_setequal(plan$method, c("noisystats", "tukey", "noisystats (repaired)"))
  expect_match(attr(plan, "text"), "up to 7 rows \\(595 units\\)")
})
