#!/usr/bin/env sh
# Render and check stacks offline: `./supersonic render <stack> --check` reads the stack file as the Pulumi CLI does
# (YAML 1.2), validates every setting, and checks the output. With file arguments (as pre-commit passes them)
# only the stacks whose files changed are checked, and all of them when Pulumi.yaml changed; with none, all.
# A stack whose chart is pinned is checked with --strict (a check that could not run fails), unless its chart cannot be
# fetched for lack of network access, which it says; an unpinned one cannot run the chart conformance check at all, and
# is checked without it, saying so.
set -eu
cd "$(dirname "$0")/.."
stacks=""
all=true
if [ "$#" -gt 0 ]; then
  all=false
  for file in "$@"; do
    case "$file" in
      Pulumi.yaml) all=true ;;
      stacks/Pulumi.*.yaml) name=${file#stacks/Pulumi.}; stacks="$stacks ${name%.yaml}" ;;
      *) ;;
    esac
  done
fi
if [ "$all" = true ]; then
  stacks=""
  for file in stacks/Pulumi.*.yaml; do
    name=${file#stacks/Pulumi.}
    stacks="$stacks ${name%.yaml}"
  done
fi
# Exit 0 pinned, 3 not pinned; anything else (the check itself failing) fails lint rather than counting as unpinned.
pinned() {
  .venv/bin/python -c 'import sys; from supersonic_interlink.render.stack import chart_pinned as p; sys.exit(0 if p(sys.argv[1]) else 3)' "$1"
}
status=0
for stack in $stacks; do
  rc=0
  pinned "$stack" || rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then
    echo "check-stacks: stack $stack failed: whether its chart is pinned could not be read (exit $rc)" >&2
    status=1
  elif [ "$rc" -eq 0 ]; then
    # The chart it deploys is exact: fetched (as pulumi preview fetches it), and every check must run (--strict).
    # Without network access to the chart's repository the chart checks cannot run here: said, and the rest checked;
    # the pull-request workflow, which has the network, runs them with --strict.
    if ! fetched=$(./supersonic render "$stack" --fetch-chart 2>&1); then
      case "$fetched" in
        *"needs network access"*)
          if ./supersonic render "$stack" --check >/dev/null; then
            echo "check-stacks: stack $stack: its pinned chart cannot be fetched here (no network access to its" \
              "repository): checked without --strict, the chart checks skipped"
          else
            echo "check-stacks: stack $stack failed: run './supersonic render $stack --check' to see why" >&2
            status=1
          fi
          continue ;;
        *)
          printf '%s\n' "$fetched" >&2
          echo "check-stacks: stack $stack failed: its pinned chart could not be fetched" >&2
          status=1
          continue ;;
      esac
    fi
    if ! ./supersonic render "$stack" --check --strict >/dev/null; then
      echo "check-stacks: stack $stack failed: run './supersonic render $stack --check --strict' to see why" >&2
      status=1
    fi
  elif ./supersonic render "$stack" --check >/dev/null; then
    # Unpinned: it cannot deploy (preview, up and the pull-request workflow refuse it), so its chart conformance
    # check cannot run; said here rather than passed over.
    echo "check-stacks: stack $stack: chart not pinned: checked without --strict, the chart conformance check skipped"
  else
    echo "check-stacks: stack $stack failed: run './supersonic render $stack --check' to see why" >&2
    status=1
  fi
done
exit "$status"
