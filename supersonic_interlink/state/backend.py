"""The state bucket's required settings, how a bucket differs from them, and the boto3 calls that read, fix, list and
restore (``./supersonic state``; its commands are in ``commands.py``)."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
import botocore.config
import botocore.exceptions

from supersonic_interlink import ROOT

DEFAULT_PROJECT = "supersonic-interlink"
STATE_PREFIX = ".pulumi/"
LIFECYCLE_RULE_ID = "pulumi-state-keep-noncurrent-versions"
POLICY_SID = "DenyInsecureTransport"
DEFAULT_NONCURRENT_DAYS = 90
# Reading these storage classes needs a restore request first, so Pulumi could no longer read its state.
ARCHIVE_STORAGE_CLASSES = frozenset({"GLACIER", "DEEP_ARCHIVE"})
PUBLIC_ACCESS_BLOCK = dict.fromkeys(
    ("BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets"), True
)
UNSUPPORTED = "not implemented by the endpoint"
"""What a setting the endpoint has no API for reads as (MinIO has no public access block)."""

VERSIONING, ENCRYPTION, ACCESS_BLOCK, POLICY, LIFECYCLE = (
    "versioning", "default encryption", "public access block", "bucket policy", "lifecycle rule"
)  # fmt: skip
# Per setting: the boto3 call that reads it, what of its answer is the setting, the codes meaning "none configured".
READS = {
    VERSIONING: ("get_bucket_versioning", lambda r: r.get("Status", "never enabled"), set()),
    ENCRYPTION: (
        "get_bucket_encryption",
        lambda r: [*r["ServerSideEncryptionConfiguration"].get("Rules", []), {}][0].get(
            "ApplyServerSideEncryptionByDefault"
        ),
        {"ServerSideEncryptionConfigurationNotFoundError"},
    ),
    ACCESS_BLOCK: (
        "get_public_access_block",
        lambda r: r["PublicAccessBlockConfiguration"],
        {"NoSuchPublicAccessBlockConfiguration"},
    ),
    POLICY: ("get_bucket_policy", lambda r: json.loads(r["Policy"]), {"NoSuchBucketPolicy"}),
    LIFECYCLE: (
        "get_bucket_lifecycle_configuration",
        lambda r: r.get("Rules", []),
        {"NoSuchLifecycleConfiguration", "NoSuchLifecycle"},
    ),
}
NOT_IMPLEMENTED = {"NotImplemented", "XNotImplemented"}
ACCESS_DENIED = {"AccessDenied", "AllAccessDisabled", "403", "Forbidden"}
NO_SUCH_BUCKET = {"NoSuchBucket", "404", "NotFound"}
EXIT_DRIFT, EXIT_ERROR = 1, 2

# An endpoint that accepts connections and never answers must fail fast, not after botocore's default 60 s read
# timeout per attempt. Each attempt waits at most CONNECT + READ seconds; standard-mode retries back off by at most
# 50 ms and 100 ms between attempts for such errors (botocore.retries.standard.ExponentialBackoff).
CONNECT_TIMEOUT_SECONDS = 3.0
READ_TIMEOUT_SECONDS = 6.0
MAX_ATTEMPTS = 3
RETRY_BACKOFF_ALLOWANCE_SECONDS = 1.0


def give_up_after_seconds() -> float:
    """The longest a request to an unresponsive endpoint can take before the command fails."""
    return MAX_ATTEMPTS * (CONNECT_TIMEOUT_SECONDS + READ_TIMEOUT_SECONDS) + RETRY_BACKOFF_ALLOWANCE_SECONDS


class StateBackendError(Exception):
    """A failure the operator can act on; its message says what went wrong and what to do."""


class NoState(StateBackendError):
    """The bucket holds no state object for the stack."""


@dataclass(frozen=True)
class Requirements:
    """What the bucket must look like; the required settings and the drift derive from it."""

    bucket: str
    noncurrent_days: int = DEFAULT_NONCURRENT_DAYS
    kms_key_id: str | None = None
    partition: str = "aws"
    require_tls: bool = True
    """False only for an endpoint allowed to be plain HTTP: a policy denying requests without TLS would lock it out."""


@dataclass(frozen=True)
class Drift:
    """One setting that differs from the requirements. `fixable` is False when bootstrap must not touch it."""

    setting: str
    found: Any
    expected: Any
    fixable: bool = True

    def describe(self) -> str:
        return f"{self.setting}: found {show(self.found)}; expected {show(self.expected)}"


def show(value: Any) -> str:
    if value is None:
        return "nothing configured"
    return json.dumps(value, sort_keys=True, default=str) if isinstance(value, (dict, list)) else str(value)


def _as_list(value: Any) -> list:
    return [] if value is None else value if isinstance(value, list) else [value]


# ---------------------------------------------------------------------------------------------------------------
# The required settings and the comparison, as plain data.


def deny_insecure_transport_statement(bucket: str, partition: str = "aws") -> dict:
    arn = f"arn:{partition}:s3:::{bucket}"
    return {
        "Sid": POLICY_SID,
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:*",
        "Resource": [arn, f"{arn}/*"],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }


def state_lifecycle_rule(noncurrent_days: int) -> dict:
    """Expire only versions that something newer replaced, never the current state, and never before `days`."""
    return {
        "ID": LIFECYCLE_RULE_ID,
        "Status": "Enabled",
        "Filter": {"Prefix": STATE_PREFIX},
        "NoncurrentVersionExpiration": {"NoncurrentDays": noncurrent_days},
        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7},
    }


def required_settings(req: Requirements) -> dict:
    """What bootstrap writes, by setting."""
    encryption = {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": req.kms_key_id} if req.kms_key_id else None
    return {
        VERSIONING: "Enabled",
        ENCRYPTION: encryption or {"SSEAlgorithm": "AES256"},
        ACCESS_BLOCK: PUBLIC_ACCESS_BLOCK,
        LIFECYCLE: state_lifecycle_rule(req.noncurrent_days),
        POLICY: deny_insecure_transport_statement(req.bucket, req.partition),
    }


def encryption_satisfies(found: Any, kms_key_id: str | None) -> bool:
    """Any default encryption meets the requirement, unless a KMS key was asked for; KMS is never downgraded."""
    if not isinstance(found, dict):
        return False
    if kms_key_id:
        return found.get("SSEAlgorithm") == "aws:kms" and found.get("KMSMasterKeyID") == kms_key_id
    return found.get("SSEAlgorithm") in {"AES256", "aws:kms", "aws:kms:dsse"}


def _is_everyone(principal: Any) -> bool:
    return principal == "*" or (isinstance(principal, dict) and "*" in _as_list(principal.get("AWS")))


def denies_insecure_transport(statement: dict, bucket: str, partition: str) -> bool:
    """True for a statement equivalent to the required one, whatever its Sid or list-or-string spelling."""
    secure_transport = statement.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport", "")
    return (
        statement.get("Effect") == "Deny"
        and _is_everyone(statement.get("Principal"))
        and bool(set(_as_list(statement.get("Action"))) & {"s3:*", "*"})
        and set(_as_list(statement.get("Resource")))
        >= {f"arn:{partition}:s3:::{bucket}", f"arn:{partition}:s3:::{bucket}/*"}
        and str(secure_transport).lower() == "false"
    )


def rule_prefix(rule: dict) -> str | None:
    """The key prefix a lifecycle rule applies to ("" for the whole bucket), or None if it only matches tagged
    objects, which Pulumi never writes."""
    rule_filter = rule.get("Filter")
    if rule_filter is None:
        return rule.get("Prefix", "")
    rule_filter = rule_filter.get("And", rule_filter)
    return None if "Tag" in rule_filter or rule_filter.get("Tags") else rule_filter.get("Prefix", "")


def lifecycle_hazards(rules: list[dict], days: int) -> list[Drift]:
    """Other rules that would lose or lock away state. Bootstrap reports these and leaves them to a person."""
    hazards = []
    for rule in rules:
        prefix = rule_prefix(rule)
        if rule.get("ID") == LIFECYCLE_RULE_ID or prefix is None or rule.get("Status") != "Enabled":
            continue
        if not (STATE_PREFIX.startswith(prefix) or prefix.startswith(STATE_PREFIX)):
            continue
        expiration = rule.get("Expiration", {})
        noncurrent = rule.get("NoncurrentVersionExpiration", {}).get("NoncurrentDays")
        # An archived version cannot be read until a restore request finishes (hours for GLACIER, up to two days for
        # DEEP_ARCHIVE), so `state restore` of a version archived within the kept window fails when it is needed.
        found = {
            "Expiration": expiration if {"Days", "Date"} & set(expiration) else None,
            "NoncurrentDays": noncurrent if noncurrent is not None and noncurrent < days else None,
            "Transitions": [t for t in rule.get("Transitions", []) if t.get("StorageClass") in ARCHIVE_STORAGE_CLASSES],
            "NoncurrentVersionTransitions": [
                t
                for t in rule.get("NoncurrentVersionTransitions", [])
                if t.get("StorageClass") in ARCHIVE_STORAGE_CLASSES
                and isinstance(t.get("NoncurrentDays"), int)
                and t["NoncurrentDays"] < days
            ],
        }
        expected = {
            "Expiration": "no expiry of current versions under .pulumi/",
            "NoncurrentDays": f"noncurrent versions under .pulumi/ kept at least {days} days",
            "Transitions": "no archive transition of current versions under .pulumi/",
            "NoncurrentVersionTransitions": f"noncurrent versions under .pulumi/ readable (not archived) for at least "
            f"{days} days, so state restore can read them",
        }
        name = f"lifecycle rule {rule.get('ID', '(no ID)')!r}"
        hazards += [
            Drift(name, {key: value}, expected[key], False) for key, value in found.items() if value not in (None, [])
        ]
    return hazards


def normalized_rule(rule: dict | None) -> dict | None:
    """The parts of a lifecycle rule that matter, in one spelling (endpoints echo rules back differently)."""
    if rule is None:
        return None
    parts = ("Status", "Expiration", "Transitions", "NoncurrentVersionExpiration", "AbortIncompleteMultipartUpload")
    return {"Prefix": rule_prefix(rule), **{part: rule.get(part) for part in parts}}


def find_drift(found: dict[str, Any], req: Requirements) -> list[Drift]:
    """Every way the settings `read_settings` found differ from `req`, in the order bootstrap fixes them."""
    wanted = required_settings(req)
    drift = []
    if found[VERSIONING] != "Enabled":
        drift.append(Drift(VERSIONING, found[VERSIONING], "Enabled"))
    if not encryption_satisfies(found[ENCRYPTION], req.kms_key_id):
        drift.append(
            Drift(ENCRYPTION, found[ENCRYPTION], wanted[ENCRYPTION] if req.kms_key_id else "AES256 or aws:kms")
        )
    if found[ACCESS_BLOCK] not in (UNSUPPORTED, PUBLIC_ACCESS_BLOCK):
        drift.append(Drift(ACCESS_BLOCK, found[ACCESS_BLOCK], PUBLIC_ACCESS_BLOCK))
    rules = found[LIFECYCLE] or []
    ours = next((r for r in rules if r.get("ID") == LIFECYCLE_RULE_ID), None)
    if normalized_rule(ours) != normalized_rule(wanted[LIFECYCLE]):
        drift.append(Drift(LIFECYCLE, ours, wanted[LIFECYCLE]))
    drift += lifecycle_hazards(rules, req.noncurrent_days)
    statements = _as_list((found[POLICY] or {}).get("Statement"))
    if req.require_tls and not any(denies_insecure_transport(s, req.bucket, req.partition) for s in statements):
        drift.append(Drift(POLICY, "no statement denying non-TLS access", wanted[POLICY]))
    for grant in statements:
        if grant.get("Effect") == "Allow" and _is_everyone(grant.get("Principal")) and not grant.get("Condition"):
            drift.append(Drift(POLICY, grant, "no statement allowing everyone (Principal '*')", False))
    return drift


def merged_policy(existing: dict | None, statement: dict) -> dict:
    """The existing policy with `statement` added, replacing any earlier statement with the same Sid."""
    policy = copy.deepcopy(existing) if existing else {"Version": "2012-10-17"}
    policy["Statement"] = [
        *(s for s in _as_list(policy.get("Statement")) if s.get("Sid") != statement["Sid"]),
        statement,
    ]
    return policy


def merged_lifecycle(existing: list[dict], rule: dict) -> list[dict]:
    """The existing rules with `rule` added, replacing only an earlier rule with the same ID."""
    return [*(r for r in existing if r.get("ID") != rule["ID"]), rule]


# ---------------------------------------------------------------------------------------------------------------
# Names, the login URL and the client.


def is_plain_http(endpoint_url: str | None) -> bool:
    return bool(endpoint_url) and urlsplit(endpoint_url).scheme == "http"


def login_url(bucket: str, endpoint_url: str | None, region: str | None) -> str:
    """The `pulumi login` URL for this bucket, in the query form Pulumi's S3 driver reads."""
    if not endpoint_url:
        return f"s3://{bucket}?region={region}" if region else f"s3://{bucket}"
    query = f"endpoint={urlsplit(endpoint_url).netloc}&s3ForcePathStyle=true&region={region or 'us-east-1'}"
    return f"s3://{bucket}?{query}" + ("&disableSSL=true" if is_plain_http(endpoint_url) else "")


