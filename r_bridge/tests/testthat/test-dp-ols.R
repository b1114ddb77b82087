# dp_ols from R: the README's quick start, and parity with R's own lm at eps = 1e9.

test_that("the quick start runs as written", {
  skip_if_no_dpstats()
  out <- capture.output({
    library(dpstats)
    fit <- dp_ols(mpg ~ wt + factor(cyl), data = mtcars, eps = 1,
                  bounds = list(mpg = c(10, 35), wt = c(1, 6)),
                  levels = list(cyl = c(4, 6, 8)))
    print(summary(fit))
    ci <- confint(fit)
    print(ci)
  })
  expect_s3_class(fit, "dpstats_fit")
  expect_true(any(grepl("DP OLS Regression Results", out)))
  expect_true(any(grepl("eps = 1 (pure DP)", out, fixed = TRUE)))
  expect_true(any(grepl("Declared levels: cyl: 4, 6, 8", out, fixed = TRUE)))
  expect_identical(dim(ci), c(4L, 2L))
  expect_identical(rownames(ci), c("(Intercept)", "wt", "factor(cyl)6", "factor(cyl)8"))
  skip_if_not_installed("broom")
  td <- broom::tidy(fit)
  expect_identical(names(td), c("term", "estimate", "std.error", "statistic", "p.value", "bias", "status"))
  expect_identical(td$term, rownames(ci))
})

test_that("at eps = 1e9, dp_ols equals lm on mtcars to 1e-6 relative", {
  skip_if_no_dpstats()
  # Element-wise relative error for the main formula; for the others testthat's
  # tolerance (mean relative difference, as all.equal). Seeded: deterministic.
  f <- mpg ~ wt + factor(cyl)
  fit <- dp_ols(f, data = mtcars, eps = 1e9, bounds = B, levels = L, random_state = 2026)
  ref <- coef(lm(f, mtcars))
  expect_identical(names(coef(fit)), names(ref))
  expect_lt(max_rel_error(coef(fit), ref), 1e-6)

  for (f in list(mpg ~ factor(am):wt + log(hp), mpg ~ I(1 / wt) + factor(cyl), mpg ~ wt + I(wt^2) - 1)) {
    fit <- dp_ols(f, data = mtcars, eps = 1e9, bounds = B, levels = L, random_state = 2026)
    ref <- coef(lm(f, mtcars))
    expect_identical(names(coef(fit)), names(ref), info = deparse(f))
    expect_equal(coef(fit), ref, tolerance = 1e-6, info = deparse(f))
  }
})

test_that("interactions and I() name and order coefficients as lm does", {
  skip_if_no_dpstats()
  f <- mpg ~ log(hp) + wt + factor(am):wt + I(qsec - 18)
  fit <- dp_ols(f, data = mtcars, eps = 1e9, bounds = B, levels = L, random_state = 3)
  expect_identical(names(coef(fit)), names(coef(lm(f, mtcars))))
  expect_true(fit$names_match)
})

test_that("bounds may be declared for an expression of the formula", {
  skip_if_no_dpstats()
  b <- list(mpg = c(10, 35), wt = c(1, 6), "log(hp)" = c(log(50), log(350)))
  fit <- dp_ols(mpg ~ wt + log(hp), data = mtcars, eps = 1e9, bounds = b, random_state = 5)
  expect_equal(coef(fit), coef(lm(mpg ~ wt + log(hp), mtcars)), tolerance = 1e-6)
})

test_that("a seed reproduces the fit; a string formula works", {
  skip_if_no_dpstats()
  a <- dp_ols(mpg ~ wt, data = mtcars, eps = 2, bounds = B, random_state = 99)
  b <- dp_ols("mpg ~ wt", data = mtcars, eps = 2, bounds = B, random_state = 99)
  expect_identical(coef(a), coef(b))
})

test_that("schema errors are R errors with the Python side's explanation", {
  skip_if_no_dpstats()
  expect_error(dp_ols(mpg ~ wt, data = mtcars, eps = 0, bounds = B), "eps must be a positive finite number")
  expect_error(dp_ols(mpg ~ wt, data = mtcars, eps = 1, bounds = list(mpg = c(10, 35))), "wt")
  expect_error(dp_ols(mpg ~ wt, data = mtcars, eps = 1, bounds = B, method = "nope"), "unknown method")
  expect_error(dp_ols(mpg ~ wt, data = mtcars, eps = 1, bounds = list(c(1, 2))), "named list")
  expect_error(dp_ols(mpg ~ wt, data = as.matrix(mtcars), eps = 1, bounds = B), "data frame")
  expect_error(dp_ols(mpg ~ wt, data = mtcars, eps = 1, bounds = B, random_state = 1.5), "random_state")
})

test_that("only plain values are kept, and data given inline are not stored in the call", {
  skip_if_no_dpstats()
  fit <- dp_ols(mpg ~ wt, data = data.frame(mpg = mtcars$mpg, wt = mtcars$wt), eps = 1e9, bounds = B,
                random_state = 1)
  expect_identical(fit$call$data, quote(`<data>`))
  expect_identical(environment(fit$formula), baseenv())
  kinds <- rapply(unclass(fit), function(v) typeof(v), how = "unlist")
  expect_false(any(kinds %in% c("environment", "externalptr", "closure")))
  expect_false(any(grepl("python", unlist(lapply(unclass(fit), class)))))
})
