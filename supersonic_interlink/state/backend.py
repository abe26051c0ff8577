"""The state bucket (docs/state-backend.md): the settings that keep Pulumi's state from being lost, archived away or
made public, read and fixed with boto3 by ``bootstrap`` (``check`` only reads)."""

from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import boto3
import botocore.config
import botocore.exceptions
import jmespath

from supersonic_interlink import EXIT_FINDING, EXIT_USAGE

STATE_PREFIX, DEFAULT_NONCURRENT_DAYS = ".pulumi/", 90
LIFECYCLE_RULE_ID, POLICY_SID = "pulumi-state-keep-noncurrent-versions", "DenyInsecureTransport"
ARCHIVE_STORAGE_CLASSES = frozenset({"GLACIER", "DEEP_ARCHIVE"})
"""Reading these needs a restore request first (hours; up to two days for DEEP_ARCHIVE): Pulumi could not read."""
PUBLIC_ACCESS_BLOCK = dict.fromkeys(
    ("BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets"), True
)
UNSUPPORTED = "not implemented by the endpoint"
"""What a setting the endpoint has no API for reads as (MinIO has no public access block)."""
VERSIONING, ENCRYPTION, ACCESS_BLOCK, LIFECYCLE, POLICY = (
    "versioning", "default encryption", "public access block", "lifecycle rule", "bucket policy"
)  # fmt: skip
READS = {  # setting: the boto3 call that reads it, where the setting is in its answer (JMESPath)
    VERSIONING: ("get_bucket_versioning", "Status || 'never enabled'"),
    ENCRYPTION: (
        "get_bucket_encryption",
        "ServerSideEncryptionConfiguration.Rules[0].ApplyServerSideEncryptionByDefault",
    ),
    ACCESS_BLOCK: ("get_public_access_block", "PublicAccessBlockConfiguration"),
    LIFECYCLE: ("get_bucket_lifecycle_configuration", "Rules || `[]`"),
    POLICY: ("get_bucket_policy", "Policy"),
}
NONE_CONFIGURED = {"ServerSideEncryptionConfigurationNotFoundError", "NoSuchPublicAccessBlockConfiguration"}
NONE_CONFIGURED |= {"NoSuchBucketPolicy", "NoSuchLifecycleConfiguration", "NoSuchLifecycle"}
NOT_IMPLEMENTED, NO_SUCH_BUCKET = {"NotImplemented", "XNotImplemented"}, {"NoSuchBucket", "404", "NotFound"}
ACCESS_DENIED = {"AccessDenied", "AllAccessDisabled", "403", "Forbidden"}
EXIT_DRIFT, EXIT_ERROR = EXIT_FINDING, EXIT_USAGE

# An endpoint that accepts connections and never answers must fail fast, not after botocore's 60 s read timeout per
# attempt. Standard-mode retries back off by at most 50 ms and 100 ms for such errors
# (botocore.retries.standard.ExponentialBackoff).
CONNECT_TIMEOUT_SECONDS, READ_TIMEOUT_SECONDS, MAX_ATTEMPTS, RETRY_BACKOFF_ALLOWANCE_SECONDS = 3.0, 6.0, 3, 1.0


def give_up_after_seconds() -> float:
    return MAX_ATTEMPTS * (CONNECT_TIMEOUT_SECONDS + READ_TIMEOUT_SECONDS) + RETRY_BACKOFF_ALLOWANCE_SECONDS


@dataclass(frozen=True)
class Requirements:
    bucket: str
    noncurrent_days: int = DEFAULT_NONCURRENT_DAYS
    kms_key_id: str | None = None
    partition: str = "aws"
    require_tls: bool = True
    """False only for a plain HTTP endpoint: a policy denying requests without TLS would lock it out."""


@dataclass(frozen=True)
class Drift:
    """One setting that differs from the requirements; `fixable` is False when bootstrap must not touch it."""

    setting: str
    found: Any
    expected: Any
    fixable: bool = True


