# Finding and starting the Python that has the dpstats package.
#
# Order: options(dpstats.python = ...), then the RETICULATE_PYTHON environment
# variable, then the .venv of the dpstats checkout this package was installed
# from (bash scripts/setup.sh installs it into <checkout>/r_bridge/lib).
# Python starts on the first call that needs it (dp_ols, dp_quantreg), never
# when the package loads: printing or summarising a saved fit needs no Python.

.dpstats_state <- new.env(parent = emptyenv())

#' The Python that dpstats uses
#'
#' Says which Python the package will use and why: \code{options(dpstats.python = ...)}
#' first, then the \code{RETICULATE_PYTHON} environment variable, then the \code{.venv} of
#' the dpstats checkout the package was installed from (\code{bash scripts/setup.sh}
#' installs it into \code{<checkout>/r_bridge/lib}). Python starts on the first fit, not
#' when the package loads.
#'
#' @return a list with \code{path} and \code{source}, or \code{NULL} when none is found.
#' @export
dpstats_python <- function() {
  opt <- getOption("dpstats.python")
  if (!is.null(opt) && nzchar(opt)) {
    return(list(path = path.expand(opt), source = "options(dpstats.python)"))
  }
  env <- Sys.getenv("RETICULATE_PYTHON")
  if (nzchar(env)) {
    return(list(path = path.expand(env), source = "RETICULATE_PYTHON"))
  }
  venv <- .checkout_python()
  if (!is.null(venv)) {
    return(list(path = venv, source = "the .venv of the dpstats checkout"))
  }
  NULL
}

# <checkout>/.venv/bin/python when this package lives in <checkout>/r_bridge/lib
# (installed) or <checkout>/r_bridge (loaded from source).
.checkout_python <- function() {
  dir <- system.file(package = "dpstats")
  if (!nzchar(dir)) return(NULL)
  for (i in 1:4) {
    dir <- dirname(dir)
    candidate <- file.path(dir, ".venv", "bin", "python")
    if (file.exists(candidate) && file.exists(file.path(dir, "dpstats", "r_interop", "__init__.py"))) {
      return(candidate)
    }
  }
  NULL
}

# A Python built with a shared libpython (pyenv, python.org builds) must find
# its own libpython; R puts the system library directory first on the search
# path, so a `python` that R or reticulate starts as a child process would load
# the system's libpython with this interpreter's standard library. Putting the
# interpreter's lib directory first fixes that for child processes (it does not
# change what R itself has loaded).
.prefer_python_libdir <- function(python) {
  real <- normalizePath(python, mustWork = FALSE)
  libdir <- file.path(dirname(dirname(real)), "lib")
  if (length(Sys.glob(file.path(libdir, "libpython*.so*"))) == 0L) return(invisible(FALSE))
  current <- Sys.getenv("LD_LIBRARY_PATH")
  parts <- if (nzchar(current)) strsplit(current, ":", fixed = TRUE)[[1]] else character()
  if (length(parts) && identical(parts[[1]], libdir)) return(invisible(TRUE))
  Sys.setenv(LD_LIBRARY_PATH = paste(c(libdir, setdiff(parts, libdir)), collapse = ":"))
  invisible(TRUE)
}

.python_help <- paste0(
  "Point dpstats at the Python that has the dpstats package: ",
  "options(dpstats.python = \"/path/to/dpstats/.venv/bin/python\") or the RETICULATE_PYTHON ",
  "environment variable (bash scripts/setup.sh in the dpstats checkout creates that .venv)."
)

# The Python module dpstats.r_interop, imported once per R session.
.interop <- function() {
  if (!is.null(.dpstats_state$interop)) return(.dpstats_state$interop)
  if (!requireNamespace("reticulate", quietly = TRUE)) {
    stop("dpstats needs the R package reticulate (Debian: apt-get install r-cran-reticulate).", call. = FALSE)
  }
  py <- dpstats_python()
  if (!reticulate::py_available(initialize = FALSE)) {
    if (is.null(py)) stop("dpstats cannot find its Python. ", .python_help, call. = FALSE)
    if (!file.exists(py$path)) {
      stop("dpstats: the Python given by ", py$source, " does not exist: ", py$path, ". ",
           .python_help, call. = FALSE)
    }
    .prefer_python_libdir(py$path)
    # reticulate 1.28 looks at RETICULATE_PYTHON before anything else; without it, a
    # pyproject.toml in the working directory makes it warn about Poetry.
    Sys.setenv(RETICULATE_PYTHON = py$path)
    tryCatch(
      reticulate::use_python(py$path, required = TRUE),
      error = function(e) stop("dpstats could not use the Python given by ", py$source, " (", py$path,
                               "): ", conditionMessage(e), call. = FALSE)
    )
  }
  mod <- tryCatch(
    reticulate::import("dpstats.r_interop", convert = TRUE),
    error = function(e) {
      where <- if (reticulate::py_available()) reticulate::py_config()$python else "(none)"
      stop("dpstats: the Python in use (", where, ") cannot import dpstats.r_interop: ",
           conditionMessage(e), "\n", .python_help, call. = FALSE)
    }
  )
  .dpstats_state$interop <- mod
  mod
}
