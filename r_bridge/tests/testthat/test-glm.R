# dp_glm from R: logit and probit as glm(family = binomial(link = ...)), their methods and dp_margeff.
# Seeded fits on seeded simulated data: every number is deterministic (no false failures). The eps = 1e9
# tolerance, 2% as in the Python package's limit tests, covers each of auto's binary mechanisms: DP Newton
# (chosen at that eps) releases glm's MLE, and the perturbed histogram's binned MLE differs from it by 0.1%
# here (its bins refine with eps: Lei 2011, Theorem 3).

simulated <- function(n = 6000L, link = "logit") {
  set.seed(40)
  d <- data.frame(x1 = runif(n), x2 = runif(n), g = sample(c("a", "b"), n, replace = TRUE),
                  stringsAsFactors = FALSE)
  eta <- -1 + 2 * d$x1 - d$x2 + 0.5 * (d$g == "b")
  d$y <- rbinom(n, 1L, if (link == "logit") plogis(eta) else pnorm(eta))
  d$yes <- d$y == 1L
  d
}
GB <- list(x1 = c(0, 1), x2 = c(0, 1))
GL <- list(g = c("a", "b"))
GF <- y ~ x1 + x2 + factor(g)

test_that("at eps = 1e9, dp_glm is glm's fit, with glm's names, for both links", {
  skip_if_no_dpstats()
  for (link in c("logit", "probit")) {
    d <- simulated(link = link)
    fit <- dp_glm(GF, family = binomial(link = link), data = d, eps = 1e9, bounds = GB, levels = GL,
                  random_state = 1)
    ref <- coef(glm(GF, family = binomial(link = link), data = d))
    expect_s3_class(fit, c("dpstats_glm", "dpstats_fit"))
    expect_identical(fit$estimator, link)
    expect_identical(names(coef(fit)), names(ref))
    expect_equal(coef(fit), ref, tolerance = 0.02, info = link)
    expect_identical(dimnames(vcov(fit)), list(names(ref), names(ref)))
    expect_identical(rownames(confint(fit)), names(ref))
    expect_identical(nobs(fit), 6000L)
    expect_identical(family(fit)$link, link)
  }
})

test_that("predict gives the linear index (glm's default) or the probability", {
  skip_if_no_dpstats()
  d <- simulated()
  fit <- dp_glm(GF, family = "binomial", data = d, eps = 2, bounds = GB, levels = GL, random_state = 2)
  new <- data.frame(x1 = c(0.1, 0.5, 0.9), x2 = c(0.2, 0.4, 0.6), g = c("a", "b", "a"))
  X <- cbind(1, new$x1, new$x2, new$g == "b")
  eta <- drop(X %*% coef(fit))
  expect_equal(unname(predict(fit, new)), eta, tolerance = 1e-12)
  expect_equal(unname(predict(fit, new, type = "link")), eta, tolerance = 1e-12)
  expect_equal(unname(predict(fit, new, type = "response")), plogis(eta), tolerance = 1e-12)
  probit <- dp_glm(GF, family = binomial(link = "probit"), data = d, eps = 2, bounds = GB, levels = GL,
                   random_state = 2)
  expect_equal(unname(predict(probit, new, type = "response")), pnorm(unname(predict(probit, new))),
               tolerance = 1e-12)
  expect_error(predict(fit, new, type = "terms"), "should be one of")
  expect_error(predict(fit), "needs newdata")
})

test_that("dp_margeff gives the average marginal effects, at eps = 1e9 glm's by hand", {
  skip_if_no_dpstats()
  d <- simulated()
  fit <- dp_glm(GF, data = d, eps = 1e9, bounds = GB, levels = GL, random_state = 3)
  me <- dp_margeff(fit)
  expect_s3_class(me, "data.frame")
  expect_identical(names(me), c("factor", "AME", "SE", "z", "p", "lower", "upper"))
  expect_identical(me$factor, c("x1", "x2", "factor(g)b"))
  ref <- glm(GF, family = binomial, data = d)
  by_hand <- mean(dlogis(predict(ref))) * coef(ref)[-1L]
  expect_equal(me$AME, unname(by_hand), tolerance = 0.02)
  expect_true(all(me$SE > 0 & me$lower < me$AME & me$AME < me$upper))
  expect_equal(me$z, me$AME / me$SE)
  narrow <- dp_margeff(fit, level = 0.5)
  expect_true(all(narrow$upper - narrow$lower < me$upper - me$lower))
  out <- capture.output(print(summary(fit)))
  expect_true(any(grepl("DP Logit Regression Results", out, fixed = TRUE)))
  expect_true(any(grepl("Family:          binomial (link = logit)", out, fixed = TRUE)))
  expect_true(any(grepl("Average marginal effects", out, fixed = TRUE)))
  expect_error(dp_margeff(dp_ols(x1 ~ x2, data = d, eps = 1, bounds = GB, random_state = 1)), "dpstats_glm")
})