def show(value: Any) -> str:
    if value is None:
        return "nothing configured"
    return json.dumps(value, sort_keys=True, default=str) if isinstance(value, dict | list) else str(value)


def as_list(value: Any) -> list:
    return [] if value is None else value if isinstance(value, list) else [value]


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
    """Expire only versions that something newer replaced, never the current state."""
    return {
        "ID": LIFECYCLE_RULE_ID,
        "Status": "Enabled",
        "Filter": {"Prefix": STATE_PREFIX},
        "NoncurrentVersionExpiration": {"NoncurrentDays": noncurrent_days},
        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7},
    }


def rule_prefix(rule: dict) -> str | None:
    """The key prefix a lifecycle rule applies to; None for one that matches only tagged objects (Pulumi tags none)."""
    if (rule_filter := rule.get("Filter")) is None:
        return rule.get("Prefix", "")
    rule_filter = rule_filter.get("And", rule_filter)
    return None if "Tag" in rule_filter or rule_filter.get("Tags") else rule_filter.get("Prefix", "")


def lifecycle_hazards(rules: list[dict], days: int) -> list[Drift]:
    """Other rules that would expire state under .pulumi/, or archive a version within the kept window. Never fixed."""
    expected = f"no expiry of current versions under .pulumi/, and every version there readable for {days} days"
    return [
        Drift(f"lifecycle rule {rule.get('ID', '(no ID)')!r}", rule, expected, False)
        for rule in rules
        if rule.get("ID") != LIFECYCLE_RULE_ID
        and rule.get("Status") == "Enabled"
        and (prefix := rule_prefix(rule)) is not None
        and (STATE_PREFIX.startswith(prefix) or prefix.startswith(STATE_PREFIX))
        and (
            {"Days", "Date"} & set(rule.get("Expiration", {}))
            or rule.get("NoncurrentVersionExpiration", {}).get("NoncurrentDays", days) < days
            or any(t.get("StorageClass") in ARCHIVE_STORAGE_CLASSES for t in rule.get("Transitions", []))
            or any(
                t.get("StorageClass") in ARCHIVE_STORAGE_CLASSES and t.get("NoncurrentDays", days) < days
                for t in rule.get("NoncurrentVersionTransitions", [])
            )
        )
    ]


def normalized_rule(rule: dict | None) -> dict | None:
    """The parts of a lifecycle rule that matter, in one spelling (endpoints echo rules back differently)."""
    parts = ("Status", "Expiration", "Transitions", "NoncurrentVersionExpiration", "AbortIncompleteMultipartUpload")
    return None if rule is None else {"Prefix": rule_prefix(rule), **{part: rule.get(part) for part in parts}}


