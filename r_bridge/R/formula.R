# R formula -> patsy formula, faithfully, and patsy column names -> R's names.
#
#   factor(x), as.factor(x)  -> C(x)       levels from levels = list(x = ...) or factor(x, levels = ...)
#   I(expr)                  -> I(expr')   ^ -> **, %% -> %, %/% -> //, log(x) -> np.log(x), ...
#   log(x), sqrt(x), exp(x)  -> np.log(x), np.sqrt(x), np.exp(x)   (also log2, log10, log1p, abs)
#   a:b, a*b, a/b, (a+b)^2   -> a:b, a * b, a / b, (a + b) ** 2
#   -1, +0, 0 +              -> - 1, + 0, 0 +
#   I(y > 0) as the response -> I(y > 0)    of a binary model only (binary = TRUE): < <= > >= == != on numbers
# A bare variable is numeric, unless it is logical (R's lm and patsy both make
# it a FALSE/TRUE categorical) or has declared levels (a character or factor
# column). Data-dependent terms (scale, poly, ns, bs, ...) are refused: they
# make every row's design value depend on the other rows.
# Column names that are not Python identifiers (Sepal.Length, `my var`) are
# renamed on the way to Python (Sepal_Length) and named back on the way home.

.math_functions <- c("log", "log2", "log10", "log1p", "exp", "sqrt", "abs")
.data_dependent <- c("scale", "poly", "ns", "bs", "splines::ns", "splines::bs", "s", "lo", "center", "standardize")
.binary_ops <- c("+" = "+", "-" = "-", "*" = "*", "/" = "/", "^" = "**", "%%" = "%", "%/%" = "//")
.comparisons <- c("<", "<=", ">", ">=", "==", "!=")
.python_reserved <- c(
  "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
  "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in",
  "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
  "np", "numpy", "C", "I", "Q", "center", "standardize", "scale", "bs", "cr", "cc", "te",
  "Treatment", "Poly", "Sum", "Helmert", "Diff"
)

.label <- function(e) paste(deparse(e, width.cutoff = 500L, backtick = TRUE), collapse = " ")

# Python names for the data columns `names` (valid identifiers, unique, not reserved).
.python_names <- function(names) {
  ok <- grepl("^[A-Za-z_][A-Za-z0-9_]*$", names) & !(names %in% .python_reserved)
  out <- names
  taken <- names[ok]
  for (i in which(!ok)) {
    base <- gsub("[^A-Za-z0-9_]", "_", names[[i]])
    if (!grepl("^[A-Za-z_]", base)) base <- paste0("v_", base)
    if (base %in% .python_reserved) base <- paste0(base, "_")
    candidate <- base
    k <- 1L
    while (candidate %in% taken || candidate %in% names[ok]) {
      k <- k + 1L
      candidate <- paste0(base, "_", k)
    }
    out[[i]] <- candidate
    taken <- c(taken, candidate)
  }
  setNames(out, names)
}

.py_number <- function(x) {
  if (length(x) != 1L || !is.numeric(x) || !is.finite(x)) {
    stop("formula constants must be finite numbers", call. = FALSE)
  }
  x <- as.numeric(x)
  s <- if (x == round(x) && abs(x) < 1e15) {
    format(x, scientific = FALSE)
  } else {
    short <- formatC(x, digits = 15, format = "g")
    if (as.numeric(short) == x) short else formatC(x, digits = 17, format = "g")
  }
  s <- trimws(s)
  if (x < 0) paste0("(", s, ")") else s
}

# The column kind that decides how a bare variable enters the model.
.column_kind <- function(x) {
  if (is.factor(x)) return("factor")
  if (is.logical(x)) return("logical")
  if (is.character(x)) return("character")
  if (is.numeric(x)) return("numeric")
  "other"
}

