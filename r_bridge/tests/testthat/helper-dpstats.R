# Shared declarations for the tests: public bounds and levels for mtcars.
B <- list(mpg = c(10, 35), wt = c(1, 6), hp = c(50, 350), qsec = c(14, 23))
L <- list(cyl = c(4, 6, 8), am = c(0, 1))

# Element-wise relative error, the strictest reading of "equal to 1e-6 relative".
max_rel_error <- function(x, ref) max(abs(x[names(ref)] - ref) / abs(ref))

# A fresh Rscript (no Python unless asked), with this session's library path.
run_rscript <- function(code, env = character()) {
  rscript <- file.path(R.home("bin"), "Rscript")
  script <- tempfile(fileext = ".R")
  writeLines(code, script)
  env <- c(paste0("R_LIBS=", paste(.libPaths(), collapse = ":")), env)
  out <- suppressWarnings(system2(rscript, script, stdout = TRUE, stderr = TRUE, env = env))
  list(status = if (is.null(attr(out, "status"))) 0L else attr(out, "status"), output = out)
}

# Skip (rather than fail) where the Python side is missing, as on a check machine without Python.
skip_if_no_dpstats <- function() {
  ok <- tryCatch({
    dpstats:::.interop()
    TRUE
  }, error = function(e) FALSE)
  if (!ok) testthat::skip("no Python with the dpstats package (see dpstats_python())")
}
