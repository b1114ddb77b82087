# Several quantiles from R: dp_quantreg(..., tau = c(0.25, 0.5, 0.75)) works as it does from Python.
# Seeded fits only (no statistical assertion, no false failures).

ENGEL_BOUNDS <- list(income = c(0, 5000), foodexp = c(0, 2400))  # not a calibrated real design: these test the mechanics

engel_data <- function() {
  skip_if_not_installed("quantreg")
  e <- new.env()
  data("engel", package = "quantreg", envir = e)
  e$engel
}

test_that("several quantiles give one fit per quantile, with quantreg's shapes", {
  skip_if_no_dpstats()
  engel <- engel_data()
  taus <- c(0.25, 0.5, 0.75)
  q <- dp_quantreg(foodexp ~ income, data = engel, tau = taus, eps = 1, bounds = ENGEL_BOUNDS, random_state = 1)
  ref <- quantreg::rq(foodexp ~ income, tau = taus, data = engel)
  expect_s3_class(q, "dpstats_quantile_fits")
  expect_identical(dimnames(coef(q)), dimnames(coef(ref)))  # "tau= 0.25", ... as quantreg names them
  expect_identical(names(q$fits), colnames(coef(ref)))
  for (i in seq_along(taus)) {
    expect_s3_class(q$fits[[i]], "dpstats_fit")
    expect_identical(q$fits[[i]]$tau, taus[[i]])
    expect_equal(q$fits[[i]]$privacy$eps, 1 / 3)
    expect_identical(coef(q)[, i], coef(q$fits[[i]]))
  }
  expect_identical(q$privacy$eps, 1)
  expect_equal(unname(q$privacy$split), rep(1 / 3, 3))
  expect_identical(nobs(q), 235L)
  expect_identical(names(vcov(q)), names(q$fits))
  ci <- confint(q, level = 0.9)
  expect_identical(dim(ci), c(2L, 2L, 3L))
  expect_identical(ci[, , 2], confint(q$fits[[2]], level = 0.9))
  expect_identical(dimnames(confint(q, "income"))[[1]], "income")
  p <- predict(q, data.frame(income = c(500, 1000)))
  expect_identical(dim(p), c(2L, 3L))
  expect_equal(p[, 3], predict(q$fits[[3]], data.frame(income = c(500, 1000))))
  expect_error(predict(q), "private data")
  expect_error(residuals(q), "private data")
})

test_that("print, summary, tidy and glance cover every quantile", {
  skip_if_no_dpstats()
  engel <- engel_data()
  q <- dp_quantreg(foodexp ~ income, data = engel, tau = c(0.25, 0.5, 0.75), eps = 1, bounds = ENGEL_BOUNDS,
                   random_state = 2)
  out <- capture.output(print(q))
  expect_true(any(grepl("eps = 1 (pure DP) in total", out, fixed = TRUE)))
  expect_true(any(grepl("q=0.25: 0.3333, q=0.5: 0.3333, q=0.75: 0.3333", out, fixed = TRUE)))
  s <- capture.output(print(summary(q)))
  expect_identical(sum(grepl("DP Quantile Regression Results", s)), 3L)
  expect_true(any(grepl("^3 quantiles", s)))
  skip_if_not_installed("broom")
  td <- broom::tidy(q, conf.int = TRUE)
  expect_identical(td$tau, rep(c(0.25, 0.5, 0.75), each = 2))
  expect_identical(td$estimate, unname(c(coef(q))))
  expect_true(all(c("conf.low", "conf.high") %in% names(td)))
  gl <- broom::glance(q)
  expect_identical(gl$tau, c(0.25, 0.5, 0.75))
  expect_equal(gl$eps, rep(1 / 3, 3))
})

test_that("the first of several quantiles is the single fit with its part of eps and the same seed", {
  skip_if_no_dpstats()
  engel <- engel_data()
  both <- dp_quantreg(foodexp ~ income, data = engel, tau = c(0.25, 0.75), eps = 2, method = "kng",
                      bounds = ENGEL_BOUNDS, random_state = 3)
  one <- dp_quantreg(foodexp ~ income, data = engel, tau = 0.25, eps = 1, method = "kng", bounds = ENGEL_BOUNDS,
                     random_state = 3)
  expect_identical(coef(both)[, 1], coef(one))
  expect_identical(both$fits[[1]]$privacy$eps, one$privacy$eps)
})

test_that("several quantiles survive saveRDS", {
  skip_if_no_dpstats()
  engel <- engel_data()
  q <- dp_quantreg(foodexp ~ income, data = engel, tau = c(0.1, 0.9), eps = 1, bounds = ENGEL_BOUNDS,
                   random_state = 4)
  path <- tempfile(fileext = ".rds")
  saveRDS(q, path)
  back <- readRDS(path)
  expect_identical(coef(back), coef(q))
  expect_identical(capture.output(print(summary(back))), capture.output(print(summary(q))))
})
