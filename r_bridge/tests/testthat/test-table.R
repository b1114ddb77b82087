# dpstats_table(), knitr::kable(broom::tidy(fit)) and dpstats_coefplot() on quantreg's uis data
# (575 patients of the UIS drug treatment study). The fits are seeded: the assertions are deterministic.

uis_fits <- local({
  cached <- NULL
  function() {
    if (is.null(cached)) {
      data("uis", package = "quantreg", envir = environment())
      # public bounds: log days to relapse (follow-up under 1200 days), the study's ages, Beck's 0-63 scale
      b <- list(Y = c(0, 7.5), AGE = c(18, 60), BECK = c(0, 63), TREAT = c(0, 1))
      cached <<- list(
        ols = dp_ols(Y ~ TREAT + AGE + BECK, data = uis, eps = 1, bounds = b, random_state = 1),
        fe = dp_ols(Y ~ TREAT + AGE + BECK + factor(IV), data = uis, eps = 1, bounds = b, levels = list(IV = 1:3),
                    random_state = 2),
        median = dp_quantreg(Y ~ TREAT + AGE + BECK, data = uis, tau = 0.5, eps = 1, bounds = b, random_state = 3)
      )
    }
    cached
  }
})

fe_block <- list("IV-use FE" = "factor(IV)")

test_that("dpstats_table puts each fit's estimate over its standard error, with the privacy rows", {
  skip_if_no_dpstats()
  skip_if_not_installed("quantreg")
  fits <- uis_fits()
  tex <- dpstats_table(unname(fits), format = "latex", collapse = fe_block)
  expect_s3_class(tex, "dpstats_table")
  expect_identical(attr(tex, "format"), "latex")
  lines <- strsplit(unclass(tex), "\n", fixed = TRUE)[[1]]
  se <- function(f, t) sprintf("(%.3f)", sqrt(diag(vcov(f)))[[t]])
  est <- function(f, t) sub("^-", "$-$", sprintf("%.3f", coef(f)[[t]]))
  for (t in c("TREAT", "AGE", "BECK")) {
    row <- which(startsWith(lines, paste0(t, " & ")))
    expect_length(row, 1L)
    expect_identical(lines[[row]], paste0(t, " & ", paste(vapply(fits, est, "", t = t), collapse = " & "), " \\\\"))
    expect_identical(lines[[row + 1L]], paste0(" & ", paste(vapply(fits, se, "", t = t), collapse = " & "), " \\\\"))
  }
  expect_false(any(grepl("factor(IV)", lines, fixed = TRUE)))  # the block is one row
  expect_true("IV-use FE & no & yes & no \\\\" %in% lines)
  expect_true("N (public) & 575 & 575 & 575 \\\\" %in% lines)
  expect_true("$\\varepsilon$ & 1 & 1 & 1 \\\\" %in% lines)
  expect_true("Estimator & OLS & OLS & Quantile (q = 0.5) \\\\" %in% lines)
  expect_true(any(grepl("they cover sampling error and privacy noise", lines, fixed = TRUE)))
  expect_true(all(c("\\toprule", "\\midrule", "\\bottomrule") %in% lines))
})

test_that("every format has the same cells, and intervals are confint()'s", {
  skip_if_no_dpstats()
  skip_if_not_installed("quantreg")
  fits <- uis_fits()
  se <- sprintf("(%.3f)", sqrt(diag(vcov(fits$fe)))[["BECK"]])
  for (fmt in c("markdown", "html", "text")) {
    out <- unclass(dpstats_table(fits, format = fmt, collapse = fe_block))
    expect_true(grepl(se, out, fixed = TRUE))
    expect_true(grepl("IV-use FE", out, fixed = TRUE))
  }
  md <- strsplit(unclass(dpstats_table(fits, format = "markdown", collapse = fe_block)), "\n")[[1]]
  expect_identical(md[[4]], "|  | ols | fe | median |")  # the list's names label the columns
  expect_true("| IV-use FE | no | yes | no |" %in% md)
  ci <- confint(fits$ols, level = 0.9)  # a bootstrap interval where the fit carries replicates
  expect_false(is.null(fits$ols$replicates))
  md <- unclass(dpstats_table(fits$ols, format = "markdown", below = "ci", level = 0.9))
  expect_true(grepl(sprintf("[%.3f, %.3f]", ci["AGE", 1], ci["AGE", 2]), md, fixed = TRUE))
  nested <- strsplit(unclass(dpstats_table(list(a = fits$ols, b = list(fits$median, fits$median)),
                                           format = "markdown")), "\n")[[1]]
  expect_identical(nested[[4]], "|  | a | b | b |")  # a list of fits (several quantiles) labelled once
  expect_error(dpstats_table(list(fits$ols, "x")), "element 2 of fits is not a dpstats_fit")
  expect_error(dpstats_table(fits, drop = "income"), "unknown term")
})

