# Data cross to Python column by column: type, values, NA mask, levels. Nothing
# is lost with numpy 2 (which reticulate 1.28 cannot use).

echo <- function(df) {
  cols <- lapply(names(df), function(v) dpstats:::.column_record(df[[v]], v))
  names(cols) <- names(df)
  dpstats:::.interop()$echo_columns(cols, nrow(df))$columns
}
is_null <- function(x) vapply(x, is.null, NA)

test_that("NA survives in double, integer, logical, character and factor columns", {
  skip_if_no_dpstats()
  df <- data.frame(
    d = c(1.5, NA, NaN, Inf, -2),
    i = c(1L, NA, .Machine$integer.max, -.Machine$integer.max, 0L),
    l = c(TRUE, NA, FALSE, TRUE, NA),
    s = c("a", NA, "", "\u00e9t\u00e9", "NA"),
    f = factor(c("lo", NA, "hi", "lo", "hi"), levels = c("lo", "mid", "hi")),
    o = factor(c("b", "a", NA, "a", "b"), levels = c("b", "a"), ordered = TRUE),
    stringsAsFactors = FALSE
  )
  out <- echo(df)
  expect_identical(out$d$dtype, "float64")
  expect_identical(unlist(out$d$na), c(FALSE, TRUE, TRUE, FALSE, FALSE))
  expect_equal(unlist(out$d$values[c(1, 4, 5)]), c(1.5, Inf, -2))

  expect_identical(out$i$dtype, "Int64")
  expect_identical(unlist(out$i$na), c(FALSE, TRUE, FALSE, FALSE, FALSE))
  expect_identical(as.integer(unlist(out$i$values)), c(1L, .Machine$integer.max, -.Machine$integer.max, 0L))

  expect_identical(out$l$dtype, "boolean")
  expect_identical(unlist(out$l$na), c(FALSE, TRUE, FALSE, FALSE, TRUE))
  expect_identical(unlist(out$l$values), c(TRUE, FALSE, TRUE))

  expect_identical(out$s$dtype, "string")
  expect_identical(unlist(out$s$na), c(FALSE, TRUE, FALSE, FALSE, FALSE))
  expect_identical(unlist(out$s$values), c("a", "", "\u00e9t\u00e9", "NA"))  # "" and "NA" are values, not NA

  expect_identical(out$f$dtype, "category")
  expect_identical(unlist(out$f$categories), c("lo", "mid", "hi"))  # unused level kept, R's order
  expect_false(out$f$ordered)
  expect_identical(unlist(out$f$na), c(FALSE, TRUE, FALSE, FALSE, FALSE))
  expect_identical(unlist(out$f$values), c("lo", "hi", "lo", "hi"))
  expect_true(out$o$ordered)
  expect_identical(unlist(out$o$categories), c("b", "a"))
})

test_that("length-one columns, dates and date-times cross too", {
  skip_if_no_dpstats()
  out <- echo(data.frame(x = 2.5, n = 3L, s = "z", stringsAsFactors = FALSE))
  expect_equal(out$x$values[[1]], 2.5)
  expect_identical(out$n$dtype, "Int64")
  expect_identical(out$s$values[[1]], "z")
  out <- echo(data.frame(day = as.Date(c("2020-01-01", NA)),
                         at = as.POSIXct(c(NA, "2020-01-01 12:00:00"), tz = "UTC")))
  expect_match(out$day$dtype, "^datetime64")
  expect_identical(unlist(out$day$na), c(FALSE, TRUE))
  expect_identical(out$day$values[[1]], "2020-01-01T00:00:00")
  expect_match(out$at$dtype, "UTC")
  expect_identical(unlist(out$at$na), c(TRUE, FALSE))
  expect_identical(out$at$values[[2]], "2020-01-01T12:00:00+00:00")
})

test_that("declared categorical columns are sent as their labels", {
  skip_if_no_dpstats()
  rec <- dpstats:::.column_record(c(4, 6, NA, 8), "cyl", as_character = TRUE)
  expect_identical(rec$type, "character")
  expect_identical(rec$values, c("4", "6", "", "8"))
  expect_identical(rec$na, c(FALSE, FALSE, TRUE, FALSE))
})

d <- mtcars
d$hp_i <- as.integer(d$hp)
d$am_l <- d$am == 1
d$gear_c <- as.character(d$gear)
d$gear_f <- factor(d$gear, levels = c(5, 4, 3))
d$my.wt <- d$wt
BB <- c(B, list(hp_i = c(50, 350), my.wt = c(1, 6)))

