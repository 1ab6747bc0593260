#!/usr/bin/env bash
# Headless Chromium for the report's browser test (tests/test_eval_report_browser.py).
# Debian/Ubuntu, run as root (or with sudo available). Skips if it is already there.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; then
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends chromium
