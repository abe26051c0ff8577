# shellcheck shell=sh
# Deletes this release's Failed inference-server pods, keeping the newest KEEP of them for diagnosis.
#
# interLink marks a pod Failed when its Slurm job exits non-zero; the ReplicaSet replaces it and the corpse,
# with its shadow wstunnel objects, stays until something deletes it. This runs in alpine/kubectl as
# `/bin/sh -c <this text> cleanup-failed-pods`: busybox ash and applets, so no pipefail, no tac, no head -n -1.
# Every parameter comes from the container's environment, so the text is the same for every stack:
#   NAMESPACE   namespace to clean (the Job pod's own, from the downward API): a DNS label
#   SELECTOR    label selector of the release's inference-server pods, key=value[,key=value...], computed from the
#               chart contract; only equality requirements, so it can only narrow the selection
#   KEEP        how many of the newest Failed pods stay: a whole number from 0 to KEEP_MAX
#   DRY_RUN     true: list, log what would be deleted and the exact request, delete nothing
# Two requests on pods (after kubectl's discovery of the API): one LIST of the Failed pods that match SELECTOR, and
# one DELETE of that same collection with the kept pods excluded by name, so the API server itself confines the
# deletion to "Failed pods of this release except the kept" whatever the listing said, and clears any backlog at
# once. The listing only chooses which pods to keep; the names it yields are checked strictly, and anything
# unexpected in it stops the run before the delete. A failed list or a bad parameter deletes nothing.
# The text avoids a doubled dollar sign and $(NAME) for an environment name: the kubelet expands those in a
# container's command.
set -eu
export LC_ALL=C

# Each kept pod is one `metadata.name!=<name>` term in the delete request's URI (at most about 275 bytes a name),
# so this keeps the request line within any HTTP server's limits.
KEEP_MAX=20

# A value as it may appear in a log line: printable ASCII only, at most 120 bytes.
shown() { printf '%s' "$1" | head -c 120 | tr -c ' -~' '?'; }
refuse() {
  echo "cleanup: $1; nothing deleted" >&2
  exit 2
}
is_dns_label() {
  case $1 in
    '' | -* | *- | *[!a-z0-9-]*) return 1 ;;
  esac
  [ "${#1}" -le 63 ]
}
is_dns_subdomain() {
  [ -n "$1" ] && [ "${#1}" -le 253 ] || return 1
  subdomain_rest=$1.
  while [ -n "$subdomain_rest" ]; do
    is_dns_label "${subdomain_rest%%.*}" || return 1
    subdomain_rest=${subdomain_rest#*.}
  done
}
# A label name, and a non-empty label value: 1 to 63 of A-Z, a-z, 0-9, '-', '_', '.', alphanumeric at both ends.
is_label_name() {
  case $1 in
    '' | [!A-Za-z0-9]* | *[!A-Za-z0-9] | *[!-A-Za-z0-9_.]*) return 1 ;;
  esac
  [ "${#1}" -le 63 ]
}
is_label_key() {
  case $1 in
    */*) is_dns_subdomain "${1%/*}" && is_label_name "${1##*/}" ;;
    *) is_label_name "$1" ;;
  esac
}
is_selector() {
  [ -n "$1" ] && [ "${#1}" -le 1024 ] || return 1
  selector_rest=$1,
  while [ -n "$selector_rest" ]; do
    selector_term=${selector_rest%%,*}
    selector_rest=${selector_rest#*,}
    case $selector_term in
      *=*) ;;
      *) return 1 ;;
    esac
    is_label_key "${selector_term%%=*}" && is_label_name "${selector_term#*=}" || return 1
  done
}
# Percent-encodes everything but RFC 3986's unreserved characters (the input is printable ASCII, checked above).
urlencode() {
  printf '%s\n' "$1" | awk 'BEGIN { for (i = 32; i < 127; i++) code[sprintf("%c", i)] = i }
  {
    out = ""
    for (i = 1; i <= length($0); i++) {
      c = substr($0, i, 1)
      out = out ((c ~ /^[-A-Za-z0-9._~]$/) ? c : sprintf("%%%02X", code[c]))
    }
    print out
  }'
}

# All are required: the values live in the stack configuration and the component, not here.
NAMESPACE=${NAMESPACE:?must name the namespace to clean}
SELECTOR=${SELECTOR:?must select the release inference-server pods}
KEEP=${KEEP:?must be the number of newest Failed pods to keep}
DRY_RUN=${DRY_RUN:?must be true or false}

is_dns_label "$NAMESPACE" ||
  refuse "NAMESPACE='$(shown "$NAMESPACE")' is not a namespace name (a DNS label: 1-63 of a-z, 0-9, '-')"
is_selector "$SELECTOR" ||
  refuse "SELECTOR='$(shown "$SELECTOR")' is not key=value[,key=value...] of label keys and non-empty label values"
case $KEEP in
  '' | *[!0-9]* | 0?*) refuse "KEEP='$(shown "$KEEP")' is not a whole number from 0 to $KEEP_MAX" ;;
esac
if [ "${#KEEP}" -gt 2 ] || [ "$KEEP" -gt "$KEEP_MAX" ]; then
  refuse "KEEP='$KEEP' is not a whole number from 0 to $KEEP_MAX"
fi
case $DRY_RUN in
  true | false) ;;
  *) refuse "DRY_RUN='$(shown "$DRY_RUN")' is neither true nor false" ;;
