# Deletes this release's Failed inference-server pods, keeping the newest KEEP of them for diagnosis.
#
# interLink marks a pod Failed when its Slurm job exits non-zero; the ReplicaSet replaces it and the corpse,
# with its shadow wstunnel objects, stays until something deletes it. This runs in alpine/kubectl as
# `/bin/sh -c <this text> cleanup-failed-pods`: busybox ash and applets, so no pipefail, no tac, no head -n -1.
# Every parameter comes from the container's environment, so the text is the same for every stack:
#   NAMESPACE   namespace to clean (the Job pod's own, from the downward API)
#   SELECTOR    label selector of the release's inference-server pods (a=b,c=d), computed from the chart contract
#   KEEP        how many of the newest Failed pods stay (0 or more)
#   MAX_DELETE  most pods deleted in one run, oldest first (1 or more); a larger backlog goes over several runs
#   DRY_RUN     true: log what would be deleted and delete nothing
# The API server does the selecting (labels and status.phase); kubectl sorts by creation time. One list call, then
# at most one delete call naming every pod that goes. A failed list exits non-zero before anything is deleted.
# The text avoids a doubled dollar sign and $(NAME) for an environment name: the kubelet expands those in a
# container's command.
set -eu

# All are required: the values live in the stack configuration and the component, not here.
NAMESPACE=${NAMESPACE:?must name the namespace to clean}
SELECTOR=${SELECTOR:?must select the release inference-server pods}
KEEP=${KEEP:?must be the number of newest Failed pods to keep}
MAX_DELETE=${MAX_DELETE:?must be the most pods one run deletes}
DRY_RUN=${DRY_RUN:?must be true or false}

case $KEEP in
  *[!0-9]*) echo "cleanup: KEEP='$KEEP' is not a whole number; nothing deleted" >&2; exit 2 ;;
esac
case $MAX_DELETE in
  *[!0-9]* | 0) echo "cleanup: MAX_DELETE='$MAX_DELETE' is not a positive whole number; nothing deleted" >&2
    exit 2 ;;
esac
case $DRY_RUN in
  true | false) ;;
  *) echo "cleanup: DRY_RUN='$DRY_RUN' is neither true nor false; nothing deleted" >&2; exit 2 ;;
esac

# One line per pod, oldest first: name, creation time, pod reason, container reason(s), exit code(s), tab-separated.
# Fields a pod lacks print empty (kubectl's jsonpath allows missing keys).
FIELDS='{range .items[*]}{.metadata.name}{"\t"}{.metadata.creationTimestamp}{"\t"}{.status.reason}{"\t"}'\
'{.status.containerStatuses[*].state.terminated.reason}{"\t"}'\
'{.status.containerStatuses[*].state.terminated.exitCode}{"\n"}{end}'

# Captured whole before anything acts on it: piped straight on, a failed list would look like an empty one
# (ash reports only a pipeline's last status) or a partial one.
if ! listing=$(kubectl get pods --namespace "$NAMESPACE" --selector "$SELECTOR" \
    --field-selector status.phase=Failed --sort-by .metadata.creationTimestamp --output "jsonpath=$FIELDS"); then
  echo "cleanup: listing Failed pods in $NAMESPACE failed; nothing deleted" >&2
  exit 1
fi

if [ -z "$listing" ]; then
  echo "cleanup: no Failed pods in $NAMESPACE match $SELECTOR; deleted 0, kept 0"
  exit 0
fi

total=$(printf '%s\n' "$listing" | wc -l)
total=$((total + 0))
remove=$((total - KEEP))
if [ "$remove" -lt 0 ]; then
  remove=0
fi
left=0
if [ "$remove" -gt "$MAX_DELETE" ]; then
  left=$((remove - MAX_DELETE))
  remove=$MAX_DELETE
fi
kept=$((total - remove - left))

if [ "$DRY_RUN" = true ]; then
  verb="would delete"
else
  verb="delete"
fi
echo "cleanup: $total Failed pods in $NAMESPACE match $SELECTOR; keeping the newest $KEEP"
# A line for each pod deleted and each kept for diagnosis; a backlog past MAX_DELETE is only counted.
printf '%s\n' "$listing" | awk -F '\t' -v remove="$remove" -v keep_from="$((total - KEEP))" -v verb="$verb" '{
  if (NR <= remove + 0) action = verb
  else if (NR > keep_from + 0) action = "keep"
  else next
  reason = $3
  if (reason == "") reason = $4
  if (reason == "") reason = "-"
  code = $5
  if (code == "") code = "-"
  printf "%s pod/%s created=%s reason=%s exit=%s\n", action, $1, $2, reason, code
}'
backlog=""
if [ "$left" -gt 0 ]; then
  backlog=", $left left for the next run"
fi

if [ "$remove" -eq 0 ]; then
  echo "cleanup: deleted 0, kept $kept"
  exit 0
fi
if [ "$DRY_RUN" = true ]; then
  echo "cleanup (dry run): deleted 0, would delete $remove, kept $kept$backlog"
  exit 0
fi

doomed=$(printf '%s\n' "$listing" | head -n "$remove" | awk -F '\t' '{ print "pod/" $1 }')
# Pod names are DNS labels (no blanks, no glob characters); with globbing off, the unquoted list splits into one
# argument per pod, and MAX_DELETE keeps the whole command far below the kernel's argument-size limit.
# --wait=false: return once the API server accepted the deletions instead of waiting for each pod's finalizers.
# --ignore-not-found: a pod someone else deleted since the list is already what we wanted.
set -f
# shellcheck disable=SC2086
if ! kubectl delete --namespace "$NAMESPACE" --wait=false --ignore-not-found $doomed; then
  echo "cleanup: deleting Failed pods in $NAMESPACE failed; see the errors above" >&2
  exit 1
fi
echo "cleanup: deleted $remove, kept $kept$backlog"
