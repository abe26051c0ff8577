"""``state history`` and ``state restore``: the versions of a stack's state object, and an earlier one copied on top
as the new current version (every newer version stays), refused where that could lose state."""

from __future__ import annotations

import re
from datetime import UTC

from supersonic_interlink.state import backend
from supersonic_interlink.state.backend import STATE_PREFIX, StateBackendError


def _keys(client, bucket: str, prefix: str) -> list[str]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return list(pages.search("Contents[].Key || `[]`"))


def state_versions(client, args) -> list[dict]:
    """Every version of the stack's state object (plain, or gzipped under PULUMI_SELF_MANAGED_STATE_GZIP), newest
    first; a delete marker has no Size. Over plain HTTP, no state under a TLS-only policy is the denial it is."""
    project, stack, bucket = args.project or backend.project_name(), args.stack, args.bucket
    base = f"{STATE_PREFIX}stacks/{project}/{stack}.json"
    for key in (base, f"{base}.gz"):
        pages = client.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=key)
        found = [v for page in pages for v in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]]
        if versions := [v for v in found if v["Key"] == key]:
            return sorted(versions, key=lambda v: (v["LastModified"], v["IsLatest"]), reverse=True)
    if backend.is_plain_http(args.endpoint_url):
        statements = backend.as_list((backend.read_setting(client, bucket, backend.POLICY) or {}).get("Statement"))
        if any(backend.denies_insecure_transport(s, bucket, client.meta.partition) for s in statements):
            raise StateBackendError(
                f"bucket {bucket!r} at {args.endpoint_url}: AccessDenied: its policy denies requests without TLS "
                "(aws:SecureTransport); use the endpoint's https:// URL"
            )
    prefix = f"{STATE_PREFIX}stacks/{project}/"
    names = (re.fullmatch(r"([^/]+)\.json(?:\.gz)?", key[len(prefix) :]) for key in _keys(client, bucket, prefix))
    raise StateBackendError(
        f"no state for stack {stack!r} of project {project!r} in bucket {bucket!r} (looked for {base}); stacks with "
        f"state there: {', '.join(sorted({n.group(1) for n in names if n})) or 'none'}"
    )


def history(client, args) -> int:
    versions = state_versions(client, args)
    print(f"versions of s3://{args.bucket}/{versions[0]['Key']}, newest first:")
    for version in versions:
        when = version["LastModified"].astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        size = f"{version['Size']} bytes" if "Size" in version else "deleted"
        print(f"{version['VersionId']}  {when}  {size}" + ("  (current)" if version["IsLatest"] else ""))
    return 0


def restore(client, args) -> int:
    """Copy ``--version-id`` of the stack's state onto the key as a new current version (S3 copies server-side)."""
    bucket, stack, version_id = args.bucket, args.stack, args.version_id
    if (status := client.get_bucket_versioning(Bucket=bucket).get("Status", "never enabled")) != "Enabled":
        raise StateBackendError(
            f"bucket {bucket!r} does not have versioning enabled (found: {status}), so a restore could overwrite the "
            "only copy; run `./supersonic state bootstrap` on it first"
        )
    versions = state_versions(client, args)
    key = versions[0]["Key"]
    chosen = next((v for v in versions if v["VersionId"] == version_id), None)
    if chosen is None:
        raise StateBackendError(
            f"version {version_id!r} is not a version of {key} in bucket {bucket!r}; list them with "
            f"`./supersonic state history {stack} --bucket {bucket}`"
        )
    if "Size" not in chosen:
        raise StateBackendError(f"version {version_id!r} of {key} is a delete marker, not a saved state")
    if chosen["IsLatest"]:
        print(f"version {version_id} is already the current state of stack {stack}; nothing to do")
        return 0
    # Pulumi holds .pulumi/locks/<org>/<project>/<stack>/<id>.json while an update runs.
    project = args.project or backend.project_name()
    locks = [k for k in _keys(client, bucket, f"{STATE_PREFIX}locks/") if k.split("/")[-3:-1] == [project, stack]]
    if locks:
        raise StateBackendError(
            f"stack {stack!r} is locked ({locks[0]}): an update may be running; if none is, `pulumi cancel --stack "
            f"{stack}` clears the stale lock"
        )
    source = {"Bucket": bucket, "Key": key, "VersionId": version_id}
    new = client.copy_object(Bucket=bucket, Key=key, CopySource=source, MetadataDirective="COPY")["VersionId"]
    print(f"restored version {version_id} of {key} as the current version {new}")
    current = next(v["VersionId"] for v in versions if v["IsLatest"])
    print(f"the state it replaced is kept as version {current}; restore it the same way to undo this")
    return 0
