# A survey's weights and design (weights =, cluster =, strata =): named as lm names its weights, sent to Python
# under the columns' Python names (dpstats/frontend/survey.py).

.survey_args <- c("weights", "cluster", "strata")

# The column an argument names: a bare name (weights = wt, as in lm), a string, or a one-sided formula of one
# variable (cluster = ~psu, as svydesign's ids = ~psu); NULL when not given.
.design_column <- function(expr, what, env) {
  if (is.null(expr)) return(NULL)
  if (is.symbol(expr)) return(as.character(expr))
  if (is.call(expr) && identical(expr[[1L]], as.name("~")) && length(expr) == 2L && is.symbol(expr[[2L]])) {
    return(as.character(expr[[2L]]))
  }
  value <- tryCatch(eval(expr, env), error = function(e) NULL)  # a string held in a variable, or a formula
  if (inherits(value, "formula") && length(value) == 2L && is.symbol(value[[2L]])) return(as.character(value[[2L]]))
  if (is.character(value) && length(value) == 1L && !is.na(value)) return(value)
  stop(what, " must name one column of data: bare (", what, " = col), as a string or as ~col", call. = FALSE)
}

# The survey declaration of a call from its unevaluated arguments: list(weights, cluster, strata) of column
# names (NULL entries dropped), or NULL without weights (Python refuses a design without them).
.survey_columns <- function(weights, cluster, strata, env) {
  named <- list(weights = .design_column(weights, "weights", env), cluster = .design_column(cluster, "cluster", env),
                strata = .design_column(strata, "strata", env))
  named <- named[!vapply(named, is.null, NA)]
  if (length(named)) named else NULL
}

# The survey's columns added to those sent (the weights as numbers, the PSUs and strata as text, their levels
# declared: the cluster's codes, or the PSUs as (stratum, cluster) pairs of text), with the options naming them
# under their Python names and the declared levels of the design's columns; an error when a name is not a column
# of data.
.send_survey <- function(survey, data, columns, levels) {
  py <- .python_names(names(data))
  options <- list()
  design_levels <- list()
  for (what in names(survey)) {
    col <- survey[[what]]
    if (!col %in% names(data)) {
      stop(what, " must name a column of data", if (what == "weights") " (the survey weight, its range declared in bounds)",
           call. = FALSE)
    }
    py_col <- py[[col]]
    l <- levels[[col]]
    if (what != "weights" && !is.null(l)) {
      design_levels[[py_col]] <- if (is.list(l)) lapply(l, as.list) else as.list(as.character(l))
    }
    if (!py_col %in% names(columns)) columns[[py_col]] <- .column_record(data[[col]], col, as_character = what != "weights")
    options[[what]] <- py_col
  }
  list(columns = columns, options = options, levels = design_levels)
}

# The design as the fit keeps it: the R names of the columns (NULL when unweighted).
.survey_record <- function(survey) if (is.null(survey)) NULL else lapply(survey, identity)

# The design in words, as the Python summary's "Weights" line says it ("wt; PSUs: psu within strata st").
.survey_text <- function(survey) {
  if (is.null(survey$weights)) return(NA_character_)
  psus <- if (is.null(survey$cluster)) "rows" else survey$cluster
  within <- if (is.null(survey$strata)) "" else paste0(" within strata ", survey$strata)
  paste0(survey$weights, "; PSUs: ", psus, within)
}