test_that("integer, logical, character and factor columns fit as lm fits them", {
  skip_if_no_dpstats()
  cases <- list(
    list(mpg ~ hp_i + wt, list()),
    list(mpg ~ wt + am_l, list()),
    list(mpg ~ wt + gear_c, list(gear_c = c("3", "4", "5"))),
    list(mpg ~ wt + gear_f, list(gear_f = c("3", "4", "5"))),
    list(mpg ~ my.wt + factor(cyl), list(cyl = c(4, 6, 8)))
  )
  for (case in cases) {
    f <- case[[1]]
    fit <- dp_ols(f, data = d, eps = 1e9, bounds = BB, levels = case[[2]], random_state = 11)
    ref <- coef(lm(f, transform(d, gear_f = factor(gear_f, levels = c("3", "4", "5")))))
    expect_identical(names(coef(fit)), names(ref), info = deparse(f))
    expect_equal(coef(fit), ref, tolerance = 1e-6, info = deparse(f))
  }
})

test_that("missing values reach Python as missing: imputed row-wise, or named for the curator", {
  skip_if_no_dpstats()
  dm <- d
  dm$my.wt[3] <- NA
  fit <- dp_ols(mpg ~ my.wt, data = dm, eps = 1e9, bounds = BB, random_state = 1)
  filled <- dm
  filled$my.wt[3] <- 3.5  # the midpoint of my.wt's bounds (1, 6)
  expect_equal(coef(fit), coef(lm(mpg ~ my.wt, filled)), tolerance = 1e-6, ignore_attr = TRUE)
  expect_error(dp_ols(mpg ~ my.wt, data = dm, eps = 1, bounds = BB, random_state = 1, missing = "raise"),
               "'my.wt' has a missing")

  curator <- function(...) dp_ols(..., eps = 1, missing = "raise")
  dm <- d
  dm$hp_i[5] <- NA
  expect_error(curator(mpg ~ hp_i, data = dm, bounds = BB), "'hp_i' has a missing")
  dm <- d
  dm$am_l[2] <- NA
  expect_error(curator(mpg ~ wt + am_l, data = dm, bounds = c(BB, list(am_l = c(0, 1)))), "'am_l' has a missing")
  dm <- d
  dm$gear_c[4] <- NA
  expect_error(curator(mpg ~ wt + gear_c, data = dm, bounds = BB, levels = list(gear_c = c("3", "4", "5"))),
               "'gear_c' has a missing")
  dm <- d
  dm$cyl[7] <- NA
  expect_error(curator(mpg ~ wt + factor(cyl), data = dm, bounds = BB, levels = L), "'cyl' has a missing")
  # by default the same rows are treated row-wise: no error, finite estimates
  expect_true(all(is.finite(coef(dp_ols(mpg ~ wt + factor(cyl), data = dm, eps = 1e9, bounds = BB, levels = L)))))
})

test_that("a value outside the declared levels is the first level, or for the curator an error showing no value", {
  skip_if_no_dpstats()
  args <- list(mpg ~ wt + factor(cyl), data = mtcars, eps = 1e9, bounds = B, levels = list(cyl = c(4, 6)))
  fit <- do.call(dp_ols, args)
  as_first <- transform(mtcars, cyl = ifelse(cyl == 8, 4, cyl))
  expect_equal(coef(fit), coef(lm(mpg ~ wt + factor(cyl), as_first)), tolerance = 1e-6, ignore_attr = TRUE)
  err <- tryCatch(do.call(dp_ols, c(args, missing = "raise")), error = conditionMessage)
  expect_match(err, "not among levels")
  expect_false(grepl("8", err, fixed = TRUE))
})

test_that("non-syntactic column names cross and come back with lm's names", {
  skip_if_no_dpstats()
  dd <- data.frame(y = mtcars$mpg, `my var` = mtcars$wt, `the cyl` = mtcars$cyl, g.x = as.character(mtcars$gear),
                   check.names = FALSE)
  f <- y ~ `my var` * factor(`the cyl`) + g.x
  # eps = 1e12: this 8-coefficient interaction design is too ill-conditioned for 1e-6 at eps = 1e9
  fit <- dp_ols(f, data = dd, eps = 1e12, bounds = list(y = c(10, 35), `my var` = c(1, 6)),
                levels = list(`the cyl` = c(4, 6, 8), g.x = c("3", "4", "5")), random_state = 1)
  ref <- lm(f, dd)
  expect_identical(fit$python$formula, "y ~ my_var * C(the_cyl) + g_x")
  expect_identical(names(coef(fit)), names(coef(ref)))
  expect_equal(coef(fit), coef(ref), tolerance = 1e-6)
  nd <- data.frame(`my var` = c(3, 2), `the cyl` = c(6, 8), g.x = c("4", "5"), check.names = FALSE)
  expect_equal(predict(fit, nd), predict(ref, nd), tolerance = 1e-6)
})