def project_name(pulumi_yaml: Path = ROOT / "Pulumi.yaml") -> str:
    """The project's `name:` from Pulumi.yaml, which names the state folder; the default if there is no file."""
    text = pulumi_yaml.read_text() if pulumi_yaml.exists() else ""
    match = re.search(r"^name:\s*['\"]?([^'\"\s#]+)", text, re.MULTILINE)
    return match.group(1) if match else DEFAULT_PROJECT


def state_keys(project: str, stack: str) -> list[str]:
    """Where Pulumi keeps a stack's state: plain JSON, or gzipped when PULUMI_SELF_MANAGED_STATE_GZIP is set."""
    base = f"{STATE_PREFIX}stacks/{project}/{stack}.json"
    return [base, f"{base}.gz"]


def make_client(endpoint_url: str | None):
    """An S3 client using only the standard AWS credential chain; path-style addressing for other endpoints."""
    options: dict[str, Any] = {
        "connect_timeout": CONNECT_TIMEOUT_SECONDS,
        "read_timeout": READ_TIMEOUT_SECONDS,
        "retries": {"total_max_attempts": MAX_ATTEMPTS, "mode": "standard"},
    }
    if endpoint_url:
        # Ceph and MinIO releases before 2025 reject the CRC checksums botocore adds by default since 1.36.
        options |= {"s3": {"addressing_style": "path"}, "request_checksum_calculation": "when_required"}
        options["response_checksum_validation"] = "when_required"
    return boto3.session.Session().client("s3", endpoint_url=endpoint_url, config=botocore.config.Config(**options))


