# Grouped fits: dp_ols(..., by = "cyl", groups = c(4, 6, 8)) on mtcars (11, 7 and 14 cars).

test_that("a grouped fit at eps = 1e9 is lm in every group, and broom::tidy gives the by column", {
  skip_if_no_dpstats()
  fit <- dp_ols(mpg ~ wt, data = mtcars, eps = 1e9, bounds = B, method = "noisystats", se_share = 0,
                by = "cyl", groups = c(4, 6, 8), group_sizes = c(11, 7, 14), random_state = 1)
  expect_s3_class(fit, "dpstats_grouped_fits")
  for (k in c(4, 6, 8)) {
    ref <- coef(lm(mpg ~ wt, data = mtcars[mtcars$cyl == k, ]))
    got <- coef(fit)[as.character(k), ]
    names(got) <- names(ref)
    expect_lt(max_rel_error(got, ref), 1e-6)
  }
  expect_equal(fit$privacy$eps, 1e9)
  tidy <- generics::tidy(fit)
  expect_equal(names(tidy), c("cyl", "term", "estimate", "std.error", "conf.low", "conf.high", "bias", "status"))
  expect_equal(nrow(tidy), 6L)
  if (requireNamespace("broom", quietly = TRUE)) expect_equal(nrow(broom::tidy(fit)), 6L)
})

test_that("without public sizes the budget is halved per group and rows of undeclared keys are dropped", {
  skip_if_no_dpstats()
  cars <- mtcars
  cars$cyl[1] <- NA
  a <- dp_ols(mpg ~ wt, data = cars, eps = 1, bounds = B, method = "noisystats", by = "cyl",
              groups = c(4L, 6L), random_state = 2)
  cars$cyl[1] <- 5
  b <- dp_ols(mpg ~ wt, data = cars, eps = 1, bounds = B, method = "noisystats", by = "cyl",
              groups = c(4L, 6L), random_state = 2)
  expect_equal(coef(a), coef(b))
  expect_equal(a$privacy$eps, 1)
  expect_equal(sum(a$privacy$split), 1)
  expect_error(dp_ols(mpg ~ wt, data = cars, eps = 1, bounds = B, by = "cyl"), "keys declared")
})

test_that("a grouped auto names each group's mechanism, chosen from its public size", {
  skip_if_no_dpstats()
  fit <- dp_ols(mpg ~ wt, data = mtcars, eps = 1e9, bounds = B, by = "cyl", groups = c(4, 6, 8),
                group_sizes = c(11, 7, 14), random_state = 1)
  expect_identical(names(fit$method), c("4", "6", "8"))
  expect_true(all(fit$method %in% c("noisystats", "theilsen", "histogram", "gradient", "tukey")))
})
