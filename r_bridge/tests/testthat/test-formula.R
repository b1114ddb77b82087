# Translation of R formulas to patsy, and of patsy's column names back to R's.
# Pure R: no Python is needed here.

tr <- function(f, levels = L, data = mtcars) dpstats:::.translate_formula(f, data, levels, environment(f))

test_that("R formulas translate faithfully to patsy", {
  cases <- list(
    list(mpg ~ wt + factor(cyl), "mpg ~ wt + C(cyl)"),
    list(mpg ~ wt * factor(cyl), "mpg ~ wt * C(cyl)"),
    list(mpg ~ wt:factor(cyl), "mpg ~ wt:C(cyl)"),
    list(mpg ~ wt + I(wt^2) + log(hp), "mpg ~ wt + I(wt ** 2) + np.log(hp)"),
    list(mpg ~ wt - 1, "mpg ~ wt - 1"),
    list(mpg ~ wt + 0, "mpg ~ wt + 0"),
    list(mpg ~ 0 + wt, "mpg ~ 0 + wt"),
    list(log(mpg) ~ sqrt(hp) + exp(wt), "np.log(mpg) ~ np.sqrt(hp) + np.exp(wt)"),
    list(mpg ~ (wt + hp)^2, "mpg ~ (wt + hp) ** 2"),
    list(mpg ~ wt / hp, "mpg ~ wt / hp"),
    list(mpg ~ I((wt + 1)^2 / 2) + I(-hp) + I(hp %% 7) + I(hp %/% 7), "mpg ~ I(((wt + 1) ** 2) / 2) + I(-hp) + I(hp % 7) + I(hp // 7)"),
    list(mpg ~ I(wt * 0.5) + I(hp * 1e-3), "mpg ~ I(wt * 0.5) + I(hp * 0.001)")
  )
  for (case in cases) expect_identical(tr(case[[1]])$python, case[[2]], info = deparse(case[[1]]))
})

test_that("numeric constants in I() come from the formula's environment", {
  k <- 2.5
  out <- tr(mpg ~ I(wt * k))
  expect_identical(out$python, "mpg ~ I(wt * 2.5)")
  expect_identical(out$constants, list(k = 2.5))
})

test_that("inline factor(x, levels = ...) declares the levels", {
  out <- tr(mpg ~ factor(cyl, levels = c(8, 6, 4)), levels = list())
  expect_identical(out$python, "mpg ~ C(cyl)")
  expect_equal(out$levels$cyl, c(8, 6, 4))
})

test_that("column names that are not Python identifiers are renamed, uniquely", {
  nm <- c("Sepal.Length", "my var", "1x", "np", "if", "Sepal_Length", "ok", "I")
  py <- dpstats:::.python_names(nm)
  expect_true(all(grepl("^[A-Za-z_][A-Za-z0-9_]*$", py)))
  expect_false(anyDuplicated(py) > 0)
  expect_identical(unname(py[c("ok", "Sepal_Length")]), c("ok", "Sepal_Length"))
  d <- data.frame(y = 1:3, Sepal.Length = 1:3, Sepal_Length = 1:3)
  out <- tr(y ~ Sepal.Length + Sepal_Length, levels = list(), data = d)
  expect_identical(out$python, "y ~ Sepal_Length_2 + Sepal_Length")
})

test_that("bare variables: logical and declared character columns are categorical, numeric are not", {
  d <- data.frame(y = 1:4, flag = c(TRUE, FALSE, TRUE, FALSE), g = c("a", "b", "a", "c"), x = 1:4 / 2)
  out <- tr(y ~ x + flag + g, levels = list(g = c("a", "b", "c")), data = d)
  expect_identical(out$python, "y ~ x + flag + g")
  expect_identical(out$bare_logical, "flag")
  expect_identical(out$bare_categorical, "g")
})

