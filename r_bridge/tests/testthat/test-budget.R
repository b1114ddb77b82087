# dp_budget from R: spending, refusal before any column is read, the ledger, save and load.
# Seeded fits only (no statistical assertion, no false failures). Data: quantreg's engel. Least squares below
# eps = 1 names its method: there auto's plan refuses engel before spending (tests/test_refusal.py).

ENGEL_BOUNDS <- list(income = c(0, 5000), foodexp = c(0, 2400))  # not a calibrated real design: these test the mechanics

engel_data <- function() {
  skip_if_not_installed("quantreg")
  e <- new.env()
  data("engel", package = "quantreg", envir = e)
  e$engel
}

# A data frame that records every access to it: [[, $, [, names, dim, as.data.frame, as.list.
spy_frame <- function(df) {
  log <- new.env(parent = emptyenv())
  log$calls <- character()
  structure(df, class = c("dpstats_spy", "data.frame"), spy_log = log)
}
for (generic in c("[[", "$", "[", "names", "dim", "as.data.frame", "as.list")) {
  local({
    g <- generic
    registerS3method(g, "dpstats_spy", function(x, ...) {
      log <- attr(x, "spy_log", exact = TRUE)
      log$calls <- c(log$calls, g)
      NextMethod()
    })
  })
}
spied <- function(x) attr(x, "spy_log", exact = TRUE)$calls

test_that("fits spend what they report; several quantiles are charged once", {
  skip_if_no_dpstats()
  engel <- engel_data()
  b <- dp_budget(eps = 2)
  fit <- dp_ols(foodexp ~ income, data = engel, eps = 0.5, bounds = ENGEL_BOUNDS, method = "noisystats", budget = b,
                random_state = 1)
  q <- dp_quantreg(foodexp ~ income, data = engel, tau = c(0.25, 0.5, 0.75), eps = 1, bounds = ENGEL_BOUNDS,
                   budget = b, random_state = 2)
  ledger <- dp_ledger(b)
  expect_s3_class(ledger, "data.frame")
  expect_identical(names(ledger), c("time", "formula", "estimator", "q", "method", "notion", "eps", "delta",
                                    "rho", "unit", "weights", "failed"))
  expect_identical(ledger$eps, c(fit$privacy$eps, q$privacy$eps))
  expect_identical(ledger$eps, c(0.5, 1))
  expect_identical(ledger$formula, c("foodexp ~ income", "foodexp ~ income"))
  expect_identical(ledger$q, c(NA, "0.25, 0.5, 0.75"))
  expect_identical(ledger$method, c(fit$method, q$method))
  expect_s3_class(ledger$time, "POSIXct")
  expect_identical(as.data.frame(b), ledger)
  expect_equal(b$view$spent$eps, 1.5)
  expect_equal(b$view$remaining$eps, 0.5)
  expect_true(any(grepl("Spent in 2 releases: eps = 1.5", capture.output(print(b)))))
})

test_that("an overspending fit is refused before any column is read, the budget unchanged", {
  skip_if_no_dpstats()
  engel <- engel_data()
  b <- dp_budget(eps = 1)
  dp_ols(foodexp ~ income, data = engel, eps = 0.75, bounds = ENGEL_BOUNDS, budget = b, random_state = 3)
  before <- b$state
  spy <- spy_frame(engel)
  expect_error(dp_ols(foodexp ~ income, data = spy, eps = 0.5, bounds = ENGEL_BOUNDS, budget = b),
               "refused before any data were read")
  expect_identical(spied(spy), character())
  expect_error(dp_quantreg(foodexp ~ income, data = spy, tau = c(0.25, 0.75), eps = 0.5, bounds = ENGEL_BOUNDS,
                           budget = b), "eps would reach 1.25 > 1")
  expect_identical(spied(spy), character())
  expect_identical(b$state, before)
  # the control: with budget left, the same call reads the frame
  dp_ols(foodexp ~ income, data = spy, eps = 0.25, bounds = ENGEL_BOUNDS, method = "noisystats", budget = b,
         random_state = 4)
  expect_true(length(spied(spy)) > 0L)
  expect_equal(b$view$remaining$eps, 0)
})

test_that("a fit that stops for another reason spends nothing; a failed release has spent", {
  skip_if_no_dpstats()
  engel <- engel_data()
  b <- dp_budget(eps = 1, delta = 1e-5)
  before <- b$state
  expect_error(dp_ols(foodexp ~ income, data = engel, eps = 0.5, bounds = list(income = c(0, 5000)), budget = b),
               "foodexp")
  expect_error(dp_ols(foodexp ~ income, data = engel, eps = 0.5, bounds = ENGEL_BOUNDS, method = "nope", budget = b),
               "unknown method")
  expect_identical(b$state, before)
  fit <- dp_ols(foodexp ~ income, data = engel, eps = 0.5, delta = 1e-6, method = "tukey", budget = b,
                random_state = 0)
  expect_true(fit$failed)  # PTR refuses on engel at this eps (seeded)
  ledger <- dp_ledger(b)
  expect_identical(ledger$failed, TRUE)
  expect_identical(c(ledger$eps, ledger$delta), c(0.5, 1e-6))
  expect_error(dp_ols(foodexp ~ income, data = engel, eps = 1, bounds = ENGEL_BOUNDS, budget = 2),
               "budget must be NULL or a budget")
})