def error_code(error: botocore.exceptions.ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


# ---------------------------------------------------------------------------------------------------------------
# Reading and fixing the bucket.


def read_settings(client, bucket: str) -> dict[str, Any]:
    """Each setting as plain data: None when the bucket has none configured, UNSUPPORTED for a missing API."""
    found = {}
    for setting, (method, value, none_configured) in READS.items():
        try:
            found[setting] = value(getattr(client, method)(Bucket=bucket))
        except botocore.exceptions.ClientError as error:
            if error_code(error) not in none_configured | NOT_IMPLEMENTED:
                raise
            # Only a missing public access block API is reported as such; any other reads as none configured, and
            # bootstrap's fix then says what the endpoint answered.
            found[setting] = UNSUPPORTED if error_code(error) in NOT_IMPLEMENTED and setting == ACCESS_BLOCK else None
    return found


def denies_plain_http(client, bucket: str) -> bool:
    """Whether the bucket's policy holds a statement that denies requests without TLS, as the required one does."""
    try:
        policy = json.loads(client.get_bucket_policy(Bucket=bucket)["Policy"])
    except botocore.exceptions.ClientError as error:
        if error_code(error) in READS[POLICY][2] | NOT_IMPLEMENTED:
            return False
        raise
    return any(denies_insecure_transport(s, bucket, client.meta.partition) for s in _as_list(policy.get("Statement")))


def bucket_exists(client, bucket: str) -> bool:
    try:
        client.head_bucket(Bucket=bucket)
    except botocore.exceptions.ClientError as error:
        if error_code(error) in NO_SUCH_BUCKET:
            return False
        raise
    return True


def apply_fix(client, setting: str, found: dict[str, Any], req: Requirements) -> None:
    bucket, wanted = req.bucket, required_settings(req)
    if setting == VERSIONING:
        client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    elif setting == ENCRYPTION:
        rules = [{"ApplyServerSideEncryptionByDefault": wanted[ENCRYPTION]}]
        client.put_bucket_encryption(Bucket=bucket, ServerSideEncryptionConfiguration={"Rules": rules})
    elif setting == ACCESS_BLOCK:
        client.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=PUBLIC_ACCESS_BLOCK)
    elif setting == LIFECYCLE:
        rules = merged_lifecycle(found[LIFECYCLE] or [], wanted[LIFECYCLE])
        client.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": rules})
    else:
        client.put_bucket_policy(Bucket=bucket, Policy=json.dumps(merged_policy(found[POLICY], wanted[POLICY])))


