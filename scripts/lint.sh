#!/usr/bin/env sh
# Every static check a change must pass, in the order a contributor fixes them. Run through `./supersonic lint`
# (which sets up .venv); pre-commit runs the same checks per file kind (.pre-commit-config.yaml).
# Exits non-zero on the first failing check, naming the command that fixes it where one exists.
set -eu
cd "$(dirname "$0")/.."
BIN=.venv/bin

step() { printf '== %s\n' "$1"; }
fail() { printf 'lint: %s\n' "$1" >&2; exit 1; }

step "ruff check"
"$BIN/ruff" check . || fail "ruff found problems: '.venv/bin/ruff check --fix .' fixes the ones marked [*]"
step "ruff format --check"
"$BIN/ruff" format --check . || fail "files are not formatted: run '.venv/bin/ruff format .'"
step "mypy"
"$BIN/mypy" || fail "type errors above: fix them (a suppression needs '# type: ignore[code]' and a reason)"
step "shellcheck"
shellcheck scripts/*.sh supersonic .ci/run postrender/keda-trigger-timeout || fail "shellcheck findings above"
step "actionlint"
"$BIN/actionlint" .github/workflows/*.yml || fail "actionlint findings above"
step "zizmor"
"$BIN/zizmor" --offline --quiet .github/workflows || fail "zizmor findings above"
step "stack files (read as the Pulumi CLI reads them), rendered with --check"
scripts/check-stacks.sh || fail "a stack does not render cleanly (see above)"
echo "lint: all checks passed"
