# Sourced by scripts/demo and scripts/test: make (or reuse) the project's virtual environment.
# MOSAIC_VENV picks another location; PYTHON picks the interpreter (>= 3.10).
# Installs go through uv (from PyPI, into the venv: it resolves and installs several times
# faster than pip); MOSAIC_INSTALLER=pip uses pip instead. PyTorch always comes through pip
# (pip_install_with_pip): `pip install torch==2.13.0` is what selects the CPU build.
set -euo pipefail
# say: a phase's heading with the seconds since the script started (CI reads its phases' times).
say() { printf '==> [%5d s] %s\n' "$SECONDS" "$*"; }
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${MOSAIC_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
    say "creating virtual environment in $VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
fi
PY="$VENV/bin/python"
pip_install_with_pip() { "$PY" -m pip install --quiet --disable-pip-version-check "$@"; }
if [ "${MOSAIC_INSTALLER:-uv}" = "uv" ] && ! "$PY" -m uv --version >/dev/null 2>&1; then
    "$PY" -m pip install --quiet --disable-pip-version-check "uv>=0.5" \
        || echo "warning: could not install uv; installing with pip"
fi
if [ "${MOSAIC_INSTALLER:-uv}" = "uv" ] && "$PY" -m uv --version >/dev/null 2>&1; then
    pip_install() { "$PY" -m uv pip install --quiet --python "$PY" "$@"; }
else
    pip_install() { "$PY" -m pip install --quiet --disable-pip-version-check "$@"; }
fi
