#!/usr/bin/env sh
# Render and check stacks offline: `./supersonic render <stack> --check` reads the stack file as the Pulumi CLI does
# (YAML 1.2), validates every setting, and checks the output. With file arguments (as pre-commit passes them)
# only the stacks whose files changed are checked, and all of them when Pulumi.yaml changed; with none, all.
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
status=0
for stack in $stacks; do
  if ! ./supersonic render "$stack" --check >/dev/null; then
    echo "check-stacks: stack $stack failed: run './supersonic render $stack --check' to see why" >&2
    status=1
  fi
done
exit "$status"
