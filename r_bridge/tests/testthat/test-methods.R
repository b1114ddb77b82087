# The lm-like methods, broom frames, and life after saveRDS/readRDS without Python.

# One fit for the whole file, made by the first test that needs it (never at load time, so that a
# check without Python skips these tests instead of failing).
fit_once <- local({
  cached <- NULL
  function() {
    if (is.null(cached)) {
      cached <<- dp_ols(mpg ~ wt * factor(am) + log(hp), data = mtcars, eps = 1e9, bounds = B, levels = L,
                        random_state = 21)
    }
    cached
  }
})
ref <- lm(mpg ~ wt * factor(am) + log(hp), mtcars)

test_that("coef, vcov, nobs, formula and confint have lm's shapes and names", {
  skip_if_no_dpstats()
  fit <- fit_once()
  expect_identical(names(coef(fit)), names(coef(ref)))
  expect_identical(dimnames(vcov(fit)), list(names(coef(ref)), names(coef(ref))))
  expect_identical(nobs(fit), 32L)
  expect_identical(deparse(formula(fit)), deparse(mpg ~ wt * factor(am) + log(hp)))
  ci <- confint(fit, level = 0.9)
  expect_identical(colnames(ci), c("5 %", "95 %"))
  expect_identical(rownames(confint(fit, "wt")), "wt")
  expect_true(all(ci[, 1] < coef(fit) & coef(fit) < ci[, 2]))
})

test_that("standard errors at eps = 1e9 are lm's HC1 sandwich, and confint matches Python's", {
  skip_if_no_dpstats()
  fit <- fit_once()
  X <- model.matrix(ref)
  e <- residuals(ref)
  bread <- solve(crossprod(X))
  hc1 <- bread %*% crossprod(X * e) %*% bread * nrow(X) / (nrow(X) - ncol(X))
  # 1000 bootstrap refits estimate each SE (interquartile range / 1.349) with a relative sd of
  # about 4%: 15% is about 3.7 sd
  expect_equal(unname(sqrt(diag(vcov(fit)))), unname(sqrt(diag(hc1))), tolerance = 0.15)
  reps <- fit$replicates
  expect_identical(colnames(reps), names(coef(fit)))
  a <- c(0.05, 0.95)
  expect_identical(fit$interval, "percentile")  # NoisyStats' kind (dpstats/mechanisms/noisystats/inference.py)
  percentile <- t(vapply(names(coef(fit)), function(t) quantile(reps[, t], a, names = FALSE), numeric(2)))
  expect_equal(unname(confint(fit, level = 0.9)), unname(percentile))
  none <- dp_ols(mpg ~ wt, data = mtcars, eps = 1, bounds = B, method = "noisystats", random_state = 2,
                 se_share = 0)
  expect_true(all(is.nan(confint(none))) && is.null(none$replicates))
})

test_that("predict(newdata) equals lm's prediction at eps = 1e9", {
  skip_if_no_dpstats()
  fit <- fit_once()
  nd <- data.frame(wt = c(2.5, 3.5), am = c(0, 1), hp = c(100, 200), row.names = c("a", "b"))
  p <- predict(fit, nd)
  expect_identical(names(p), c("a", "b"))
  expect_equal(p, predict(ref, nd), tolerance = 1e-6)
  expect_error(predict(fit), "private data")
  expect_error(predict(fit, data.frame(wt = 3, am = 2, hp = 100)), "new level")
})

test_that("residuals() and fitted() explain that they would need the private data", {
  skip_if_no_dpstats()
  fit <- fit_once()
  expect_error(residuals(fit), "would need the private data")
  expect_error(fitted(fit), "would need the private data")
  expect_error(resid(fit), "would need the private data")
})

test_that("print and summary describe the release", {
  skip_if_no_dpstats()
  fit <- fit_once()
  out <- capture.output(print(fit))
  expect_true(any(grepl("NoisyStats", out)))
  expect_true(any(grepl("n = 32 (public)", out, fixed = TRUE)))
  s <- summary(fit)
  expect_s3_class(s, "summary.dpstats_fit")
  law <- if (is.null(fit$replicates)) "Pr(>|z|)" else "Pr(boot)"
  expect_identical(colnames(s$coefficients), c("Estimate", "Std. Error", "z value", law))
  ci <- confint(fit)
  expect_true(all(ci[, 1] <= coef(fit) & coef(fit) <= ci[, 2]))  # the estimate inside its own interval
  p <- s$coefficients[, 4]
  expect_identical(p < 0.05, ci[, 1] > 0 | ci[, 2] < 0)  # p-values invert the intervals: one law
  out <- capture.output(print(s))
  expect_true(any(grepl("Budget split", out)))
  expect_true(any(grepl("Declared bounds: mpg in [10, 35]", out, fixed = TRUE)))
  text <- gsub("\\s+", " ", paste(out, collapse = " "))
  expect_true(grepl("sampling error", text) && grepl("privacy noise", text))
})

