#!/usr/bin/env bash
# Make the Letta server's own virtual environment (its pins clash with ours).
#   bash scripts/setup_letta.sh [.venv-letta]
# Idempotent: an environment that already imports letta and pgserver is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${1:-.venv-letta}"
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import letta, pgserver" 2>/dev/null; then
  echo "letta environment ready: $VENV"; exit 0
fi
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q --no-deps -r scripts/letta-requirements.lock
"$VENV/bin/python" -c "import letta, pgserver; print('letta', letta.__version__)"