test_that("the LaTeX table compiles with pdflatex", {
  skip_if_no_dpstats()
  skip_if_not_installed("quantreg")
  if (!nzchar(Sys.which("pdflatex"))) skip("pdflatex is missing: scripts/setup.sh installs Debian's texlive")
  dir <- tempfile()
  dir.create(dir)
  tex <- dpstats_table(uis_fits(), format = "latex", collapse = fe_block, stars = TRUE, title = "Relapse (UIS)")
  writeLines(c("\\documentclass{article}", "\\usepackage{booktabs}", "\\begin{document}", unclass(tex),
               "\\end{document}"), file.path(dir, "t.tex"))
  out <- system2("pdflatex", c("-halt-on-error", "-interaction=nonstopmode", "-output-directory", dir,
                               file.path(dir, "t.tex")), stdout = TRUE, stderr = TRUE)
  expect_null(attr(out, "status"))
  expect_true(file.exists(file.path(dir, "t.pdf")))
})

test_that("knitr::kable(broom::tidy(fit)) and a knitr document show the fit", {
  skip_if_no_dpstats()
  skip_if_not_installed("quantreg")
  skip_if_not_installed("knitr")
  skip_if_not_installed("broom")
  fit <- uis_fits()$ols
  k <- knitr::kable(broom::tidy(fit, conf.int = TRUE), digits = 4)
  expect_s3_class(k, "knitr_kable")
  lines <- as.character(k)
  expect_true(startsWith(lines[[1]], "|term"))
  expect_true(any(startsWith(lines, sprintf("|BECK        | %8.4f|", coef(fit)[["BECK"]]))))
  latex <- as.character(knitr::kable(broom::tidy(fit), format = "latex", booktabs = TRUE))
  expect_true(grepl("\\toprule", latex, fixed = TRUE) && grepl("TREAT", latex, fixed = TRUE))
  asis <- knitr::knit_print(dpstats_table(fit, format = "markdown"))
  expect_s3_class(asis, "knit_asis")
})

test_that("dpstats_coefplot draws coef() and confint() with base graphics, and writes a PNG", {
  skip_if_no_dpstats()
  skip_if_not_installed("quantreg")
  fits <- uis_fits()
  grDevices::pdf(NULL)
  drawn <- dpstats_coefplot(fits, level = 0.9)
  grDevices::dev.off()
  expect_identical(unique(drawn$term), c("TREAT", "AGE", "BECK", "factor(IV)2", "factor(IV)3"))
  for (j in seq_along(fits)) {
    d <- drawn[drawn$fit == j, ]
    expect_equal(d$estimate, unname(coef(fits[[j]])[d$term]))
    expect_equal(cbind(d$lower, d$upper), unname(confint(fits[[j]], parm = d$term, level = 0.9)))
  }
  png <- tempfile(fileext = ".png")
  expect_identical(dpstats_coefplot(fits, file = png), png)
  expect_identical(readBin(png, "raw", 8L), as.raw(c(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)))
  expect_gt(file.size(png), 10000)
})

test_that("several quantiles from one dp_quantreg call make one column each, alone or in a list", {
  skip_if_no_dpstats()
  skip_if_not_installed("quantreg")
  data("engel", package = "quantreg", envir = environment())
  b <- list(income = c(0, 5000), foodexp = c(0, 2500))
  qs <- dp_quantreg(foodexp ~ income, data = engel, tau = c(0.25, 0.75), eps = 4, bounds = b, random_state = 4)
  ols <- dp_ols(foodexp ~ income, data = engel, eps = 1, bounds = b, random_state = 5)
  alone <- dpstats_table(qs, format = "text")
  expect_identical(unclass(alone), unclass(dpstats_table(unname(qs$fits), format = "text")))
  expect_true(grepl("q = 0.25", alone, fixed = TRUE) && grepl("q = 0.75", alone, fixed = TRUE))
  mixed <- dpstats_table(list(OLS = ols, Quantiles = qs), format = "markdown")
  expect_identical(
    unclass(mixed),
    unclass(dpstats_table(list(OLS = ols, Quantiles = unname(qs$fits)), format = "markdown"))
  )
  grDevices::pdf(NULL)
  drawn <- dpstats_coefplot(list(OLS = ols, Quantiles = qs))
  grDevices::dev.off()
  expect_equal(drawn$estimate, unname(c(coef(ols)["income"], coef(qs)["income", ])))
  expect_identical(drawn$label, c("OLS", "Quantiles (q = 0.25)", "Quantiles (q = 0.75)"))  # each its own q
})
