#!/usr/bin/env bash
# Installs Debian's `chromium`, which the web console's browser tests (test/console/) drive with
# playwright-core. Only the distribution's package: never a browser build downloaded by a test
# tool. Idempotent: nothing to do when /usr/bin/chromium (or WAYMARK_CHROMIUM) exists. Needs root
# and apt-get; elsewhere it says what to install and exits non-zero, and the console's browser
# tests then fail with the same message.
set -euo pipefail
chromium="${WAYMARK_CHROMIUM:-/usr/bin/chromium}"
if [[ -x "$chromium" ]]; then
  exit 0
fi
if [[ "$(id -u)" != "0" ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-browser: $chromium is missing; install Debian's chromium package (sudo apt-get install -y chromium) or set WAYMARK_CHROMIUM" >&2
  exit 1
fi
echo "setup-browser: installing Debian's chromium for the console's browser tests"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
"$chromium" --version
