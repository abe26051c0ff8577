"""The state bucket's required settings, the differences from them, and the S3 calls that read, fix, list and restore
(``./supersonic state``; its commands are in ``commands.py``)."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import boto3
import botocore.config
import botocore.exceptions

from supersonic_interlink import ROOT

DEFAULT_PROJECT = "supersonic-interlink"
PULUMI_YAML = ROOT / "Pulumi.yaml"

STATE_PREFIX = ".pulumi/"
LOCKS_PREFIX = ".pulumi/locks/"
LIFECYCLE_RULE_ID = "pulumi-state-keep-noncurrent-versions"
POLICY_SID = "DenyInsecureTransport"
DEFAULT_NONCURRENT_DAYS = 90
INCOMPLETE_UPLOAD_DAYS = 7
# Reading these storage classes needs a restore request first, so Pulumi could no longer read its state.
ARCHIVE_STORAGE_CLASSES = frozenset({"GLACIER", "DEEP_ARCHIVE"})

PUBLIC_ACCESS_BLOCK = {
    "BlockPublicAcls": True,
    "IgnorePublicAcls": True,
    "BlockPublicPolicy": True,
    "RestrictPublicBuckets": True,
}

# The settings bootstrap owns, by the name check reports them under.
VERSIONING = "versioning"
ENCRYPTION = "default encryption"
ACCESS_BLOCK = "public access block"
POLICY = "bucket policy"
LIFECYCLE = "lifecycle rule"

# Answers that mean "this bucket has no such configuration", per setting.
NOT_CONFIGURED = {
    ENCRYPTION: {"ServerSideEncryptionConfigurationNotFoundError"},
    ACCESS_BLOCK: {"NoSuchPublicAccessBlockConfiguration"},
    POLICY: {"NoSuchBucketPolicy"},
    LIFECYCLE: {"NoSuchLifecycleConfiguration", "NoSuchLifecycle"},
}
NOT_IMPLEMENTED = {"NotImplemented", "XNotImplemented"}
ACCESS_DENIED = {"AccessDenied", "AllAccessDisabled", "403", "Forbidden"}
BAD_CREDENTIALS = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken"}
NO_SUCH_BUCKET = {"NoSuchBucket", "404", "NotFound"}

EXIT_DRIFT = 1
EXIT_ERROR = 2

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


class Unsupported(Enum):
    """The endpoint does not implement this setting at all (MinIO has no public access block API).

    A one-member enum, so that type checkers narrow ``x is UNSUPPORTED`` (a plain object would not)."""

    NOT_IMPLEMENTED = "not implemented by the endpoint"

    def __str__(self) -> str:
        return self.value


UNSUPPORTED: Final = Unsupported.NOT_IMPLEMENTED


@dataclass(frozen=True)
class Requirements:
    """What the bucket must look like; everything else in this module derives from it."""

    bucket: str
    noncurrent_days: int = DEFAULT_NONCURRENT_DAYS
    kms_key_id: str | None = None
    partition: str = "aws"
    require_tls: bool = True
    """False only for an endpoint allowed to be plain HTTP: a policy denying requests without TLS would lock it out."""


@dataclass(frozen=True)
class BucketSettings:
    """The settings read back from a bucket, as plain data. None means the bucket has none configured."""

    versioning: str
    encryption: dict | None
    public_access_block: dict | Unsupported | None
    policy: dict | None
    lifecycle_rules: list[dict]


@dataclass(frozen=True)
class Drift:
    """One setting that differs from the requirements. `fixable` is False when bootstrap must not touch it."""

    setting: str
    found: Any
    expected: Any
    fixable: bool = True

    def describe(self) -> str:
        return f"{self.setting}: found {show(self.found)}; expected {show(self.expected)}"


# ---------------------------------------------------------------------------------------------------------------
# The required settings, as plain data.


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
        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": INCOMPLETE_UPLOAD_DAYS},
    }


def default_encryption(kms_key_id: str | None) -> dict:
    if kms_key_id:
        return {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": kms_key_id}
    return {"SSEAlgorithm": "AES256"}


def required_settings(req: Requirements) -> dict:
    """The whole required configuration in one document, the way `check` compares it."""
    required = {
        VERSIONING: "Enabled",
        ENCRYPTION: default_encryption(req.kms_key_id),
        ACCESS_BLOCK: PUBLIC_ACCESS_BLOCK,
        LIFECYCLE: state_lifecycle_rule(req.noncurrent_days),
    }
    if req.require_tls:
        required[POLICY] = deny_insecure_transport_statement(req.bucket, req.partition)
    return required


# ---------------------------------------------------------------------------------------------------------------
# Comparing found settings with the requirements. Pure functions over plain data.


def encryption_satisfies(found: dict | None, kms_key_id: str | None) -> bool:
    """Any default encryption meets the requirement, unless a KMS key was asked for; KMS is never downgraded."""
    if not found:
        return False
    algorithm = found.get("SSEAlgorithm")
    if kms_key_id:
        return algorithm == "aws:kms" and found.get("KMSMasterKeyID") == kms_key_id
    return algorithm in {"AES256", "aws:kms", "aws:kms:dsse"}


def _as_list(value: Any) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _is_everyone(principal: Any) -> bool:
    if principal == "*":
        return True
    return isinstance(principal, dict) and "*" in _as_list(principal.get("AWS"))


def denies_insecure_transport(statement: dict, bucket: str, partition: str) -> bool:
    """True for a statement equivalent to the required one, whatever its Sid or list-or-string spelling."""
    wanted = deny_insecure_transport_statement(bucket, partition)
    condition = statement.get("Condition", {}).get("Bool", {})
    secure_transport = str(condition.get("aws:SecureTransport", "")).lower()
    return (
        statement.get("Effect") == "Deny"
        and _is_everyone(statement.get("Principal"))
        and bool(set(_as_list(statement.get("Action"))) & {"s3:*", "*"})
        and set(_as_list(statement.get("Resource"))) >= set(wanted["Resource"])
        and secure_transport == "false"
    )


def public_grants(policy: dict | None) -> list[dict]:
    """Statements that allow anyone at all, without a condition that narrows who."""
    statements = _as_list((policy or {}).get("Statement"))
    return [
        s
        for s in statements
        if s.get("Effect") == "Allow" and _is_everyone(s.get("Principal")) and not s.get("Condition")
    ]


def rule_prefix(rule: dict) -> str | None:
    """The key prefix a lifecycle rule applies to ("" for the whole bucket), or None if it only matches tagged
    objects, which Pulumi never writes."""
    rule_filter = rule.get("Filter")
    if rule_filter is None:
        return rule.get("Prefix", "")
    if "Tag" in rule_filter:
        return None
    if "And" in rule_filter:
        if rule_filter["And"].get("Tags"):
            return None
        return rule_filter["And"].get("Prefix", "")
    return rule_filter.get("Prefix", "")


def applies_to_state(rule: dict) -> bool:
    prefix = rule_prefix(rule)
    if prefix is None or rule.get("Status") != "Enabled":
        return False
    return STATE_PREFIX.startswith(prefix) or prefix.startswith(STATE_PREFIX)


def lifecycle_hazards(rules: list[dict], noncurrent_days: int) -> list[Drift]:
    """Other rules that would lose or lock away state. Bootstrap reports these and leaves them to a person."""
    hazards = []
    for rule in rules:
        if rule.get("ID") == LIFECYCLE_RULE_ID or not applies_to_state(rule):
            continue
        name = f"lifecycle rule {rule.get('ID', '(no ID)')!r}"
        expiration = rule.get("Expiration", {})
        if "Days" in expiration or "Date" in expiration:
            hazards.append(
                Drift(name, {"Expiration": expiration}, "no expiry of current versions under .pulumi/", False)
            )
        noncurrent = rule.get("NoncurrentVersionExpiration", {}).get("NoncurrentDays")
        if noncurrent is not None and noncurrent < noncurrent_days:
            hazards.append(
                Drift(
                    name,
                    {"NoncurrentDays": noncurrent},
                    f"noncurrent versions under .pulumi/ kept at least {noncurrent_days} days",
                    False,
                )
            )
        archived = [t for t in rule.get("Transitions", []) if t.get("StorageClass") in ARCHIVE_STORAGE_CLASSES]
        if archived:
            hazards.append(
                Drift(
                    name, {"Transitions": archived}, "no archive transition of current versions under .pulumi/", False
                )
            )
        # An archived version cannot be read until a restore request finishes (hours for GLACIER, up to two days for
        # DEEP_ARCHIVE), so `state restore` of a version archived within the kept window fails when it is needed.
        old_archived = [
            t
            for t in rule.get("NoncurrentVersionTransitions", [])
            if t.get("StorageClass") in ARCHIVE_STORAGE_CLASSES
            and isinstance(t.get("NoncurrentDays"), int)
            and t["NoncurrentDays"] < noncurrent_days
        ]
        if old_archived:
            hazards.append(
                Drift(
                    name,
                    {"NoncurrentVersionTransitions": old_archived},
                    f"noncurrent versions under .pulumi/ readable (not archived) for at least {noncurrent_days} days, "
                    "so state restore can read them",
                    False,
                )
            )
    return hazards


def find_drift(found: BucketSettings, req: Requirements) -> list[Drift]:
    """Every way `found` differs from `req`, in the order bootstrap fixes them."""
    wanted = required_settings(req)
    drift = []
    if found.versioning != "Enabled":
        drift.append(Drift(VERSIONING, found.versioning, wanted[VERSIONING]))
    if not encryption_satisfies(found.encryption, req.kms_key_id):
        expected = wanted[ENCRYPTION] if req.kms_key_id else "AES256 or aws:kms"
        drift.append(Drift(ENCRYPTION, found.encryption, expected))
    if found.public_access_block is not UNSUPPORTED and found.public_access_block != PUBLIC_ACCESS_BLOCK:
        drift.append(Drift(ACCESS_BLOCK, found.public_access_block, PUBLIC_ACCESS_BLOCK))
    lifecycle = [r for r in found.lifecycle_rules if r.get("ID") == LIFECYCLE_RULE_ID]
    if not lifecycle or normalized_rule(lifecycle[0]) != normalized_rule(wanted[LIFECYCLE]):
        drift.append(Drift(LIFECYCLE, lifecycle[0] if lifecycle else None, wanted[LIFECYCLE]))
    drift.extend(lifecycle_hazards(found.lifecycle_rules, req.noncurrent_days))
    statements = _as_list((found.policy or {}).get("Statement"))
    if req.require_tls and not any(denies_insecure_transport(s, req.bucket, req.partition) for s in statements):
        drift.append(Drift(POLICY, "no statement denying non-TLS access", wanted[POLICY]))
    for grant in public_grants(found.policy):
        drift.append(Drift(POLICY, grant, "no statement allowing everyone (Principal '*')", False))
    return drift


def normalized_rule(rule: dict) -> dict:
    """The parts of a lifecycle rule that matter, in one spelling (endpoints echo rules back differently)."""
    return {
        "Status": rule.get("Status"),
        "Prefix": rule_prefix(rule),
        "NoncurrentDays": rule.get("NoncurrentVersionExpiration", {}).get("NoncurrentDays"),
        "AbortDays": rule.get("AbortIncompleteMultipartUpload", {}).get("DaysAfterInitiation"),
        "Expiration": rule.get("Expiration"),
        "Transitions": rule.get("Transitions"),
    }


def merged_policy(existing: dict | None, statement: dict) -> dict:
    """The existing policy with `statement` added, replacing any earlier statement with the same Sid."""
    policy = copy.deepcopy(existing) if existing else {"Version": "2012-10-17"}
    others = [s for s in _as_list(policy.get("Statement")) if s.get("Sid") != statement["Sid"]]
    policy["Statement"] = [*others, statement]
    return policy


def merged_lifecycle(existing: list[dict], rule: dict) -> list[dict]:
    """The existing rules with `rule` added, replacing only an earlier rule with the same ID."""
    return [*(r for r in existing if r.get("ID") != rule["ID"]), rule]


def show(value: Any) -> str:
    if value is None:
        return "nothing configured"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


# ---------------------------------------------------------------------------------------------------------------
# Login URL and names.


def login_url(bucket: str, endpoint_url: str | None, region: str | None) -> str:
    """The `pulumi login` URL for this bucket, in the query form Pulumi's S3 driver reads."""
    if not endpoint_url:
        return f"s3://{bucket}?region={region}" if region else f"s3://{bucket}"
    endpoint = urlsplit(endpoint_url)
    query = f"endpoint={endpoint.netloc}&s3ForcePathStyle=true&region={region or 'us-east-1'}"
    if endpoint.scheme == "http":
        query += "&disableSSL=true"
    return f"s3://{bucket}?{query}"


