#!/usr/bin/env bash
# Installs what generating and testing the Go, Python and TypeScript clients needs, into the
# repository only (nothing global): the Go code generators in ./.bin, and a Python virtualenv in
# ./.venv with the Python code generators, the test tools and clients/python installed editable.
# Idempotent: a second run finds everything at its pinned version and only re-checks it.
#
# `npm run generate` and `npm run generate:check` (scripts/generate.js) fail with a pointer to this
# script when something it installs is missing. The .venv is shared with the project's other
# Python tooling; this script only adds packages to it.
set -euo pipefail
cd "$(dirname "$0")/.."

# Code generators and test tools. Keep in step with clients/go/go.mod (the Go runtime versions)
# and clients/python/pyproject.toml (the Python runtime floors the generated code checks).
PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2
PYTHON_PACKAGES=(
  grpcio==1.85.1
  grpcio-tools==1.85.1
  protobuf==7.36.2
  googleapis-common-protos==1.76.0
  mypy-protobuf==5.1.0
  types-protobuf==7.35.1.20260906
  types-grpcio==1.85.0.20261028
  PyYAML==6.0.4
  types-PyYAML==6.0.12.20261113
  mypy==2.4.1
  hatchling==1.33.0
  editables==0.6
  pytest==9.2.0
  pytest-asyncio==1.5.0
)

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "setup-clients: $1 is required ($2)" >&2; exit 1; }
}
need go 'the Go toolchain, 1.23 or newer'
need python3 'Python 3.10 or newer'

# Go: `go install` into ./.bin, skipped when the binary there already reports the pinned version.
mkdir -p .bin
install_go_tool() {
  local bin=$1 package=$2 version=$3
  if [[ -x ".bin/$bin" ]] && [[ "$(".bin/$bin" --version 2>/dev/null)" == *"${version#v}"* ]]; then
    echo "setup-clients: .bin/$bin $version present"
    return
  fi
  echo "setup-clients: installing $bin $version into .bin"
  GOBIN="$PWD/.bin" go install "$package@$version"
}
install_go_tool protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go "$PROTOC_GEN_GO_VERSION"
install_go_tool protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION"

# Python: one .venv for the repository; pip skips what is already installed at the pinned version.
if [[ ! -x .venv/bin/python ]]; then
  echo "setup-clients: creating .venv"
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet "${PYTHON_PACKAGES[@]}"
# --no-build-isolation: build with the pinned hatchling above instead of fetching one per install.
.venv/bin/python -m pip install --quiet --no-deps --no-build-isolation -e clients/python
# A wheelhouse for test/clients/packaging.test.ts, which installs the built wheel into a fresh
# virtualenv outside the repository with --no-index: the wheel's declared dependencies and mypy,
# at the versions above, and hatchling, which the Python README's `pip install` builds the client
# with (test/clients/readme-examples.test.ts runs it offline). A stamp skips the download when the
# list has not changed.
WHEELHOUSE_PACKAGES=(hatchling==1.33.0 grpcio==1.85.1 protobuf==7.36.2 googleapis-common-protos==1.76.0 types-grpcio==1.85.0.20261028 types-protobuf==7.35.1.20260906 PyYAML==6.0.4 types-PyYAML==6.0.12.20261113 mypy==2.4.1)
if [[ "$(cat .venv/wheelhouse/.stamp 2>/dev/null)" != "${WHEELHOUSE_PACKAGES[*]}" ]]; then
  echo "setup-clients: downloading the wheelhouse for the packaging test into .venv/wheelhouse"
  .venv/bin/python -m pip download --quiet -d .venv/wheelhouse "${WHEELHOUSE_PACKAGES[@]}"
  echo "${WHEELHOUSE_PACKAGES[*]}" > .venv/wheelhouse/.stamp
fi
# Download the Go client's modules and compile its tests once, so `npm test` spends its time testing.
(cd clients/go && go mod download && go test -count=1 -run '^$' ./... >/dev/null)

echo "setup-clients: done (.bin: protoc-gen-go, protoc-gen-go-grpc; .venv: ${PYTHON_PACKAGES[*]}, waymark-client editable)"