def settings(found: dict[str, Any], req: Requirements) -> list[tuple[str, Any, Any, bool, str, dict[str, Any]]]:
    """Each setting as (name, what was found, what is required, whether it is met, the boto3 call that sets it, its
    arguments), in the order bootstrap fixes them. Any default encryption will do unless a KMS key is asked for (KMS
    is never downgraded to AES256); an operator's other lifecycle rules and policy statements stay."""
    kms = {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": req.kms_key_id}
    sse = {key: (found[ENCRYPTION] or {}).get(key) for key in kms}
    encrypted = sse == kms if req.kms_key_id else sse["SSEAlgorithm"] in {"AES256", "aws:kms", "aws:kms:dsse"}
    encryption = [{"ApplyServerSideEncryptionByDefault": kms if req.kms_key_id else {"SSEAlgorithm": "AES256"}}]
    rule, rules = state_lifecycle_rule(req.noncurrent_days), found[LIFECYCLE] or []
    ours = next((r for r in rules if r.get("ID") == LIFECYCLE_RULE_ID), None)
    tls = deny_insecure_transport_statement(req.bucket, req.partition)
    policy = found[POLICY] or {"Version": "2012-10-17"}
    statements = as_list(policy.get("Statement"))
    kept = [s for s in statements if s.get("Sid") != POLICY_SID]
    # The required statement under any Sid; an equivalent spelling counts as missing, and bootstrap adds ours.
    has_tls = not req.require_tls or any({**s, "Sid": POLICY_SID} == tls for s in statements)
    access_block = found[ACCESS_BLOCK] in (UNSUPPORTED, PUBLIC_ACCESS_BLOCK)
    return [  # one row a setting
        (VERSIONING, found[VERSIONING], "Enabled", found[VERSIONING] == "Enabled", "put_bucket_versioning",
         {"VersioningConfiguration": {"Status": "Enabled"}}),
        (ENCRYPTION, found[ENCRYPTION], kms if req.kms_key_id else "AES256 or aws:kms", encrypted,
         "put_bucket_encryption", {"ServerSideEncryptionConfiguration": {"Rules": encryption}}),
        (ACCESS_BLOCK, found[ACCESS_BLOCK], PUBLIC_ACCESS_BLOCK, access_block, "put_public_access_block",
         {"PublicAccessBlockConfiguration": PUBLIC_ACCESS_BLOCK}),
        (LIFECYCLE, ours, rule, normalized_rule(ours) == normalized_rule(rule), "put_bucket_lifecycle_configuration",
         {"LifecycleConfiguration": {"Rules": [*(r for r in rules if r is not ours), rule]}}),
        (POLICY, "no statement denying non-TLS access", tls, has_tls, "put_bucket_policy",
         {"Policy": json.dumps({**policy, "Statement": [*kept, tls]})}),
    ]  # fmt: skip


def find_drift(found: dict[str, Any], req: Requirements) -> list[Drift]:
    """Every way the settings found differ from ``req``, in the order bootstrap fixes them."""
    drift = [Drift(name, was, should) for name, was, should, ok, *_ in settings(found, req) if not ok]
    drift += lifecycle_hazards(found[LIFECYCLE] or [], req.noncurrent_days)
    public = "no statement allowing everyone (Principal '*')"
    return drift + [
        Drift(POLICY, s, public, False)
        for s in as_list((found[POLICY] or {}).get("Statement"))
        if s.get("Effect") == "Allow" and not s.get("Condition") and is_everyone(s.get("Principal"))
    ]


def is_everyone(principal: Any) -> bool:
    return principal == "*" or (isinstance(principal, dict) and "*" in as_list(principal.get("AWS")))


def is_plain_http(endpoint_url: str | None) -> bool:
    return bool(endpoint_url) and urlsplit(endpoint_url).scheme == "http"


def login_url(bucket: str, endpoint_url: str | None, region: str | None) -> str:
    """The `pulumi login` URL for this bucket, in the query form Pulumi's S3 driver reads."""
    if not endpoint_url:
        return f"s3://{bucket}?region={region}" if region else f"s3://{bucket}"
    query = f"endpoint={urlsplit(endpoint_url).netloc}&s3ForcePathStyle=true&region={region or 'us-east-1'}"
    return f"s3://{bucket}?{query}" + ("&disableSSL=true" if is_plain_http(endpoint_url) else "")


def make_client(endpoint_url: str | None):
    """An S3 client using only the standard AWS credential chain; path-style addressing for other endpoints."""
    options: dict[str, Any] = {"connect_timeout": CONNECT_TIMEOUT_SECONDS, "read_timeout": READ_TIMEOUT_SECONDS}
    options["retries"] = {"total_max_attempts": MAX_ATTEMPTS, "mode": "standard"}
    if endpoint_url:  # Ceph and MinIO before 2025 reject the CRC checksums botocore adds by default since 1.36.
        options |= {"s3": {"addressing_style": "path"}, "request_checksum_calculation": "when_required"}
        options["response_checksum_validation"] = "when_required"
    return boto3.session.Session().client("s3", endpoint_url=endpoint_url, config=botocore.config.Config(**options))


def error_code(error: botocore.exceptions.ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def read_settings(client, bucket: str) -> dict[str, Any]:
    """Each setting as plain data: None when the bucket has none configured, UNSUPPORTED for a missing API."""
    found: dict[str, Any] = {}
    for setting, (method, where) in READS.items():
        try:
            found[setting] = jmespath.search(where, getattr(client, method)(Bucket=bucket))
        except botocore.exceptions.ClientError as error:
            if error_code(error) not in NONE_CONFIGURED | NOT_IMPLEMENTED:
                raise
            found[setting] = UNSUPPORTED if error_code(error) in NOT_IMPLEMENTED and setting == ACCESS_BLOCK else None
    return found | {POLICY: json.loads(found[POLICY]) if found[POLICY] else None}


def _created(client, bucket: str, endpoint_url: str | None) -> bool:
    region = client.meta.region_name
    try:
        client.head_bucket(Bucket=bucket)
        return False
    except botocore.exceptions.ClientError as error:
        if error_code(error) not in NO_SUCH_BUCKET:
            raise
    # Only AWS wants the region spelled out; Ceph reads LocationConstraint as a zonegroup name.
    where = {} if endpoint_url or region in (None, "us-east-1") else {"LocationConstraint": region}
    client.create_bucket(Bucket=bucket, **({"CreateBucketConfiguration": where} if where else {}))
    print(f"created bucket {bucket}" + ("" if endpoint_url else f" in {region}"))
    return True


def bootstrap(client, args, *, fix: bool = True) -> int:
    """Create the bucket if needed and fix every fixable drift, then read back (an endpoint may accept a setting and
    not keep it); a second run changes nothing. Without ``fix``, ``check``: the drift reported, nothing written."""
    plain_http = is_plain_http(args.endpoint_url)
    req = Requirements(args.bucket, args.noncurrent_days, args.kms_key_id, client.meta.partition, not plain_http)
    created = fix and _created(client, req.bucket, args.endpoint_url)
    found = read_settings(client, req.bucket)
    changed = [d for d in find_drift(found, req) if d.fixable and fix]
    writes = {name: (method, arguments) for name, _, _, _, method, arguments in settings(found, req)}
    for drift in changed:
        method, arguments = writes[drift.setting]
        getattr(client, method)(Bucket=req.bucket, **arguments)
    remaining = find_drift(read_settings(client, req.bucket), req) if changed else find_drift(found, req)
    not_kept = {d.setting for d in remaining if d.fixable}
    for drift in changed:
        kept = drift.setting not in not_kept
        note = "" if kept else "; the endpoint did not keep it"
        print(f"{'set' if kept else 'tried to set'} {drift.setting} (was: {show(drift.found)}){note}")
    if plain_http:
        print("no bucket policy denying requests without TLS: it would lock out this plain-HTTP endpoint")
    for drift in remaining:
        print(f"DRIFT {drift.setting}: found {show(drift.found)}; expected {show(drift.expected)}")
    if remaining:
        left = "left to a person" if fix else "differ; `bootstrap` fixes the fixable ones"
        print(f"bucket {req.bucket} does NOT have the required settings: {len(remaining)} {left}", file=sys.stderr)
        return EXIT_DRIFT
    done = "now has the required settings" if created or changed else "has the required settings; nothing to change"
    print(f"bucket {req.bucket} {done}")
    region = client.meta.region_name
    if not args.endpoint_url:  # where an AWS bucket really is, if s3:GetBucketLocation answers
        with contextlib.suppress(botocore.exceptions.ClientError):
            region = client.get_bucket_location(Bucket=req.bucket).get("LocationConstraint") or "us-east-1"
    print(f"log in with: pulumi login '{login_url(req.bucket, args.endpoint_url, region)}'")
    return 0