@dataclass(frozen=True)
class BootstrapResult:
    created: bool
    changed: list[Drift]
    remaining: list[Drift]


def bootstrap(client, req: Requirements, *, region: str | None, endpoint_url: str | None) -> BootstrapResult:
    """Create the bucket if needed and fix every fixable drift; a second run changes nothing."""
    created = not bucket_exists(client, req.bucket)
    if created:
        # Only AWS wants the region spelled out; Ceph reads LocationConstraint as a zonegroup name.
        where = {} if endpoint_url or region in (None, "us-east-1") else {"LocationConstraint": region}
        client.create_bucket(Bucket=req.bucket, **({"CreateBucketConfiguration": where} if where else {}))
    found = read_settings(client, req.bucket)
    changed = [d for d in find_drift(found, req) if d.fixable]
    for drift in changed:
        apply_fix(client, drift.setting, found, req)
    # Read back: an endpoint may accept a setting and quietly not keep it.
    remaining = find_drift(read_settings(client, req.bucket), req) if changed else find_drift(found, req)
    return BootstrapResult(created, changed, remaining)


def bucket_region(client, bucket: str, endpoint_url: str | None) -> str | None:
    """The region to put in the login URL: where an AWS bucket really is; the client's for other endpoints."""
    if endpoint_url:
        return client.meta.region_name
    try:
        return client.get_bucket_location(Bucket=bucket).get("LocationConstraint") or "us-east-1"
    except botocore.exceptions.ClientError:
        # Only the login hint needs it; an identity without s3:GetBucketLocation still gets its answer.
        return client.meta.region_name