def project_name(pulumi_yaml: Path = PULUMI_YAML) -> str:
    """The project's `name:` from Pulumi.yaml, which names the state folder; the default if there is no file."""
    if not pulumi_yaml.exists():
        return DEFAULT_PROJECT
    match = re.search(r"^name:\s*['\"]?([^'\"\s#]+)", pulumi_yaml.read_text(), re.MULTILINE)
    return match.group(1) if match else DEFAULT_PROJECT


def state_keys(project: str, stack: str) -> list[str]:
    """Where Pulumi keeps a stack's state: plain JSON, or gzipped when PULUMI_SELF_MANAGED_STATE_GZIP is set."""
    base = f"{STATE_PREFIX}stacks/{project}/{stack}.json"
    return [base, f"{base}.gz"]


# ---------------------------------------------------------------------------------------------------------------
# Talking to the bucket.


def make_client(endpoint_url: str | None):
    """An S3 client using only the standard AWS credential chain; path-style addressing for other endpoints."""
    options: dict[str, Any] = {
        "connect_timeout": CONNECT_TIMEOUT_SECONDS,
        "read_timeout": READ_TIMEOUT_SECONDS,
        "retries": {"total_max_attempts": MAX_ATTEMPTS, "mode": "standard"},
    }
    if endpoint_url:
        options["s3"] = {"addressing_style": "path"}
        # Ceph and MinIO releases before 2025 reject the CRC checksums botocore adds by default since 1.36.
        options["request_checksum_calculation"] = "when_required"
        options["response_checksum_validation"] = "when_required"
    session = boto3.session.Session()
    return session.client("s3", endpoint_url=endpoint_url, config=botocore.config.Config(**options))


