# Refusing before spending from R: auto's refusal is an R condition of class
# dpstats_RefusedBeforeSpending, raised before any column is sent, with nothing charged;
# force = TRUE fits and its summary says so. Deterministic: the verdict reads public facts only.

engel_bounds <- list(income = c(0, 5000), foodexp = c(0, 2500))

test_that("a target no mechanism meets is refused as a classed condition, and the budget is not charged", {
  skip_if_no_dpstats()
  data(engel, package = "quantreg")
  budget <- dp_budget(eps = 5)
  err <- tryCatch(
    dp_ols(foodexp ~ income, data = engel, eps = 1, bounds = engel_bounds, budget = budget, target = 0.05,
           random_state = 1),
    dpstats_RefusedBeforeSpending = function(e) e
  )
  expect_s3_class(err, "dpstats_error")
  expect_match(conditionMessage(err), "refused before spending")
  expect_match(conditionMessage(err), "Plan for n = 235, eps = 1", fixed = TRUE)
  expect_equal(budget$view$spent$eps, 0)
  forced <- dp_ols(foodexp ~ income, data = engel, eps = 1, bounds = engel_bounds, target = 0.05, force = TRUE,
                   random_state = 1)
  expect_match(paste(capture.output(print(summary(forced))), collapse = " "), "plan advised against it")
})