test_that("patsy column names map back to R's model.matrix names", {
  out <- tr(mpg ~ wt * factor(cyl) + I(wt^2) + log(hp))
  py <- c("Intercept", "C(cyl)[T.6]", "C(cyl)[T.8]", "wt", "wt:C(cyl)[T.6]", "wt:C(cyl)[T.8]",
          "I(wt ** 2)", "np.log(hp)", "C(cyl)[4]:wt", "something(else)")
  expect_identical(
    dpstats:::.r_term_names(py, out$leaves),
    c("(Intercept)", "factor(cyl)6", "factor(cyl)8", "wt", "wt:factor(cyl)6", "wt:factor(cyl)8",
      "I(wt^2)", "log(hp)", "factor(cyl)4:wt", "something(else)")
  )
})

test_that("unsupported or data-dependent terms are refused with an explanation", {
  d <- mtcars
  d$g <- as.character(d$gear)
  d$f <- factor(d$gear)
  expect_error(tr(mpg ~ ., data = d), "write the variables out")
  expect_error(tr(mpg ~ poly(wt, 2)), "data-dependent")
  expect_error(tr(mpg ~ scale(wt)), "data-dependent")
  expect_error(tr(mpg ~ factor(gear)), "needs declared levels")
  expect_error(tr(mpg ~ wt %in% hp), "%in% is not supported")
  expect_error(tr(mpg ~ foo(wt)), "not supported")
  expect_error(tr(mpg ~ nothere), "not a column of data")
  expect_error(tr(mpg ~ I(wt * nothere)), "neither a column of data nor a numeric constant")
  expect_error(tr(factor(cyl) ~ wt), "response must be numeric")
  expect_error(tr(mpg ~ factor(cyl, labels = c("a", "b", "c"))), "only factor\\(x\\)")
})

test_that("declarations, not R column types, decide what a bare variable is", {
  d <- mtcars
  d$g <- as.character(d$gear)  # what read.csv makes of a numeric column with one text cell
  d$f <- factor(d$gear)
  for (v in c("g", "f", "gear")) {  # undeclared: numeric (Python maps each cell row-wise)
    out <- tr(as.formula(paste("mpg ~", v)), data = d)
    expect_identical(out$bare_categorical, character(), info = v)
  }
  out <- tr(mpg ~ cyl)  # declared levels (L has cyl): categorical, as factor(cyl) would be
  expect_identical(out$bare_categorical, "cyl")
})

test_that("bounds names may be columns or formula expressions", {
  out <- tr(mpg ~ log(hp))
  expect_identical(dpstats:::.translate_bound_name("hp", mtcars, out, environment()), "hp")
  expect_identical(dpstats:::.translate_bound_name("log(hp)", mtcars, out, environment()), "np.log(hp)")
  expect_identical(dpstats:::.translate_bound_name("I(wt^2)", mtcars, out, environment()), "I(wt ** 2)")
  expect_identical(dpstats:::.translate_bound_name("my.x", mtcars, out, environment()), "my_x")
  expect_error(dpstats:::.translate_bound_name("foo(hp)", mtcars, out, environment()), "not supported")
})

test_that("cross-row expressions are refused before any Python call, row-wise ones translate", {
  cross <- c("mpg ~ I(wt - mean(wt))", "mpg ~ I(wt / max(wt))", "mpg ~ scale(wt)", "mpg ~ rank(wt)",
             "mpg ~ cumsum(wt)", "mpg ~ lag(wt)", "mpg ~ I(wt / sum(wt))", "mpg ~ wt[1]", "mpg ~ I(wt$a)")
  for (f in cross) expect_error(tr(as.formula(f)), "not supported|data-dependent", info = f)
  for (f in c("mpg ~ log(hp)", "mpg ~ I(wt^2)", "mpg ~ I(2 * wt + 1)", "mpg ~ wt + factor(cyl)")) {
    expect_type(tr(as.formula(f))$python, "character")
  }
})
