# dpstats_coefplot(): the fits' estimates and intervals, drawn with base graphics
# from the fits' own values (coef() and confint()): no Python needed.

#' Coefficient plot of several differentially private fits
#'
#' Draws each fit's estimates with their intervals (\code{confint(fit, level = level)}:
#' bootstrap intervals where the fit carries replicates, normal ones otherwise; they
#' cover sampling error and privacy noise), one row per term, the fits side by side,
#' with base graphics. As \code{\link{dpstats_table}}, it is post-processing of the
#' released values: it needs neither Python nor the data.
#'
#' @param fits a \code{dpstats_fit}, or a list of them (named: the names label them in
#'   the legend); an element may itself be a list of fits, or several quantiles' fits from one \code{dp_quantreg} call.
#' @param level the intervals' confidence level.
#' @param drop terms not to draw (the intercept by default: its scale is another).
#' @param rename a named list or vector, term = label.
#' @param file NULL to draw on the current device, or the path of a PNG file to write.
#' @param width,height the PNG's size in inches (\code{height} grows with the terms by default).
#' @param main a title.
#' @return with \code{file}, the PNG's path; otherwise, invisibly, the data frame drawn
#'   (fit, label, term, estimate, lower, upper).
#' @examples
#' \dontrun{
#' data(engel, package = "quantreg")
#' b <- list(income = c(0, 5000), foodexp = c(0, 2500))
#' fits <- list(OLS = dp_ols(foodexp ~ income, data = engel, eps = 1, bounds = b),
#'              Median = dp_quantreg(foodexp ~ income, data = engel, tau = 0.5, eps = 5, bounds = b))
#' dpstats_coefplot(fits, file = tempfile(fileext = ".png"))
#' }
#' @export
dpstats_coefplot <- function(fits, level = 0.95, drop = "(Intercept)", rename = NULL, file = NULL, width = 7,
                             height = NULL, main = "") {
  flat <- .flatten_fits(fits)
  fl <- flat$fits
  rename <- .as_named_list(rename, "rename")
  terms <- setdiff(unique(unlist(lapply(fl, function(f) names(coef(f))))), drop)
  if (!length(terms)) stop("no term is left to draw (the intercept is dropped by default: drop = NULL)", call. = FALSE)
  labels <- if (is.null(flat$labels)) {
    vapply(seq_along(fl), function(j) {
      est <- if (identical(fl[[j]]$estimator, "quantreg")) sprintf("Quantile (q = %g)", fl[[j]]$tau[[1L]]) else "OLS"
      sprintf("(%d) %s", j, est)
    }, "")
  } else {  # a label shared by several quantiles' fits gets each one's q
    shared <- flat$labels %in% flat$labels[duplicated(flat$labels)]
    q <- vapply(fl, function(f) if (identical(f$estimator, "quantreg")) sprintf(" (q = %g)", f$tau[[1L]]) else "", "")
    ifelse(shared, paste0(flat$labels, q), flat$labels)
  }
  drawn <- do.call(rbind, lapply(seq_along(fl), function(j) {
    f <- fl[[j]]
    keep <- intersect(terms, names(coef(f)))
    ci <- confint(f, parm = keep, level = level)
    data.frame(fit = j, label = labels[[j]], term = keep, estimate = unname(coef(f)[keep]),
               lower = unname(ci[, 1L]), upper = unname(ci[, 2L]), stringsAsFactors = FALSE)
  }))
  if (!is.null(file)) {
    if (is.null(height)) height <- 1.8 + 0.45 * length(terms) * max(1, length(fl) / 3)
    grDevices::png(file, width = width, height = height, units = "in", res = 120)
    on.exit(grDevices::dev.off(), add = TRUE)
  }
  shown <- vapply(terms, function(t) if (is.null(rename[[t]])) t else as.character(rename[[t]]), "")
  k <- length(fl)
  offsets <- if (k > 1L) seq(-0.3, 0.3, length.out = k) else 0
  values <- unlist(drawn[c("estimate", "lower", "upper")])
  values <- c(values[is.finite(values)], 0)
  legend_rows <- ceiling(k / 2)
  old <- graphics::par(mar = c(4.5 + legend_rows, 1.5 + 0.6 * max(nchar(shown)), if (nzchar(main)) 3 else 1, 1))
  on.exit(graphics::par(old), add = TRUE, after = FALSE)  # before dev.off(): par() on no device opens Rplots.pdf
  graphics::plot.new()
  graphics::plot.window(xlim = range(values), ylim = c(length(terms) + 0.5, 0.5))
  graphics::abline(v = 0, lty = 2, col = "grey50")
  for (j in seq_len(k)) {
    d <- drawn[drawn$fit == j, ]
    y <- match(d$term, terms) + offsets[[j]]
    ok <- is.finite(d$lower) & is.finite(d$upper)
    graphics::segments(d$lower[ok], y[ok], d$upper[ok], y[ok], col = j, lwd = 2)
    graphics::points(d$estimate, y, pch = 14 + j, col = j)
  }
  graphics::axis(1)
  graphics::axis(2, at = seq_along(terms), labels = shown, las = 1)
  graphics::box()
  graphics::title(main = main, xlab = sprintf("estimate and %g%% interval: sampling error and privacy noise", 100 * level))
  # below the axis title, at the bottom of the device (outside the plot region: it hides no interval)
  graphics::legend(graphics::grconvertX(0.5, "ndc", "user"), graphics::grconvertY(0.01, "ndc", "user"),
                   xjust = 0.5, yjust = 0, xpd = NA, ncol = min(k, 2L), bty = "n", cex = 0.8,
                   legend = sprintf("%s, eps = %g", labels, vapply(fl, function(f) f$privacy$eps, 0)),
                   col = seq_len(k), pch = 14 + seq_len(k))
  if (!is.null(file)) return(file)
  invisible(drawn)
}