def error_code(error: botocore.exceptions.ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def _optional(call, setting: str, **kwargs) -> dict | Unsupported | None:
    try:
        return call(**kwargs)
    except botocore.exceptions.ClientError as error:
        if error_code(error) in NOT_CONFIGURED[setting]:
            return None
        if error_code(error) in NOT_IMPLEMENTED:
            return UNSUPPORTED
        raise


def read_settings(client, bucket: str) -> BucketSettings:
    versioning = client.get_bucket_versioning(Bucket=bucket).get("Status", "never enabled")
    # An endpoint without default encryption reads as none configured; bootstrap's fix then says what it answered.
    encryption: dict | None = None
    configured = _optional(client.get_bucket_encryption, ENCRYPTION, Bucket=bucket)
    if isinstance(configured, dict):
        rules = configured["ServerSideEncryptionConfiguration"].get("Rules", [])
        encryption = rules[0].get("ApplyServerSideEncryptionByDefault") if rules else None
    access_block = _optional(client.get_public_access_block, ACCESS_BLOCK, Bucket=bucket)
    if isinstance(access_block, dict):
        access_block = access_block["PublicAccessBlockConfiguration"]
    policy = _optional(client.get_bucket_policy, POLICY, Bucket=bucket)
    policy = json.loads(policy["Policy"]) if isinstance(policy, dict) else None
    lifecycle = _optional(client.get_bucket_lifecycle_configuration, LIFECYCLE, Bucket=bucket)
    rules = lifecycle.get("Rules", []) if isinstance(lifecycle, dict) else []
    return BucketSettings(versioning, encryption, access_block, policy, rules)


def denies_plain_http(client, bucket: str) -> bool:
    """Whether the bucket's policy denies requests without TLS (any such statement, not only the required one)."""
    found = _optional(client.get_bucket_policy, POLICY, Bucket=bucket)
    policy = json.loads(found["Policy"]) if isinstance(found, dict) else {}
    return any(
        str(s.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport", "")).lower() == "false"
        and s.get("Effect") == "Deny"
        for s in _as_list(policy.get("Statement"))
    )


def bucket_exists(client, bucket: str) -> bool:
    try:
        client.head_bucket(Bucket=bucket)
    except botocore.exceptions.ClientError as error:
        if error_code(error) in NO_SUCH_BUCKET:
            return False
        raise
    return True


def create_bucket(client, bucket: str, region: str | None, endpoint_url: str | None) -> None:
    kwargs: dict[str, Any] = {"Bucket": bucket}
    # Only AWS wants the region spelled out; Ceph reads LocationConstraint as a zonegroup name.
    if not endpoint_url and region and region != "us-east-1":
        kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
    client.create_bucket(**kwargs)


def apply_fix(client, drift: Drift, found: BucketSettings, req: Requirements) -> None:
    bucket = req.bucket
    wanted = required_settings(req)
    if drift.setting == VERSIONING:
        client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    elif drift.setting == ENCRYPTION:
        client.put_bucket_encryption(
            Bucket=bucket,
            ServerSideEncryptionConfiguration={"Rules": [{"ApplyServerSideEncryptionByDefault": wanted[ENCRYPTION]}]},
        )
    elif drift.setting == ACCESS_BLOCK:
        client.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=PUBLIC_ACCESS_BLOCK)
    elif drift.setting == LIFECYCLE:
        rules = merged_lifecycle(found.lifecycle_rules, wanted[LIFECYCLE])
        client.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": rules})
    elif drift.setting == POLICY:
        policy = merged_policy(found.policy, wanted[POLICY])
        client.put_bucket_policy(Bucket=bucket, Policy=json.dumps(policy))
    else:
        raise AssertionError(f"no fix for {drift.setting!r}")


@dataclass(frozen=True)
class BootstrapResult:
    created: bool
    changed: list[Drift]
    remaining: list[Drift]


def bootstrap(client, req: Requirements, *, region: str | None, endpoint_url: str | None) -> BootstrapResult:
    """Create the bucket if needed and fix every fixable drift; a second run changes nothing."""
    created = not bucket_exists(client, req.bucket)
    if created:
        create_bucket(client, req.bucket, region, endpoint_url)
    found = read_settings(client, req.bucket)
    changed = [d for d in find_drift(found, req) if d.fixable]
    for drift in changed:
        try:
            apply_fix(client, drift, found, req)
        except botocore.exceptions.ClientError as error:
            if error_code(error) in NOT_IMPLEMENTED:
                raise StateBackendError(
                    f"the endpoint does not implement {drift.setting} ({error_code(error)}: "
                    f"{error.response['Error'].get('Message', '')}); enable it on the storage side "
                    "(e.g. a KMS for MinIO, rgw crypt settings for Ceph) and run bootstrap again"
                ) from error
            raise
    # Read back: an endpoint may accept a setting and quietly not keep it.
    remaining = find_drift(read_settings(client, req.bucket), req) if changed else find_drift(found, req)
    return BootstrapResult(created, changed, remaining)


# ---------------------------------------------------------------------------------------------------------------
# History and restore.


@dataclass(frozen=True)
class StateVersion:
    key: str
    version_id: str
    last_modified: Any
    size: int | None
    is_latest: bool
    is_delete_marker: bool


def list_versions(client, bucket: str, key: str) -> list[StateVersion]:
    """Every version of exactly `key`, newest first, delete markers included."""
    versions = []
    for page in client.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=key):
        found = [(item, False) for item in page.get("Versions", [])]
        found += [(item, True) for item in page.get("DeleteMarkers", [])]
        versions += [
            StateVersion(key, item["VersionId"], item["LastModified"], item.get("Size"), item["IsLatest"], marker)
            for item, marker in found
            if item["Key"] == key
        ]
    return sorted(versions, key=lambda v: (v.last_modified, v.is_latest), reverse=True)