test_that("a failed fit says so", {
  skip_if_no_dpstats()
  # NoisyStats at eps = 0.05 on 32 cars: the noisy n*var(x) matrix is not positive definite (seeded)
  failed <- dp_ols(mpg ~ wt + factor(cyl), data = mtcars, eps = 0.05, bounds = B, levels = L, method = "noisystats",
                   random_state = 1)
  expect_true(failed$failed)
  expect_true(any(grepl("mechanism failed", capture.output(print(failed)))))
  expect_true(any(grepl("FAILED", capture.output(print(summary(failed))))))
  expect_error(predict(failed, mtcars), "failed")
})

test_that("tidy and glance are registered for broom", {
  skip_if_no_dpstats()
  fit <- fit_once()
  skip_if_not_installed("broom")
  td <- broom::tidy(fit, conf.int = TRUE, conf.level = 0.9)
  expect_identical(names(td), c("term", "estimate", "std.error", "statistic", "p.value", "conf.low", "conf.high",
                                "bias", "status"))
  expect_identical(td$bias, rep(0, 5))  # NoisyStats at eps = 1e9: nothing repaired, no bias
  expect_equal(td$estimate, unname(coef(fit)))
  gl <- broom::glance(fit)
  expect_identical(nrow(gl), 1L)
  expect_identical(names(gl), c("nobs", "df.model", "method", "notion", "eps", "delta", "rho", "proven",
                                "neighbours", "failed", "status", "bias", "bias.source", "inference", "weights", "cluster",
                                "strata"))
  expect_identical(gl$status, "ok")
  expect_identical(gl$bias, 0)
  expect_true(is.na(gl$bias.source))
  expect_identical(gl$inference, if (is.null(fit$replicates)) "normal" else paste0("bootstrap (", fit$interval, ")"))
  expect_identical(gl$method, "noisystats")
  expect_equal(gl$eps, 1e9)
})