test_that("the ledger shows the formula as written in R", {
  skip_if_no_dpstats()
  b <- dp_budget(eps = 1)
  dp_ols(mpg ~ wt + factor(cyl), data = mtcars, eps = 0.5, bounds = B, levels = L, method = "noisystats",
         budget = b, random_state = 5)
  expect_identical(dp_ledger(b)$formula, "mpg ~ wt + factor(cyl)")
  expect_identical(dp_ledger(b)$method, "noisystats")
})

test_that("save and load keep the account, in the Python package's file format, and go on refusing", {
  skip_if_no_dpstats()
  engel <- engel_data()
  path <- tempfile(fileext = ".json")
  b <- dp_budget(eps = 1)
  dp_ols(foodexp ~ income, data = engel, eps = 0.75, bounds = ENGEL_BOUNDS, budget = b, random_state = 6)
  expect_identical(dp_budget_save(b, path), path)
  expect_identical(list.files(dirname(path), pattern = basename(path), all.files = TRUE), basename(path))
  back <- dp_budget_load(path)  # a later session
  expect_identical(back$state, b$state)
  expect_identical(dp_ledger(back), dp_ledger(b))
  spy <- spy_frame(engel)
  expect_error(dp_ols(foodexp ~ income, data = spy, eps = 0.5, bounds = ENGEL_BOUNDS, budget = back),
               "refused before any data were read")
  expect_identical(spied(spy), character())
  python <- reticulate::import("dpstats.privacy.budget")$PrivacyBudget$load(path)  # the same file from Python
  expect_equal(python$spent$eps, 0.75)
  if (requireNamespace("jsonlite", quietly = TRUE)) {
    expect_identical(jsonlite::fromJSON(path)$format, "dpstats.PrivacyBudget")
  }
  writeLines("{\"format\": \"something else\"}", path)
  expect_error(dp_budget_load(path), "not a dpstats budget")
  expect_error(dp_budget_load(tempfile()), "no budget file")
})

test_that("a zCDP account from R: rhos add up, a pure fit counts eps^2/2, (eps, delta) fits are refused", {
  skip_if_no_dpstats()
  engel <- engel_data()
  b <- dp_budget(eps = 2, delta = 1e-6, accounting = "zcdp")
  dp_ols(foodexp ~ income, data = engel, eps = 0.3, bounds = ENGEL_BOUNDS, method = "noisystats", budget = b,
         random_state = 7)
  z <- dp_ols(foodexp ~ income, data = engel, eps = 0.5, delta = 1e-6, method = "gradient", variant = "zcdp",
              bounds = ENGEL_BOUNDS, budget = b, random_state = 8)
  ledger <- dp_ledger(b)
  expect_identical(ledger$notion, c("pure", "zcdp"))
  expect_identical(ledger$rho[[2]], z$privacy$rho)
  expect_true(is.na(ledger$rho[[1]]))
  expect_equal(b$view$spent$rho, 0.3^2 / 2 + z$privacy$rho, tolerance = 1e-14)
  expect_true(b$view$spent$eps <= 2)
  expect_error(dp_ols(foodexp ~ income, data = engel, eps = 0.1, delta = 1e-7, method = "gradient",
                      variant = "approx", bounds = ENGEL_BOUNDS, budget = b), "no zCDP guarantee")
  expect_error(dp_budget(eps = 1, accounting = "zcdp"), "needs delta > 0")
  expect_error(dp_budget(), "a budget needs eps")
})

test_that("a saved budget prints without Python", {
  skip_if_no_dpstats()
  b <- dp_budget(eps = 1)
  dp_ols(mpg ~ wt, data = mtcars, eps = 0.5, bounds = B, method = "noisystats", budget = b, random_state = 9)
  path <- tempfile(fileext = ".rds")
  saveRDS(b, path)
  code <- sprintf('
    options(dpstats.python = "/nonexistent/python")
    library(dpstats)
    b <- readRDS("%s")
    print(b)
    print(dp_ledger(b)$eps)
    stopifnot(!reticulate::py_available(initialize = FALSE))
    cat("WITHOUT-PYTHON-OK\\n")', path)
  res <- run_rscript(code, env = c("RETICULATE_PYTHON="))
  expect_identical(res$status, 0L, info = paste(res$output, collapse = "\n"))
  expect_true(any(grepl("WITHOUT-PYTHON-OK", res$output)))
  expect_true(any(grepl("Spent in 1 release: eps = 0.5", res$output)))
})
