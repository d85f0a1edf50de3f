# Sourced by scripts/demo and scripts/test: make (or reuse) the project's virtual environment.
# MOSAIC_VENV picks another location; PYTHON picks the interpreter (>= 3.10).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${MOSAIC_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
    echo "==> creating virtual environment in $VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
fi
PY="$VENV/bin/python"
pip_install() { "$PY" -m pip install --quiet --disable-pip-version-check "$@"; }