# ---------------------------------------------------------------------------------------------------------------
# History and restore.


def _keys(client, bucket: str, prefix: str) -> list[str]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return list(pages.search("Contents[].Key || `[]`"))


def state_versions(client, bucket: str, project: str, stack: str) -> list[dict]:
    """Every version of the stack's state object, newest first, as S3 lists them; a delete marker has no Size."""
    for key in state_keys(project, stack):
        pages = client.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=key)
        found = [v for page in pages for v in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]]
        versions = [v for v in found if v["Key"] == key]
        if versions:
            return sorted(versions, key=lambda v: (v["LastModified"], v["IsLatest"]), reverse=True)
    prefix = f"{STATE_PREFIX}stacks/{project}/"
    names = (re.fullmatch(r"([^/]+)\.json(?:\.gz)?", key[len(prefix) :]) for key in _keys(client, bucket, prefix))
    known = ", ".join(sorted({name.group(1) for name in names if name})) or "none"
    raise NoState(
        f"no state for stack {stack!r} of project {project!r} in bucket {bucket!r} "
        f"(looked for {state_keys(project, stack)[0]}); stacks with state there: {known}. "
        "Check the stack name, or pass --project if Pulumi.yaml names another project"
    )


@dataclass(frozen=True)
class Restored:
    key: str
    new_version_id: str
    replaced_version_id: str | None
    size: int
    sha256: str


def restore(client, bucket: str, project: str, stack: str, version_id: str) -> Restored | None:
    """Copy `version_id` of the stack's state onto the key as a new current version, then check the bytes.

    Returns None when that version is already the current one (nothing to do)."""
    status = client.get_bucket_versioning(Bucket=bucket).get("Status", "never enabled")
    if status != "Enabled":
        raise StateBackendError(
            f"bucket {bucket!r} does not have versioning enabled (found: {status}), so a restore could "
            "overwrite the only copy; run `./supersonic state bootstrap` on it first"
        )
    versions = state_versions(client, bucket, project, stack)
    key = versions[0]["Key"]
    chosen = next((v for v in versions if v["VersionId"] == version_id), None)
    if chosen is None:
        raise StateBackendError(
            f"version {version_id!r} is not a version of {key} in bucket {bucket!r}; "
            f"list the versions with `./supersonic state history {stack} --bucket {bucket}`"
        )
    if "Size" not in chosen:
        raise StateBackendError(
            f"version {version_id!r} of {key} is a delete marker, not a saved state; pick a version from `history` "
            "that has a size"
        )
    if chosen["IsLatest"]:
        return None
    # Pulumi holds .pulumi/locks/<org>/<project>/<stack>/<id>.json while an update runs.
    locks = [
        lock for lock in _keys(client, bucket, f"{STATE_PREFIX}locks/") if lock.split("/")[-3:-1] == [project, stack]
    ]
    if locks:
        raise StateBackendError(
            f"stack {stack!r} is locked ({locks[0]}): an update may be running and would overwrite the restore. "
            f"Wait for it to finish; if none is running, clear the stale lock with `pulumi cancel --stack {stack}`"
        )
    current = next((v["VersionId"] for v in versions if v["IsLatest"]), None)
    source = {"Bucket": bucket, "Key": key, "VersionId": version_id}
    new_version_id = client.copy_object(Bucket=bucket, Key=key, CopySource=source, MetadataDirective="COPY")[
        "VersionId"
    ]
    old_bytes, new_bytes = (
        client.get_object(Bucket=bucket, Key=key, VersionId=v)["Body"].read() for v in (version_id, new_version_id)
    )
    if new_bytes != old_bytes:
        raise StateBackendError(
            f"the restored copy {new_version_id!r} of {key} differs from version {version_id!r}; "
            "do not run pulumi on this stack, and restore again"
        )
    return Restored(key, new_version_id, current, len(new_bytes), hashlib.sha256(new_bytes).hexdigest())