test_that("the fit survives saveRDS/readRDS and works afterwards without Python", {
  skip_if_no_dpstats()
  fit <- fit_once()
  path <- tempfile(fileext = ".rds")
  saveRDS(fit, path)
  back <- readRDS(path)
  expect_identical(coef(back), coef(fit))
  expect_identical(capture.output(print(summary(back))), capture.output(print(summary(fit))))
  code <- sprintf('
    options(dpstats.python = "/nonexistent/python")
    library(dpstats)
    fit <- readRDS("%s")
    print(fit)
    print(summary(fit))
    print(confint(fit))
    print(predict(fit, data.frame(wt = 3, am = 1, hp = 150)))
    if (requireNamespace("broom", quietly = TRUE)) print(broom::tidy(fit))
    stopifnot(!reticulate::py_available(initialize = FALSE))
    cat("WITHOUT-PYTHON-OK\\n")', path)
  res <- run_rscript(code, env = c("RETICULATE_PYTHON="))
  expect_identical(res$status, 0L, info = paste(res$output, collapse = "\n"))
  expect_true(any(grepl("WITHOUT-PYTHON-OK", res$output)))
  expect_true(any(grepl("DP OLS Regression Results", res$output)))
})

test_that("dp_f_test is the Wald test of the release, its p-value from the bootstrap", {
  skip_if_no_dpstats()
  fit <- fit_once()
  X <- model.matrix(ref)
  e <- residuals(ref)
  bread <- solve(crossprod(X))
  hc1 <- bread %*% crossprod(X * e) %*% bread * nrow(X) / (nrow(X) - ncol(X))
  terms <- c("wt", "log(hp)")
  test <- dp_f_test(fit, terms)
  b <- coef(ref)[terms]
  w <- drop(t(b) %*% solve(hc1[terms, terms]) %*% b)
  # at eps = 1e9 the covariance is HC1 up to the bootstrap's Monte Carlo error (SEs within 15%)
  expect_equal(test$statistic * test$df, w, tolerance = 0.35)
  expect_identical(test$reference, "bootstrap")
  expect_true(test$p.value > 0 && test$p.value <= 1)
  expect_error(dp_f_test(fit, "weight"), "unknown term")
})

test_that("a fit that keeps a bias carries its bound: the histogram's binning", {
  skip_if_no_dpstats()
  skip_if_not_installed("broom")
  data(engel, package = "quantreg")
  fit <- dp_quantreg(foodexp ~ income, data = engel, eps = 1, bounds = list(income = c(0, 5000), foodexp = c(0, 2500)),
                     method = "histogram", random_state = 1)
  expect_match(fit$bias_source, "binning bias (at the cells' noisy means", fixed = TRUE)
  expect_identical(names(fit$bias), names(coef(fit)))
  expect_true(all(fit$bias > 0))
  expect_true(fit$status %in% c("ok", "biased"))  # the Python package's rule, not R's
  expect_identical(broom::glance(fit)$status, fit$status)
  expect_identical(unique(broom::tidy(fit)$status), fit$status)
  expect_identical(broom::tidy(fit)$bias, unname(fit$bias))
  expect_identical(broom::glance(fit)$bias.source, fit$bias_source)
  status <- grep("^Status:", capture.output(print(summary(fit))), value = TRUE)
  expect_match(status, paste0("^Status: +", fit$status, ": "))
  expect_match(status, "binning bias", fixed = TRUE)
})

test_that("a finite bias bound widens the intervals (Armstrong-Kolesar) and the p-values invert them", {
  skip_if_no_dpstats()
  fit <- fit_once()
  se <- sqrt(diag(vcov(fit)))
  expect_equal(dpstats:::.bias_cv(0, 0.05), qnorm(0.975), tolerance = 1e-12)
  cv <- dpstats:::.bias_cv(c(0.5, 3, 40), 0.1)
  expect_equal(pnorm(cv - c(0.5, 3, 40)) - pnorm(-cv - c(0.5, 3, 40)), rep(0.9, 3), tolerance = 1e-12)
  expect_identical(dpstats:::.bias_cv(c(Inf, NaN), 0.05), c(Inf, Inf))
  biased <- fit
  biased$bias[] <- c(0, 0.5, 3, Inf, 0) * se
  biased$bias_source <- "a bias"
  for (level in c(0.9, 0.95)) {
    before <- confint(fit, level = level)
    after <- confint(biased, level = level)
    extra <- (dpstats:::.bias_cv(c(0.5, 3), 1 - level) - qnorm(1 - (1 - level) / 2)) * se[2:3]
    expect_equal(unname(after[2:3, 1]), unname(before[2:3, 1] - extra), tolerance = 1e-12)
    expect_equal(unname(after[2:3, 2]), unname(before[2:3, 2] + extra), tolerance = 1e-12)
    expect_identical(after[-(2:3), ], before[-(2:3), ])  # 0 and Inf leave the interval as it was
  }
  p <- summary(biased)$coefficients[, 4L]
  p0 <- summary(fit)$coefficients[, 4L]
  expect_true(all(p[2:3] >= p0[2:3]) && all(p[-(2:3)] == p0[-(2:3)]))
  normal <- biased
  normal$replicates <- NULL  # the normal law: at the level of its own p-value, 0 is an end of the interval
  p <- summary(normal)$coefficients[, 4L]
  for (j in 2:3) expect_lt(min(abs(confint(normal, level = 1 - p[[j]])[j, ])), 1e-8 * se[[j]])
  expect_identical(broom::glance(biased)$bias, Inf)
  biased$bias[4] <- 0
  expect_equal(broom::glance(biased)$bias, 3)
  status <- grep("^Status:", capture.output(print(summary(biased))), value = TRUE)
  expect_match(status, "bias up to 3 standard errors (the intervals carry the bound; bias bounds below): a bias",
               fixed = TRUE)
})

test_that("a fit saved before the bounds (fit$bias the bias in words) reads as unbounded", {
  skip_if_no_dpstats()
  old <- fit_once()
  old$bias <- "a bias"
  old$bias_source <- NULL
  old$status <- NULL
  expect_identical(unname(dpstats:::.bias_of(old)), rep(Inf, 5))
  expect_identical(dpstats:::.status(old), "biased")
  expect_identical(confint(old), confint(fit_once()))
  expect_match(grep("^Status:", capture.output(print(summary(old))), value = TRUE), "does not cover a bias")
})