# Translate `formula` for data with columns `data` (only names and column types are
# read: no value of the data). `levels` are the declared levels (named list);
# `env` is where numeric constants used in I() are looked up. `binary = TRUE` is for
# dp_glm's binary response: a comparison such as I(hours > 0) may be the response, and a
# factor may not (glm's "first level is a failure" reads the levels, which are declared here).
.translate_formula <- function(formula, data, levels, env = environment(formula), binary = FALSE) {
  if (!inherits(formula, "formula") || length(formula) != 3L) {
    stop("formula must be a two-sided formula such as y ~ x", call. = FALSE)
  }
  if (is.null(env)) env <- globalenv()
  data_names <- names(data)
  pyname <- .python_names(data_names)
  st <- new.env(parent = emptyenv())
  st$leaves <- list()
  st$factor_vars <- character()   # used inside factor(): sent as character
  st$bare_categorical <- character()  # declared-level variables used bare: sent as character
  st$bare_logical <- character()
  st$constants <- list()
  st$levels <- levels
  st$vars <- character()

  use_var <- function(name) {
    if (!(name %in% st$vars)) st$vars <- c(st$vars, name)
    pyname[[name]]
  }
  register <- function(code, label, categorical = FALSE, levels_py = NULL, levels_r = NULL) {
    if (!(code %in% vapply(st$leaves, `[[`, "", "code"))) {
      st$leaves[[length(st$leaves) + 1L]] <- list(
        code = code, label = label, categorical = categorical,
        levels_py = as.character(levels_py), levels_r = as.character(levels_r)
      )
    }
    code
  }

  expr <- function(e) {
    if (is.numeric(e)) return(.py_number(e))
    if (is.symbol(e)) {
      name <- as.character(e)
      if (name %in% data_names) {
        kind <- .column_kind(data[[name]])
        if (kind != "numeric" || name %in% names(st$levels)) {
          stop("variable '", name, "' is used in arithmetic but is not numeric", call. = FALSE)
        }
        return(use_var(name))
      }
      value <- if (exists(name, envir = env)) get(name, envir = env) else NULL
      if (is.numeric(value) && length(value) == 1L && is.finite(value)) {
        st$constants[[name]] <- as.numeric(value)
        return(.py_number(value))
      }
      if (identical(name, "pi")) return(.py_number(pi))
      stop("'", name, "' in the formula is neither a column of data nor a numeric constant", call. = FALSE)
    }
    if (!is.call(e) || !is.symbol(e[[1L]])) {
      stop("cannot translate the expression ", .label(e), call. = FALSE)
    }
    op <- as.character(e[[1L]])
    wrap <- function(child) {
      s <- expr(child)
      if (is.call(child) && as.character(child[[1L]]) %in% names(.binary_ops)) paste0("(", s, ")") else s
    }
    if (op == "(") return(paste0("(", expr(e[[2L]]), ")"))
    if (op %in% names(.binary_ops)) {
      if (length(e) == 2L && op %in% c("+", "-")) return(paste0(op, wrap(e[[2L]])))
      return(paste(wrap(e[[2L]]), .binary_ops[[op]], wrap(e[[3L]])))
    }
    if (op %in% .math_functions) {
      if (length(e) != 2L || !is.null(names(e)) && any(nzchar(names(e)))) {
        stop(op, "() in a formula takes one unnamed argument: ", .label(e), call. = FALSE)
      }
      return(paste0("np.", op, "(", expr(e[[2L]]), ")"))
    }
    stop("the function ", op, "() is not supported in a dpstats formula (", .label(e), "); ",
         "use arithmetic with I(), log/log2/log10/log1p/exp/sqrt/abs, or factor()", call. = FALSE)
  }

  declared_levels <- function(var, e) {
    op <- as.character(e[[1L]])
    args <- as.list(e)[-1L]
    arg_names <- names(args)
    if (is.null(arg_names)) arg_names <- rep("", length(args))
    inline <- NULL
    if (!(arg_names[[1L]] %in% c("", "x"))) stop("cannot translate ", .label(e), call. = FALSE)
    for (j in seq_along(args)[-1L]) {
      if (arg_names[[j]] != "levels" || op != "factor") {
        stop("only factor(x) or factor(x, levels = ...) is supported in a formula, not ", .label(e), call. = FALSE)
      }
      inline <- eval(args[[j]], env)
    }
    lev <- if (!is.null(inline)) inline else st$levels[[var]]
    if (is.null(lev)) {
      stop("the categorical term ", .label(e), " needs declared levels: pass levels = list(", var,
           " = c(...)) or write factor(", var, ", levels = c(...)). dpstats never reads levels from ",
           "the data (the set of values present is itself private)", call. = FALSE)
    }
    if (!is.null(inline)) st$levels[[var]] <- inline
    lev
  }

  leaf <- function(e, response = FALSE) {
    if (is.symbol(e)) {
      name <- as.character(e)
      if (name == ".") stop("'.' in a formula is not supported: write the variables out", call. = FALSE)
      if (!(name %in% data_names)) stop("variable '", name, "' is not a column of data", call. = FALSE)
      code <- use_var(name)
      kind <- .column_kind(data[[name]])
      # Declarations decide what a variable is, never the values: a column read by read.csv is
      # character when one cell is text, so its R type is not a schema fact. Declared levels make a
      # categorical term; anything else is numeric, and Python maps each cell row-wise.
      if (name %in% names(st$levels) && !response) {
        lev <- as.character(st$levels[[name]])
        st$bare_categorical <- union(st$bare_categorical, name)
        return(register(code, .label(e), TRUE, lev, lev))
      }
      if (kind == "logical" && !response) {
        st$bare_logical <- union(st$bare_logical, name)
        return(register(code, .label(e), TRUE, c("False", "True"), c("FALSE", "TRUE")))
      }
      if (kind == "other") stop("column '", name, "' has an unsupported type for a formula term", call. = FALSE)
      if (binary && response && kind == "factor") {
        stop("the response '", name, "' is a factor; dp_glm takes a 0/1 or logical response, or a comparison ",
             "such as I(count > 0): recode it first, for example data$", name, "01 <- data$", name, " == \"yes\"",
             call. = FALSE)
      }
      return(register(code, .label(e)))
    }
    if (is.numeric(e)) stop("a number cannot be a formula term here: ", .label(e), call. = FALSE)
    if (!is.call(e) || !is.symbol(e[[1L]])) stop("cannot translate the term ", .label(e), call. = FALSE)
    op <- as.character(e[[1L]])
    if (op %in% c("factor", "as.factor")) {
      if (response) stop("the response must be numeric", call. = FALSE)
      var <- e[[2L]]
      if (!is.symbol(var) || !(as.character(var) %in% data_names)) {
        stop(op, "() in a formula must wrap a column of data: ", .label(e), call. = FALSE)
      }
      var <- as.character(var)
      lev <- as.character(declared_levels(var, e))
      st$factor_vars <- union(st$factor_vars, var)
      return(register(paste0("C(", use_var(var), ")"), .label(e), TRUE, lev, lev))
    }
    if (op == "I" && binary && response && .is_comparison(e[[2L]])) {
      cmp <- e[[2L]]
      operand <- function(x) {
        if (is.call(x) && as.character(x[[1L]]) %in% names(.binary_ops)) paste0("(", expr(x), ")") else expr(x)
      }
      code <- paste0("I(", operand(cmp[[2L]]), " ", as.character(cmp[[1L]]), " ", operand(cmp[[3L]]), ")")
      return(register(code, .label(e)))
    }
    if (op == "I") return(register(paste0("I(", expr(e[[2L]]), ")"), .label(e)))
    if (op %in% .math_functions) return(register(expr(e), .label(e)))
    if (op %in% .data_dependent) {
      stop("the term ", .label(e), " is data-dependent (it looks at the whole column), which would make each ",
           "row's value depend on the others; use fixed transforms with declared bounds", call. = FALSE)
    }
    if (op %in% c("offset", "strata", "cluster")) stop(op, "() is not supported in a dpstats formula", call. = FALSE)
    stop("the term ", .label(e), " is not supported: use variables, factor(), I(), log/exp/sqrt/abs and ",
         "interactions", call. = FALSE)
  }

  rhs <- function(e) {
    if (is.numeric(e)) {
      if (e %in% c(0, 1)) return(as.character(as.integer(e)))
      stop("the number ", e, " cannot be a formula term", call. = FALSE)
    }
    if (is.call(e) && is.symbol(e[[1L]])) {
      op <- as.character(e[[1L]])
      if (op == "+" && length(e) == 3L) return(paste(rhs(e[[2L]]), "+", rhs(e[[3L]])))
      if (op == "+" && length(e) == 2L) return(rhs(e[[2L]]))
      if (op == "-" && length(e) == 3L) return(paste(rhs(e[[2L]]), "-", rhs(e[[3L]])))
      if (op == "-" && length(e) == 2L) return(paste0("-", rhs(e[[2L]])))
      if (op == ":") return(paste0(rhs(e[[2L]]), ":", rhs(e[[3L]])))
      if (op == "*") return(paste(rhs(e[[2L]]), "*", rhs(e[[3L]])))
      if (op == "/") return(paste(rhs(e[[2L]]), "/", rhs(e[[3L]])))
      if (op == "(") return(paste0("(", rhs(e[[2L]]), ")"))
      if (op == "^") {
        if (!is.numeric(e[[3L]])) stop("(...)^k in a formula needs a number k", call. = FALSE)
        return(paste(rhs(e[[2L]]), "**", .py_number(e[[3L]])))
      }
      if (op == "%in%") stop("%in% is not supported in a dpstats formula; write the interaction with ':'", call. = FALSE)
      if (op == "|") stop("'|' is not supported in a dpstats formula", call. = FALSE)
    }
    leaf(e)
  }

  lhs_code <- leaf(formula[[2L]], response = TRUE)
  response_leaf <- st$leaves[[length(st$leaves)]]
  st$leaves <- list()
  rhs_code <- rhs(formula[[3L]])
  list(
    python = paste(lhs_code, "~", rhs_code),
    vars = st$vars,
    pyname = pyname[st$vars],
    leaves = st$leaves,
    response = response_leaf,
    factor_vars = st$factor_vars,
    bare_categorical = st$bare_categorical,
    bare_logical = st$bare_logical,
    constants = st$constants,
    levels = st$levels
  )
}

