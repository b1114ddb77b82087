# Neighbouring data frames from R (one row replaced by bad cells) give the same outcome:
# both fit, or both fail with the same message; no message shows a value. Seeded: deterministic.

outcome <- function(expr) {
  tryCatch({
    fit <- expr
    list(ok = TRUE, n = length(coef(fit)), finite = all(is.finite(coef(fit))) || isTRUE(fit$failed))
  }, error = function(e) list(ok = FALSE, message = conditionMessage(e)))
}

test_that("one bad row never decides the outcome of an R call", {
  skip_if_no_dpstats()
  set.seed(20261124)
  bad <- list(NA, Inf, -Inf, 1e300, 987654.321, "SENTINEL_R", "n/a")
  bounds <- list(y = c(-2, 3), x = c(0, 1))
  for (k in 1:20) {
    n <- sample(3:25, 1)
    d <- data.frame(y = runif(n, -2, 3), x = runif(n), g = sample(c("a", "b"), n, TRUE), stringsAsFactors = FALSE)
    d2 <- d
    i <- sample(n, 1)
    for (v in c("y", "x")) if (runif(1) < 0.6) d2[[v]][i] <- bad[[sample(length(bad), 1)]]
    if (runif(1) < 0.5) d2$g[i] <- sample(list(NA, "SENTINEL_R", "zz"), 1)[[1]]
    for (method in c("noisystats", "histogram")) {
      run <- function(data) outcome(dp_ols(y ~ x + factor(g), data = data, eps = 1, bounds = bounds,
                                           levels = list(g = c("a", "b")), method = method, random_state = 1))
      a <- run(d)
      b <- run(d2)
      expect_identical(a$ok, b$ok, info = paste(k, method))
      if (isTRUE(a$ok)) {
        expect_identical(a$n, b$n)
        expect_true(a$finite && b$finite)
      } else {
        expect_identical(a$message, b$message)
        expect_false(grepl("987654|SENTINEL_R", b$message))
      }
    }
  }
})
