# Source this file (bash) to use the R package from any directory:
#   source r_bridge/env.sh && Rscript -e 'library(dpstats); ...'
# It sets what scripts/setup.sh installed: the Python with dpstats, the R library
# holding the R package, and the library path that makes a python started from R
# load its own libpython.
_dpstats_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export RETICULATE_PYTHON="$_dpstats_root/.venv/bin/python"
export R_LIBS="$_dpstats_root/r_bridge/lib${R_LIBS:+:$R_LIBS}"
_dpstats_pylib="$("$RETICULATE_PYTHON" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR") or "")' 2>/dev/null || true)"
export R_LD_LIBRARY_PATH="${_dpstats_pylib:+$_dpstats_pylib:}/usr/lib/R/lib:/usr/lib/x86_64-linux-gnu"
unset _dpstats_root _dpstats_pylib
