#!/usr/bin/env bash
# The course's single entry point: ./check.sh p08 | p08-fast | list | test   (./check.sh -h for all options)
# First run: builds a virtual environment from requirements.txt (in .venv, or in $COURSE_VENV),
# unless the current python3 already has every requirement. Later runs start at once.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SYS_PY="${PYTHON:-python3}"

has_requirements() {  # does this interpreter already have what requirements.txt asks for?
  "$1" - "$ROOT/requirements.txt" <<'PY' >/dev/null 2>&1
import re, sys
from importlib import metadata
for line in open(sys.argv[1]):
    name = re.split(r"[<>=!~;\[ ]", line.split("#")[0].strip())[0]
    if name:
        metadata.version(name)
import torch
major, minor = (int(x) for x in torch.__version__.split(".")[:2])
assert (2, 4) <= (major, minor)
PY
}

if [ -z "${COURSE_VENV:-}" ] && has_requirements "$SYS_PY"; then
  PY="$SYS_PY"
else
  VENV="${COURSE_VENV:-$ROOT/.venv}"
  STAMP="$("$SYS_PY" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$ROOT/requirements.txt")"
  if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/.requirements.sha256" 2>/dev/null)" != "$STAMP" ]; then
    echo "check.sh: first run — setting up $VENV from requirements.txt (once; a few minutes)..." >&2
    [ -x "$VENV/bin/python" ] || "$SYS_PY" -m venv "$VENV"
    LOG="$VENV/install.log"
    if ! "$VENV/bin/python" -m pip install --disable-pip-version-check -r "$ROOT/requirements.txt" >"$LOG" 2>&1; then
      tail -n 20 "$LOG" >&2
      echo "check.sh: installing requirements failed (full log: $LOG)" >&2
      exit 2
    fi
    echo "$STAMP" >"$VENV/.requirements.sha256"
    (cd "$ROOT" && "$VENV/bin/python" -m course.notebook.notebook_setup >/dev/null 2>&1) || true   # widget state, nbstrip filter
    echo "check.sh: environment ready." >&2
  fi
  PY="$VENV/bin/python"
fi

# The kernel level (p08-kernel) and the repo's own tests need Triton too: requirements-kernel.txt, Linux only.
case "${1:-}" in
  p08-kernel|test)
    if ! "$PY" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("triton") is None)' 2>/dev/null; then
      if [ "$(uname -s)" != Linux ]; then
        [ "$1" = test ] || { echo "check.sh: p08-kernel needs Triton, which ships Linux wheels only (p08 and p08-fast run here)" >&2; exit 2; }
      elif [ "$PY" = "$SYS_PY" ]; then
        [ "$1" = test ] || { echo "check.sh: p08-kernel needs Triton: $PY -m pip install -r requirements-kernel.txt (about 285 MB)" >&2; exit 2; }
      else
        echo "check.sh: p08-kernel needs Triton — installing requirements-kernel.txt into $(dirname "$(dirname "$PY")") (about 285 MB download, 1 GB on disk; once)..." >&2
        if ! "$PY" -m pip install --disable-pip-version-check -r "$ROOT/requirements-kernel.txt" >>"$(dirname "$(dirname "$PY")")/install.log" 2>&1; then
          echo "check.sh: installing Triton failed (log: $(dirname "$(dirname "$PY")")/install.log)" >&2
          exit 2
        fi
      fi
    fi;;
esac

export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
exec "$PY" -m course.cli "$@"
