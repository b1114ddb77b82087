# weights =, cluster = and strata = in dp_ols, dp_quantreg and dp_glm (issue 41): named as lm and svydesign name
# them, compared with survey::svyglm, lm(weights =) and quantreg::rq(weights =) at eps = 1e9, where the noise
# vanishes. Seeded fits on seeded simulated data: every number is deterministic (no false failures). DP Newton and
# NoisyStats release the weighted MLE / least squares and svyglm's linearisation SEs exactly at that eps (the
# Python package's tests to 1e-6); the perturbed histogram's weighted quantile fit is binned (2%).

survey_sample <- function(n = 4000L) {
  set.seed(41)
  d <- data.frame(x1 = runif(n), st = sample(c("s1", "s2", "s3"), n, replace = TRUE),
                  psu = sample(1:5, n, replace = TRUE), wt = runif(n, 1, 20), stringsAsFactors = FALSE)
  d$y <- rbinom(n, 1L, plogis(-1 + 2 * d$x1))
  d$yc <- -1 + 2 * d$x1 + rnorm(n)
  d
}
SB <- list(x1 = c(0, 1), yc = c(-6, 6), wt = c(0, 20))
SL <- list(st = c("s1", "s2", "s3"), psu = 1:5)

svy <- function(d) survey::svydesign(ids = ~psu, strata = ~st, weights = ~wt, nest = TRUE, data = d)

test_that("dp_glm with weights, cluster and strata is svyglm's fit, coefficients and SEs, at eps = 1e9", {
  skip_if_no_dpstats()
  skip_if_not_installed("survey")
  d <- survey_sample()
  fit <- dp_glm(y ~ x1, data = d, eps = 1e9, bounds = SB, levels = SL, weights = wt, cluster = psu, strata = st,
                random_state = 1)
  ref <- survey::svyglm(y ~ x1, design = svy(d), family = quasibinomial())
  expect_identical(fit$method, "newton")
  expect_equal(coef(fit), coef(ref), tolerance = 1e-4)
  expect_equal(sqrt(diag(vcov(fit))), survey::SE(ref), tolerance = 1e-4)
})

test_that("strata without cluster make the rows the PSUs within strata, as svydesign(ids = ~1, strata = ~st)", {
  skip_if_no_dpstats()
  skip_if_not_installed("survey")
  d <- survey_sample()
  fit <- dp_glm(y ~ x1, data = d, eps = 1e9, bounds = SB, levels = SL["st"], weights = wt, strata = st,
                random_state = 1)
  strat <- survey::svydesign(ids = ~1, strata = ~st, weights = ~wt, data = d)
  ref <- survey::svyglm(y ~ x1, design = strat, family = quasibinomial())
  expect_equal(coef(fit), coef(ref), tolerance = 1e-4)
  expect_equal(sqrt(diag(vcov(fit))), survey::SE(ref), tolerance = 1e-4)
})

test_that("PSUs declared as (stratum, cluster) pairs give svyglm's SEs where strata have 3 and 2 PSUs", {
  skip_if_no_dpstats()
  skip_if_not_installed("survey")
  d <- survey_sample()
  d <- d[d$psu <= ifelse(d$st == "s1", 3L, 2L), ]  # s1 has PSUs 1 to 3, s2 and s3 PSUs 1 and 2
  psus <- unique(Map(c, d$st, d$psu))  # the design's PSU list, as a survey publishes it
  expect_length(psus, 7L)
  paired <- list(st = c("s1", "s2", "s3"), psu = psus)
  fit <- dp_glm(y ~ x1, data = d, eps = 1e9, bounds = SB, levels = paired, weights = wt, cluster = psu, strata = st,
                random_state = 6)
  ref <- survey::svyglm(y ~ x1, design = svy(d), family = quasibinomial())
  expect_equal(coef(fit), coef(ref), tolerance = 1e-4)
  expect_equal(sqrt(diag(vcov(fit))), survey::SE(ref), tolerance = 1e-4)
  ols <- dp_ols(yc ~ x1, data = d, eps = 1e9, bounds = SB, levels = paired, weights = wt, cluster = psu, strata = st,
                random_state = 6)
  expect_equal(sqrt(diag(vcov(ols))), survey::SE(survey::svyglm(yc ~ x1, design = svy(d))), tolerance = 1e-4)
  # PSU codes 1 to 3 crossed with every stratum count s2's and s3's empty third PSUs: not svyglm's SEs
  crossed <- dp_glm(y ~ x1, data = d, eps = 1e9, bounds = SB, levels = list(st = c("s1", "s2", "s3"), psu = 1:3),
                    weights = wt, cluster = psu, strata = st, random_state = 6)
  expect_gt(max(abs(sqrt(diag(vcov(crossed))) / survey::SE(ref) - 1)), 0.01)
  expect_error(dp_glm(y ~ x1, data = d, eps = 1, bounds = SB, levels = list(x1 = psus), weights = wt),
               "pairs declares the PSUs of cluster")
})

