#!/usr/bin/env bash
# Runs before `npm test` (the `pretest` script): installs, once, the toolchains some suites use
# beyond Node — the Go code generators and Go module cache, a project-local .venv with the Python
# client's dependencies, kubernetes-validate and hadolint, Debian's chromium for the console's browser
# tests. Each step is idempotent (stamp files).
# A step that cannot run here (no Go, no Python, no registry) is reported, and the suites that
# need it skip with a visible message instead of failing.
set -uo pipefail
cd "$(dirname "$0")/.."
[[ "${WAYMARK_SKIP_TOOL_SETUP:-}" == "1" ]] && exit 0
for step in scripts/setup-k8s-tools.sh scripts/setup-clients.sh scripts/setup-browser.sh; do
  if ! bash "$step"; then
    echo "setup-test-tools: $step failed; the suites that need it will be skipped" >&2
  fi
done
exit 0