esac

errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
# kubectl's own messages (they may quote the server) go to the log one printable line at a time, marked as its.
report_errors() { tr -c ' -~\n' '?' <"$errors" | sed 's/^/cleanup: kubectl: /' >&2; }

# One line per pod: "creationTimestamp" "name" reason=... [container "c": exit=N reason=...]. Every value from the
# API is printed Go-quoted with %+q (ASCII only, control characters and quotes escaped), so no value can contain a
# separator: one pod is exactly one line, and its first two fields are checked below before anything acts on them.
# shellcheck disable=SC2016  # $c is the template's variable, not the shell's
TEMPLATE='{{range .items}}'\
'{{printf "%+q" (print .metadata.creationTimestamp)}} {{printf "%+q" (print .metadata.name)}}'\
' reason={{with .status.reason}}{{printf "%+q" (print .)}}{{else}}-{{end}}'\
'{{range $c := .status.containerStatuses}}{{with $c.state}}{{with .terminated}}'\
' [container {{printf "%+q" (print $c.name)}}: exit='\
'{{if eq (printf "%T" .exitCode) "int64"}}{{.exitCode}}{{else}}{{printf "%+q" (print .exitCode)}}{{end}}'\
' reason={{with .reason}}{{printf "%+q" (print .)}}{{else}}-{{end}}]'\
'{{end}}{{end}}{{end}}{{"\n"}}{{end}}'

# Captured whole before anything acts on it: piped straight on, a failed list would look like an empty one
# (ash reports only a pipeline's last status) or a partial one. --chunk-size=0: one LIST for any backlog.
if ! listing=$(kubectl get pods --namespace "$NAMESPACE" --selector "$SELECTOR" --field-selector status.phase=Failed \
  --chunk-size=0 --output "go-template=$TEMPLATE" 2>"$errors"); then
  report_errors
  echo "cleanup: listing Failed pods in $NAMESPACE failed; nothing deleted" >&2
  exit 1
fi

if [ -z "$listing" ]; then
  echo "cleanup: no Failed pods in $NAMESPACE match $SELECTOR; deleted 0, kept 0"
  exit 0
fi

# Strict: a line that is not the quoted creation time (RFC 3339, UTC, as the API server writes it) and quoted name
# (a DNS subdomain, as the API server enforces) of one pod stops the run.
if ! checked=$(printf '%s\n' "$listing" | awk '
  function bad(why, shown) {
    shown = substr($0, 1, 200)
    gsub(/[^ -~]/, "?", shown)
    printf "cleanup: line %d of the listing %s: %s; nothing deleted\n", NR, why, shown > "/dev/stderr"
    exit 1
  }
  $0 ~ /[^ -~]/ { bad("is not printable ASCII") }
  $1 !~ /^"[0-9][0-9][0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]Z"$/ {
    bad("does not start with a creation time")
  }
  length($2) > 255 || $2 !~ /^"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"$/ {
    bad("has no pod name (a DNS subdomain) after the creation time")
  }
  { print }'); then
  exit 1
fi

# Oldest first; pods created in the same second in name order, whatever order the API returned them in. The newest
# KEEP (the last lines) stay.
sorted=$(printf '%s\n' "$checked" | sort -t ' ' -k 1,1 -k 2,2)
total=$(printf '%s\n' "$sorted" | wc -l)
total=$((total + 0))
remove=$((total - KEEP))
if [ "$remove" -lt 0 ]; then
  remove=0
fi
kept=$((total - remove))

fields=status.phase=Failed
if [ "$kept" -gt 0 ]; then
  for name in $(printf '%s\n' "$sorted" | tail -n "$kept" | awk '{ print substr($2, 2, length($2) - 2) }'); do
    fields="$fields,metadata.name!=$name"
  done
fi
uri="/api/v1/namespaces/$NAMESPACE/pods?labelSelector=$(urlencode "$SELECTOR")&fieldSelector=$(urlencode "$fields")"

if [ "$DRY_RUN" = true ]; then
  verb="would delete"
else
  verb="delete"
fi
echo "cleanup: $total Failed pods in $NAMESPACE match $SELECTOR; keeping the newest $KEEP"
printf '%s\n' "$sorted" | awk -v remove="$remove" -v verb="$verb" '{
  rest = $0
  sub(/^[^ ]* [^ ]* /, "", rest)
  printf "%s pod/%s created=%s %s\n", (NR <= remove + 0) ? verb : "keep", substr($2, 2, length($2) - 2),
    substr($1, 2, length($1) - 2), rest
}'

if [ "$remove" -eq 0 ]; then
  echo "cleanup: deleted 0, kept $kept"
  exit 0
fi
if [ "$DRY_RUN" = true ]; then
  echo "cleanup (dry run): would send DELETE $uri"
  echo "cleanup (dry run): deleted 0, would delete $remove, kept $kept"
  exit 0
fi

echo "cleanup: sending DELETE $uri"
# The answer lists every deleted pod in full; the lines above are the record.
if ! kubectl delete --raw "$uri" >/dev/null 2>"$errors"; then
  report_errors
  echo "cleanup: the delete request failed; the API server may have deleted some of the $remove pods before" \
    "failing, and the next run lists again" >&2
  exit 1
fi
echo "cleanup: deleted $remove, kept $kept"
