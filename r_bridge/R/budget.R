# A project's privacy budget from R: dp_budget(), its ledger, its file.
#
# The account is kept by the Python package (dpstats/privacy/budget.py): an R budget is an
# environment holding the budget's JSON state, which each fit sends to Python and
# gets back spent, and a view of plain R values for printing without Python.
# An environment, so that dp_ols(..., budget = b) spends b itself, as in Python.

#' A privacy budget shared by several fits
#'
#' \code{dp_budget()} makes a budget; passed as \code{budget =} to \code{\link{dp_ols}} or
#' \code{\link{dp_quantreg}}, it is charged with what each fit reports, and a fit that could
#' overspend it is refused before any data are sent to Python. The rules are those of the
#' Python package's \code{PrivacyBudget}: basic composition by default (eps add up, and
#' deltas add up); with \code{rho} (or \code{accounting = "zcdp"}) a zCDP account, where rhos
#' add up, a pure eps-DP fit counts eps^2/2 (Bun and Steinke 2016, Proposition 1.4) and the
#' (eps, delta) target, if given, is checked through the zCDP conversion. A fit that stops
#' with an error spends nothing; a fit whose mechanism failed has spent its budget.
#'
#' The budget is changed in place (it is an environment): after
#' \code{dp_ols(..., budget = b)}, \code{b} holds the spend. \code{dp_ledger(b)} (or
#' \code{as.data.frame(b)}) is one row per release, for a paper's appendix.
#' \code{dp_budget_save(b, path)} writes the budget's JSON file, the same file as the Python
#' package's \code{PrivacyBudget.save}; \code{dp_budget_load(path)} reads one back, and the
#' reloaded budget goes on refusing what would overspend it. The eps of a fit never defaults
#' to what is left. Fits that share a budget must run one after another (no locking).
#'
#' @param eps,delta the total (eps, delta)-DP guarantee of every fit charged to the budget
#'   (delta = 0: a pure budget).
#' @param rho the total rho of a zCDP account.
#' @param accounting \code{NULL} (basic without rho, zCDP with), \code{"basic"} or \code{"zcdp"}.
#' @param budget,x a \code{dpstats_budget}.
#' @param path the budget's JSON file.
#' @param ... unused.
#' @return \code{dp_budget} and \code{dp_budget_load}: a \code{dpstats_budget};
#'   \code{dp_ledger}: a data frame (time, formula, estimator, q, method, notion, eps, delta,
#'   rho, unit: "row" or the column of \code{unit =}, weights: a weighted fit's survey design or NA, failed);
#'   \code{dp_budget_save}: \code{path}, invisibly.
#' @examples
#' \dontrun{
#' data(engel, package = "quantreg")
#' b <- dp_budget(eps = 7.5)
#' bounds <- list(income = c(0, 5000), foodexp = c(0, 2500))
#' fit <- dp_ols(foodexp ~ income, data = engel, eps = 1, bounds = bounds, budget = b)
#' med <- dp_quantreg(foodexp ~ income, data = engel, tau = c(0.25, 0.5, 0.75), eps = 6,
#'                    bounds = bounds, budget = b)
#' b                     # spent 7 of 7.5
#' dp_ledger(b)
#' dp_budget_save(b, "paper-budget.json")
#' b <- dp_budget_load("paper-budget.json")  # in a later session
#' }
#' @export
dp_budget <- function(eps = NULL, delta = 0, rho = NULL, accounting = NULL) {
  .check_number(eps, "eps", null_ok = TRUE)
  .check_number(delta, "delta")
  .check_number(rho, "rho", null_ok = TRUE)
  if (!is.null(accounting) && !(is.character(accounting) && length(accounting) == 1L)) {
    stop("accounting must be NULL, \"basic\" or \"zcdp\"", call. = FALSE)
  }
  out <- .interop()$new_budget(eps = eps, delta = delta, rho = rho, accounting = accounting)
  if (!isTRUE(out$ok)) stop("dpstats: ", out$message, call. = FALSE)
  .update_budget(new.env(parent = emptyenv()), out$budget)
}