.is_comparison <- function(e) {
  is.call(e) && is.symbol(e[[1L]]) && as.character(e[[1L]]) %in% .comparisons && length(e) == 3L
}

# The patsy code of a bounds name: a column (renamed as in the translation) or an
# expression such as "log(hp)" or "I(wt^2)", translated like a formula term.
.translate_bound_name <- function(name, data, tr, env) {
  if (name %in% names(data)) return(.python_names(names(data))[[name]])
  e <- tryCatch(str2lang(name), error = function(err) NULL)
  # A plain name that is not a column is passed on unchanged (a bounds list may be
  # shared between models); an undeclared variable is still reported by name.
  if (is.null(e) || is.symbol(e)) return(.python_names(name)[[1L]])
  one <- .translate_formula(as.formula(call("~", e, 1), env = env), data, tr$levels, env)
  sub("[[:space:]]*~.*$", "", one$python)
}

# patsy column names -> R's names, piece by piece. Interactions join pieces with
# ':'; a piece is a numeric term's code ("wt", "np.log(hp)") or a categorical
# code with its level ("C(cyl)[T.6]" full-rank "C(cyl)[6]"), and becomes R's
# label ("wt", "log(hp)", "factor(cyl)6"). Returns one character vector of R
# pieces per term (NULL where a name cannot be parsed).
.piece_map <- function(leaves) {
  map <- c(Intercept = "(Intercept)")
  for (lf in leaves) {
    if (isTRUE(lf$categorical)) {
      for (i in seq_along(lf$levels_py)) {
        r <- paste0(lf$label, lf$levels_r[[i]])
        map[paste0(lf$code, "[T.", lf$levels_py[[i]], "]")] <- r
        map[paste0(lf$code, "[", lf$levels_py[[i]], "]")] <- r
      }
    } else {
      map[lf$code] <- lf$label
    }
  }
  map
}

