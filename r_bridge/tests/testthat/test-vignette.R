# The vignette's R chunks run as written.

test_that("the vignette runs", {
  skip_if_no_dpstats()
  path <- file.path("..", "..", "vignettes", "dpstats.Rmd")
  skip_if_not(file.exists(path), "vignette source not found (installed tests)")
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