def _keys(client, bucket: str, prefix: str) -> list[str]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return list(pages.search("Contents[].Key || `[]`"))


def stack_names(client, bucket: str, project: str) -> list[str]:
    """The stacks of `project` with state in the bucket: plain JSON or gzipped (``state_keys``)."""
    prefix = f"{STATE_PREFIX}stacks/{project}/"
    names = (re.fullmatch(r"([^/]+)\.json(?:\.gz)?", key[len(prefix) :]) for key in _keys(client, bucket, prefix))
    return sorted({name.group(1) for name in names if name})


def state_versions(client, bucket: str, project: str, stack: str) -> list[StateVersion]:
    for key in state_keys(project, stack):
        versions = list_versions(client, bucket, key)
        if versions:
            return versions
    known = ", ".join(stack_names(client, bucket, project)) or "none"
    raise NoState(
        f"no state for stack {stack!r} of project {project!r} in bucket {bucket!r} "
        f"(looked for {state_keys(project, stack)[0]}); stacks with state there: {known}. "
        "Check the stack name, or pass --project if Pulumi.yaml names another project"
    )


def stack_locks(client, bucket: str, project: str, stack: str) -> list[str]:
    """Lock objects Pulumi holds for this stack while an update runs (.pulumi/locks/<org>/<project>/<stack>/)."""
    return [key for key in _keys(client, bucket, LOCKS_PREFIX) if key.split("/")[-3:-1] == [project, stack]]