test_that("the design's columns are named bare, as strings or as one-sided formulas, all alike", {
  skip_if_no_dpstats()
  d <- survey_sample()
  fits <- list(
    dp_glm(y ~ x1, data = d, eps = 1e9, bounds = SB, levels = SL, weights = wt, cluster = psu, strata = st,
           random_state = 2),
    dp_glm(y ~ x1, data = d, eps = 1e9, bounds = SB, levels = SL, weights = "wt", cluster = "psu", strata = "st",
           random_state = 2),
    dp_glm(y ~ x1, data = d, eps = 1e9, bounds = SB, levels = SL, weights = ~wt, cluster = ~psu, strata = ~st,
           random_state = 2)
  )
  for (f in fits[-1]) {
    expect_identical(coef(f), coef(fits[[1]]))
    expect_identical(vcov(f), vcov(fits[[1]]))
  }
  expect_identical(fits[[3]]$survey, list(weights = "wt", cluster = "psu", strata = "st"))
  expect_error(dp_ols(yc ~ x1, data = d, eps = 1, bounds = SB, weights = wt, cluster = c("a", "b")),
               "cluster must name one column")
  expect_error(dp_ols(yc ~ x1, data = d, eps = 1, bounds = SB, weights = wt, cluster = nope, levels = SL),
               "cluster must name a column")
  expect_error(dp_ols(yc ~ x1, data = d, eps = 1, bounds = SB, cluster = psu, levels = SL), "pass its weights")
  expect_error(dp_ols(yc ~ x1, data = d, eps = 1, bounds = SB, weights = wt, cluster = psu),
               "'psu' needs its levels declared")
})

test_that("dp_ols with weights is lm(weights =), and with a design svyglm's SEs, at eps = 1e9", {
  skip_if_no_dpstats()
  skip_if_not_installed("survey")
  d <- survey_sample()
  rows <- dp_ols(yc ~ x1, data = d, eps = 1e9, bounds = SB, weights = wt, random_state = 3)
  expect_equal(coef(rows), coef(lm(yc ~ x1, data = d, weights = wt)), tolerance = 1e-6)
  fit <- dp_ols(yc ~ x1, data = d, eps = 1e9, bounds = SB, levels = SL, weights = "wt", cluster = ~psu,
                strata = "st", random_state = 3)
  ref <- survey::svyglm(yc ~ x1, design = svy(d))
  expect_equal(coef(fit), coef(ref), tolerance = 1e-6)
  expect_equal(sqrt(diag(vcov(fit))), survey::SE(ref), tolerance = 1e-4)
})

test_that("dp_quantreg with weights is rq(weights =) within 2% at eps = 1e9", {
  skip_if_no_dpstats()
  d <- survey_sample()
  fit <- dp_quantreg(yc ~ x1, data = d, eps = 1e9, bounds = SB, weights = wt, random_state = 4)
  ref <- coef(quantreg::rq(yc ~ x1, data = d, weights = wt))
  expect_equal(coef(fit), ref, tolerance = 0.02)
  expect_identical(fit$survey, list(weights = "wt"))
})

test_that("a weighted fit says so: print, summary, glance, dpstats_table and the ledger", {
  skip_if_no_dpstats()
  d <- survey_sample()
  b <- dp_budget(eps = 3)
  fit <- dp_glm(y ~ x1, data = d, eps = 1, bounds = SB, levels = SL, weights = wt, cluster = psu, strata = st,
                random_state = 5, budget = b)
  plain <- dp_glm(y ~ x1, data = d, eps = 1, bounds = SB, random_state = 5, budget = b)
  expect_true(any(grepl("^Weights: +wt; PSUs: psu within strata st", capture.output(summary(fit)))))
  expect_true(any(grepl("^Weights: wt; PSUs: psu within strata st", capture.output(print(fit)))))
  expect_false(any(grepl("^Weights", capture.output(summary(plain)))))
  expect_false(any(grepl("weights=|cluster=", capture.output(summary(fit)))))  # named once, on its own line
  g <- generics::glance(fit)
  expect_identical(c(g$weights, g$cluster, g$strata), c("wt", "psu", "st"))
  expect_true(is.na(generics::glance(plain)$weights))
  tab <- dpstats_table(list(fit, plain), format = "text")
  expect_match(tab, "Weights +wt +none")
  expect_match(tab, "PSUs +psu within st +-")
  expect_identical(dp_ledger(b)$weights, c("wt; PSUs: psu within strata st", NA))
})