.term_pieces <- function(terms, map) {
  keys <- names(map)[order(-nchar(names(map)))]
  one <- function(term) {
    pos <- 1L
    out <- character()
    n <- nchar(term)
    while (pos <= n) {
      rest <- substring(term, pos)
      hit <- NULL
      for (k in keys) {
        if (startsWith(rest, k) && (nchar(rest) == nchar(k) || substr(rest, nchar(k) + 1L, nchar(k) + 1L) == ":")) {
          hit <- k
          break
        }
      }
      if (is.null(hit)) return(NULL)
      out <- c(out, map[[hit]])
      pos <- pos + nchar(hit) + 1L
    }
    out
  }
  lapply(terms, one)
}

# R names for patsy's column names (patsy's own name where a piece is unknown).
.r_term_names <- function(python_terms, leaves) {
  pieces <- .term_pieces(python_terms, .piece_map(leaves))
  vapply(seq_along(python_terms), function(i) {
    if (is.null(pieces[[i]])) python_terms[[i]] else paste(pieces[[i]], collapse = ":")
  }, "")
}

# The same column named the same by patsy and R up to the order of the pieces of
# an interaction (R orders them as the variables first appear in the formula).
.piece_key <- function(pieces) vapply(pieces, function(p) if (is.null(p)) NA_character_ else paste(sort(p), collapse = "\r"), "")
