#!/usr/bin/env sh
# The two things a newcomer runs from a fresh clone, each setting up what it needs first:
#   ./dev.sh render <stack> [--out DIR] [--check]   render a stack offline (what `pulumi up` would deploy)
#   ./dev.sh test [pytest args]                     run the test suite
#   ./dev.sh lint                                   every static check CI and the pre-commit hooks run
# Each creates .venv (the virtualenv Pulumi.yaml names) with Python 3.11+ and install the pinned requirements,
# again only when a requirements file changed.
set -eu
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3}
VENV=.venv

need_python() {
  if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "dev.sh: needs Python 3.11 or newer as '$PYTHON' (set PYTHON=/path/to/python3.11)" >&2
    exit 1
  fi
}

ensure_venv() {
  # $1: the requirements file this command needs.
  stamp="$VENV/.installed-$(basename "$1" .txt)"
  if ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    need_python
    rm -rf "$VENV"  # missing, or left half-made by an earlier failure
    if ! "$PYTHON" -m venv "$VENV"; then
      rm -rf "$VENV"
      echo "dev.sh: '$PYTHON -m venv' failed (on Debian or Ubuntu: apt-get install python3-venv)" >&2
      exit 1
    fi
  fi
  wanted=$(cat "$1" requirements*.txt constraints.txt | cksum)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$1"
    echo "$wanted" > "$stamp"
  fi
}

ensure_test_tools() {
  # The cleanup script runs in a real busybox; the Envoy text must survive the chart's envsubst; actionlint
  # runs shellcheck over the workflows' shell; the workflow tests run their jq steps; the chart source tests
  # fetch and pin charts from git repositories they make.
  missing=""
  command -v busybox >/dev/null 2>&1 || missing="$missing busybox"
  command -v envsubst >/dev/null 2>&1 || missing="$missing gettext-base"
  command -v shellcheck >/dev/null 2>&1 || missing="$missing shellcheck"
  command -v jq >/dev/null 2>&1 || missing="$missing jq"
  command -v git >/dev/null 2>&1 || missing="$missing git"
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    # shellcheck disable=SC2086  # $missing is a list of package names: split on purpose
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
  else
    echo "dev.sh: the tests need these Debian packages:$missing (sudo apt-get install -y$missing)" >&2
    exit 1
  fi
}

ensure_binaries() {
  # Real Helm v3 (the chart conformance check) and kubectl 1.34 (the cleanup tests), pinned and verified.
  "$VENV/bin/python" -m supersonic_interlink.binaries install helm kubectl >/dev/null
}

case "${1:-}" in
  render)
    shift
    ensure_venv requirements-tools.txt
    ensure_binaries
    exec "$VENV/bin/python" render.py "$@"
    ;;
  test)
    shift
    ensure_test_tools
    ensure_venv requirements-dev.txt
    ensure_binaries
    exec "$VENV/bin/python" -m pytest "$@"
    ;;
  lint)
    shift
    ensure_test_tools
    ensure_venv requirements-dev.txt
    ensure_binaries
    exec scripts/lint.sh
    ;;
  *)
    sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
