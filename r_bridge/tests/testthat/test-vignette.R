# The vignette's R chunks run as written.

test_that("the vignette runs", {
  skip_if_no_dpstats()
  # the source tree's vignettes/ (testthat::test_dir on r_bridge/tests/testthat), else the copy R CMD build
  # puts in inst/doc, installed as doc/ (R CMD check runs the installed tests)
  path <- file.path("..", "..", "vignettes", "dpstats.Rmd")
  if (!file.exists(path)) path <- system.file("doc", "dpstats.Rmd", package = "dpstats")
  expect_true(file.exists(path))
  lines <- readLines(path)
  starts <- grep("^```\\{r", lines)
  ends <- grep("^```\\s*$", lines)
  chunks <- vapply(starts, function(s) {
    e <- min(ends[ends > s])
    header <- lines[[s]]
    if (grepl("eval\\s*=\\s*FALSE|include\\s*=\\s*FALSE", header)) return("")
    paste(lines[(s + 1L):(e - 1L)], collapse = "\n")
  }, "")
  expect_gt(sum(nzchar(chunks)), 3)
  env <- new.env(parent = globalenv())
  out <- capture.output(for (chunk in chunks) eval(parse(text = chunk), envir = env))
  expect_true(any(grepl("DP OLS Regression Results", out)))
})