test_that("margins_share is the marginal effects' part of eps; 0 spends nothing on them", {
  skip_if_no_dpstats()
  d <- simulated()
  fit <- dp_glm(GF, data = d, eps = 1, bounds = GB, levels = GL, margins_share = 0.2, random_state = 4)
  expect_equal(fit$privacy$split[["marginal effects"]], 0.2)
  expect_equal(fit$privacy$eps, 1)
  none <- dp_glm(GF, data = d, eps = 1, bounds = GB, levels = GL, margins_share = 0, random_state = 4)
  expect_null(none$margins)
  expect_false("marginal effects" %in% names(none$privacy$split))
  expect_error(dp_margeff(none), "spent nothing on marginal effects")
  expect_false(any(grepl("Average marginal effects", capture.output(print(summary(none))), fixed = TRUE)))
  expect_error(dp_glm(GF, data = d, eps = 1, bounds = GB, levels = GL, margins_share = 1.5), "margins_share")
  expect_error(dp_glm(GF, data = d, eps = 1, bounds = GB, levels = GL, margins_share = "a"), "margins_share")
})

test_that("a family other than binomial with a logit or probit link is refused", {
  skip_if_no_dpstats()
  d <- simulated(n = 200L)
  fit <- function(family) dp_glm(GF, family = family, data = d, eps = 1e9, bounds = GB, levels = GL)
  expect_error(fit(gaussian()), "binomial\\(link = \"logit\"\\).*not gaussian.*dp_ols")
  expect_error(fit(poisson), "not poisson\\(link = \"log\"\\)")
  expect_error(fit(binomial(link = "cloglog")), "not binomial\\(link = \"cloglog\"\\)")
  expect_error(fit(quasibinomial()), "not quasibinomial")
  expect_error(fit("nosuchfamily"), "not a family function")
  expect_error(fit(42), "family must be a family")
  expect_s3_class(fit(binomial), "dpstats_glm")
  expect_s3_class(fit("binomial"), "dpstats_glm")
})

test_that("the response may be logical or a comparison; a factor is refused", {
  skip_if_no_dpstats()
  d <- simulated()
  a <- dp_glm(y ~ x1 + x2, data = d, eps = 1, bounds = GB, random_state = 5)
  b <- dp_glm(yes ~ x1 + x2, data = d, eps = 1, bounds = GB, random_state = 5)
  expect_identical(coef(a), coef(b))  # TRUE/FALSE is 1/0: the same rows, the same release
  cmp <- dp_glm(I(x1 > 0.5) ~ x2, family = binomial(link = "probit"), data = d, eps = 1e9, bounds = GB,
                random_state = 6)
  expect_identical(cmp$response, "I(x1 > 0.5)")
  expect_equal(coef(cmp), coef(glm(I(x1 > 0.5) ~ x2, binomial(link = "probit"), d)), tolerance = 0.02)
  d$f <- factor(ifelse(d$yes, "yes", "no"))
  expect_error(dp_glm(f ~ x1, data = d, eps = 1, bounds = GB), "is a factor.*recode")
  expect_error(dp_ols(I(x1 > 0.5) ~ x2, data = d, eps = 1, bounds = GB), "not supported")
})

test_that("print, tidy and glance follow dp_ols; only plain values are kept", {
  skip_if_no_dpstats()
  d <- simulated()
  fit <- dp_glm(GF, family = binomial(link = "probit"), data = d, eps = 1, bounds = GB, levels = GL,
                random_state = 7)
  out <- capture.output(print(fit))
  expect_true(any(grepl("DP probit regression (dpstats)", out, fixed = TRUE)))
  kinds <- rapply(unclass(fit), function(v) typeof(v), how = "unlist")
  expect_false(any(kinds %in% c("environment", "externalptr", "closure")))
  skip_if_not_installed("broom")
  td <- broom::tidy(fit, conf.int = TRUE)
  expect_identical(names(td), c("term", "estimate", "std.error", "statistic", "p.value", "conf.low", "conf.high",
                                "bias", "status"))
  expect_identical(td$term, names(coef(fit)))
  gl <- broom::glance(fit)
  expect_identical(gl$link, "probit")
  expect_identical(gl$nobs, 6000L)
})

test_that("a budget is checked before any column is sent, and charged", {
  skip_if_no_dpstats()
  d <- simulated()
  b <- dp_budget(eps = 1.5)
  dp_glm(GF, data = d, eps = 1, bounds = GB, levels = GL, budget = b, margins_share = 0.1, random_state = 8)
  expect_equal(b$view$spent$eps, 1)
  expect_identical(dp_ledger(b)$estimator, "logit")
  expect_error(dp_glm(GF, family = binomial(link = "probit"), data = d, eps = 1, bounds = GB, levels = GL,
                      budget = b), class = "dpstats_BudgetExceeded")
  expect_equal(b$view$spent$eps, 1)
})

test_that("weights = names the survey-weight column, bare as in lm or as a string, its range in bounds", {
  skip_if_no_dpstats()
  d <- simulated()
  set.seed(41)
  d$wt <- runif(nrow(d), 1, 50)
  bounds <- c(GB, list(wt = c(0, 60)))
  bare <- dp_glm(GF, data = d, eps = 1e9, bounds = bounds, levels = GL, weights = wt, random_state = 9)
  named <- dp_glm(GF, data = d, eps = 1e9, bounds = bounds, levels = GL, weights = "wt", random_state = 9)
  expect_identical(coef(bare), coef(named))
  ref <- suppressWarnings(glm(GF, family = binomial(), data = d, weights = wt))  # non-integer weights warn
  expect_equal(coef(bare), coef(ref), tolerance = 1e-6)
  expect_error(dp_glm(GF, data = d, eps = 1, bounds = GB, levels = GL, weights = "wt"), "range declared")
  expect_error(dp_glm(GF, data = d, eps = 1, bounds = bounds, levels = GL, weights = "nope"), "must name a column")
})