@dataclass(frozen=True)
class Restored:
    key: str
    restored_version_id: str
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
    chosen = next((v for v in versions if v.version_id == version_id), None)
    if chosen is None:
        raise StateBackendError(
            f"version {version_id!r} is not a version of {versions[0].key} in bucket {bucket!r}; "
            f"list the versions with `./supersonic state history {stack} --bucket {bucket}`"
        )
    if chosen.is_delete_marker:
        raise StateBackendError(
            f"version {version_id!r} of {chosen.key} is a delete marker, not a saved state; "
            "pick a version from `history` that has a size"
        )
    if chosen.is_latest:
        return None
    locks = stack_locks(client, bucket, project, stack)
    if locks:
        raise StateBackendError(
            f"stack {stack!r} is locked ({locks[0]}): an update may be running and would overwrite the restore. "
            f"Wait for it to finish; if none is running, clear the stale lock with `pulumi cancel --stack {stack}`"
        )
    current = next((v for v in versions if v.is_latest), None)
    copied = client.copy_object(
        Bucket=bucket,
        Key=chosen.key,
        CopySource={"Bucket": bucket, "Key": chosen.key, "VersionId": version_id},
        MetadataDirective="COPY",
    )
    new_version_id = copied["VersionId"]
    old_bytes = client.get_object(Bucket=bucket, Key=chosen.key, VersionId=version_id)["Body"].read()
    new_bytes = client.get_object(Bucket=bucket, Key=chosen.key, VersionId=new_version_id)["Body"].read()
    if new_bytes != old_bytes:
        raise StateBackendError(
            f"the restored copy {new_version_id!r} of {chosen.key} differs from version {version_id!r}; "
            "do not run pulumi on this stack, and restore again"
        )
    return Restored(
        chosen.key,
        version_id,
        new_version_id,
        current.version_id if current else None,
        len(new_bytes),
        hashlib.sha256(new_bytes).hexdigest(),
    )


# ---------------------------------------------------------------------------------------------------------------
# Endpoints and regions.


def is_plain_http(endpoint_url: str | None) -> bool:
    return bool(endpoint_url) and urlsplit(endpoint_url).scheme == "http"


def bucket_region(client, bucket: str, endpoint_url: str | None) -> str | None:
    """The region to put in the login URL: where an AWS bucket really is; the client's for other endpoints."""
    if endpoint_url:
        return client.meta.region_name
    try:
        location = client.get_bucket_location(Bucket=bucket).get("LocationConstraint")
    except botocore.exceptions.ClientError:
        # Only the login hint needs it; an identity without s3:GetBucketLocation still gets its answer.
        return client.meta.region_name
    return location or "us-east-1"