.check_number <- function(x, name, null_ok = FALSE) {
  if (is.null(x) && null_ok) return(invisible(NULL))
  if (!is.numeric(x) || length(x) != 1L || is.na(x)) stop(name, " must be one number", call. = FALSE)
  invisible(NULL)
}

# Store a budget payload from Python (its JSON state and a view of plain values).
.update_budget <- function(budget, payload) {
  budget$state <- payload$state
  budget$view <- payload$view
  class(budget) <- "dpstats_budget"
  budget
}

.check_budget <- function(budget) {
  if (!is.null(budget) && !inherits(budget, "dpstats_budget")) {
    stop("budget must be NULL or a budget made by dp_budget() or dp_budget_load()", call. = FALSE)
  }
  budget
}

#' @rdname dp_budget
#' @export
dp_ledger <- function(budget) {
  .check_budget(budget)
  if (is.null(budget)) stop("budget must be a budget made by dp_budget()", call. = FALSE)
  cols <- budget$view$ledger
  chr <- function(v) vapply(v, function(x) if (is.null(x)) NA_character_ else as.character(x), "", USE.NAMES = FALSE)
  num <- function(v) vapply(v, function(x) if (is.null(x)) NA_real_ else as.numeric(x), 0, USE.NAMES = FALSE)
  data.frame(
    time = as.POSIXct(sub("\\+00:00$", "", chr(cols$time)), tz = "UTC", format = "%Y-%m-%dT%H:%M:%S"),
    formula = chr(cols$formula),
    estimator = chr(cols$estimator),
    q = chr(cols$q),
    method = chr(cols$method),
    notion = chr(cols$notion),
    eps = num(cols$eps),
    delta = num(cols$delta),
    rho = num(cols$rho),
    unit = if (is.null(cols$unit)) rep("row", length(cols$eps)) else chr(cols$unit),
    weights = if (is.null(cols$weights)) rep(NA_character_, length(cols$eps)) else chr(cols$weights),
    failed = vapply(cols$failed, isTRUE, NA, USE.NAMES = FALSE),
    stringsAsFactors = FALSE
  )
}

#' @rdname dp_budget
#' @param row.names,optional unused (the generic's arguments).
#' @export
as.data.frame.dpstats_budget <- function(x, row.names = NULL, optional = FALSE, ...) dp_ledger(x)

#' @rdname dp_budget
#' @export
print.dpstats_budget <- function(x, ...) {
  cat(paste(strwrap(x$view$description, width = 0.95 * getOption("width")), collapse = "\n"), "\n", sep = "")
  ledger <- dp_ledger(x)
  if (nrow(ledger)) {
    cat("\n")
    print(ledger[, c("formula", "estimator", "q", "method", "notion", "eps", "delta", "rho", "failed")])
  }
  invisible(x)
}

#' @rdname dp_budget
#' @export
dp_budget_save <- function(budget, path) {
  .check_budget(budget)
  if (is.null(budget)) stop("budget must be a budget made by dp_budget()", call. = FALSE)
  if (!is.character(path) || length(path) != 1L) stop("path must be one file name", call. = FALSE)
  tmp <- tempfile(pattern = paste0(".", basename(path), "."), tmpdir = dirname(path))
  writeLines(budget$state, tmp, useBytes = TRUE)
  if (!file.rename(tmp, path)) {
    unlink(tmp)
    stop("could not write the budget to ", path, call. = FALSE)
  }
  invisible(path)
}

#' @rdname dp_budget
#' @export
dp_budget_load <- function(path) {
  if (!is.character(path) || length(path) != 1L || !file.exists(path)) {
    stop("no budget file at ", if (is.character(path)) path[[1L]] else "path", call. = FALSE)
  }
  text <- paste(readLines(path, warn = FALSE, encoding = "UTF-8"), collapse = "\n")
  out <- .interop()$budget_from_json(text)
  if (!isTRUE(out$ok)) stop("dpstats: ", out$message, call. = FALSE)
  .update_budget(new.env(parent = emptyenv()), out$budget)
}
