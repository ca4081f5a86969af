#!/usr/bin/env bash
# Debian's chromium for the viewer's browser tests (tests/test_viewer_browser.py drives it with Playwright at
# /usr/bin/chromium; Playwright's own browser download is never used). Installed when missing and we are root
# (CI); otherwise one line says how, and the browser tests skip naming the same reason.
set -euo pipefail
BROWSER=/usr/bin/chromium
if [ -x "$BROWSER" ]; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "setup: $BROWSER is missing and we are not root: the browser tests will skip" \
         "(install it with: sudo apt-get install -y chromium)"
    exit 0
fi
echo "setup: installing Debian's chromium for the browser tests (apt-get)"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q chromium > /dev/null || { apt-get update -q > /dev/null && apt-get install -y -q chromium > /dev/null; }
test -x "$BROWSER" || { echo "setup: apt-get installed chromium but $BROWSER is not there" >&2; exit 2; }
