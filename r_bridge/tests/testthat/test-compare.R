# dp_compare_methods(): the plan before spending, from the declarations alone (no data).
# Deterministic: the predictions are interpolated in the shipped error table.

engel_bounds <- list(income = c(0, 5000), foodexp = c(0, 2500))

test_that("dp_compare_methods predicts every mechanism and names auto's choice, as Python does", {
  skip_if_no_dpstats()
  plan <- dp_compare_methods(foodexp ~ income, n = 235, eps = 1, bounds = engel_bounds)
  expect_s3_class(plan, "dpstats_comparison")
  expect_true(all(c("noisystats", "theilsen", "histogram") %in% plan$method))
  expect_identical(plan$method[plan$auto == "<- auto"], attr(plan, "chosen"))
  python <- reticulate::import("dpstats")$compare_methods(
    "foodexp ~ income", n = 235L, eps = 1, bounds = list(income = c(0, 5000), foodexp = c(0, 2500))
  )
  expect_identical(attr(plan, "chosen"), python$chosen)
  expect_equal(plan$error, unlist(python$table$error$tolist()), tolerance = 1e-12)
  expect_match(paste(capture.output(print(plan)), collapse = "\n"), "Plan for n = 235, eps = 1")
})

test_that("dp_compare_methods says before spending when no mechanism is usable (8 coefficients, n = 534)", {
  skip_if_no_dpstats()
  plan <- dp_compare_methods(
    log(wage) ~ education + experience + I(experience^2) + factor(gender) + factor(union) + factor(married) +
      factor(sector),
    n = 534, eps = 1,
    bounds = list(wage = c(1, 45), education = c(2, 18), experience = c(0, 55)),
    levels = list(gender = c("male", "female"), union = c("no", "yes"), married = c("no", "yes"),
                  sector = c("manufacturing", "construction", "other"))
  )
  expect_false(attr(plan, "usable"))
  expect_match(attr(plan, "message"), "No mechanism can give a usable answer")
  expect_true(all(is.na(plan$error[plan$applies != "yes"])))
})

test_that("dp_compare_methods checks its arguments and the declarations before Python", {
  skip_if_no_dpstats()
  expect_error(dp_compare_methods(y ~ factor(g), n = 100, eps = 1, bounds = list(y = c(0, 1))), "levels")
  expect_error(dp_compare_methods(y ~ x, n = "many", eps = 1), "n must be")
  expect_error(dp_compare_methods(y ~ x, n = 100, eps = 1, estimator = "lad"), "should be one of")
})
