# dp_quantreg from R: KNG at eps = 1e9 must agree with quantreg::rq on engel.

test_that("dp_quantreg with method = 'kng' matches rq at a huge eps", {
  skip_if_no_dpstats()
  skip_if_not_installed("quantreg")
  data("engel", package = "quantreg", envir = environment())
  fit <- dp_quantreg(foodexp ~ income, data = engel, tau = 0.5, eps = 1e9, method = "kng",
                     bounds = list(income = c(0, 5000), foodexp = c(0, 2500)), random_state = 2026)
  ref <- coef(quantreg::rq(foodexp ~ income, tau = 0.5, data = engel))
  expect_s3_class(fit, "dpstats_fit")
  expect_identical(names(coef(fit)), names(ref))
  expect_true(all(is.finite(coef(fit))))
  # KNG at eps -> infinity is uniform on the set where the check-loss gradient is smallest;
  # on engel it spans intercepts 72.3 to 92.1 and slopes 0.548 to 0.570 around rq's
  # (81.5, 0.560) (brute-forced in tests/test_kng_limits.py): the tolerance is its reach from rq.
  expect_true(all(abs(coef(fit) - ref) <= c(11, 0.013)))
  expect_false(fit$privacy$proven)  # KNG with two columns samples by MCMC
  expect_true(any(grepl("NOT proven", capture.output(print(summary(fit))))))
})

test_that("dp_quantreg's auto takes a proven mechanism and keeps R's names", {
  skip_if_no_dpstats()
  fit <- dp_quantreg(mpg ~ wt + factor(cyl), data = mtcars, tau = 0.25, eps = 1e9, bounds = B, levels = L,
                     random_state = 1)
  expect_identical(fit$method, "histogram")
  expect_true(fit$privacy$proven)
  expect_identical(fit$tau, 0.25)
  expect_identical(names(coef(fit)), c("(Intercept)", "wt", "factor(cyl)6", "factor(cyl)8"))
  expect_true(any(grepl("DP quantile regression", capture.output(print(fit)))))
  expect_true(any(grepl("DP Quantile Regression Results", capture.output(print(summary(fit))))))
  if (requireNamespace("broom", quietly = TRUE)) expect_true("tau" %in% names(broom::glance(fit)))
})

test_that("the histogram takes a response's mass at a bound declared from R (bound_cells)", {
  skip_if_no_dpstats()
  set.seed(3)
  n <- 2000
  x <- runif(n, 0, 10)
  y <- ifelse(runif(n) < 0.6, 0, pmin(1 + x + abs(rnorm(n, 0, 2)), 30))  # 60% zeros: rq's median line is 0
  d <- data.frame(x = x, y = y)
  args <- list(y ~ x, data = d, tau = 0.5, eps = 1, bounds = list(x = c(0, 10), y = c(0, 30)),
               method = "histogram", random_state = 1)
  declared <- do.call(dp_quantreg, c(args, bound_cells = "y"))
  binned <- do.call(dp_quantreg, args)
  expect_true(all(abs(coef(declared)) < 1e-3))
  expect_gt(coef(binned)[["(Intercept)"]], 0.25)  # the zeros spread over the response's first bin
})

test_that("dp_quantreg with method = 'tukey' (delta > 0) is rq's median at a huge eps", {
  skip_if_no_dpstats()
  skip_if_not_installed("quantreg")
  set.seed(2026)
  n <- 20000
  d <- data.frame(x = runif(n, 0, 10), g = factor(sample(c("a", "b"), n, replace = TRUE)))
  d$y <- 1 + 0.5 * d$x + ifelse(d$g == "b", 0.8, 0) + rlnorm(n, 0, 0.8)
  fit <- dp_quantreg(y ~ x + g, data = d, tau = 0.5, eps = 1e4, delta = 1e-6, method = "tukey",
                     levels = list(g = c("a", "b")), random_state = 3)
  ref <- summary(quantreg::rq(y ~ x + g, tau = 0.5, data = d), se = "nid")$coefficients
  expect_identical(names(coef(fit)), rownames(ref))
  # the Tukey median of batch medians errs by about one of rq's standard errors (seeded): two is the bound
  expect_true(all(abs(coef(fit) - ref[, "Value"]) < 2 * ref[, "Std. Error"]))
  expect_true(all(is.finite(sqrt(diag(vcov(fit))))))
})
