"""``./supersonic state``'s commands: each reads and changes the bucket through ``backend`` and prints what it did;
the value checks its parser uses (``cli/state.py``)."""

from __future__ import annotations

import argparse
import re
import sys
import time
from datetime import UTC
from urllib.parse import urlsplit

import botocore.exceptions

from supersonic_interlink.state import backend
from supersonic_interlink.state.backend import (
    ACCESS_BLOCK,
    EXIT_DRIFT,
    EXIT_ERROR,
    UNSUPPORTED,
    NoState,
    Requirements,
    StateBackendError,
    show,
)


def _login_line(client, bucket: str, endpoint_url: str | None) -> None:
    region = backend.bucket_region(client, bucket, endpoint_url)
    print(f"log in with: pulumi login '{backend.login_url(bucket, endpoint_url, region)}'")


def command_bootstrap(client, args) -> int:
    region = client.meta.region_name
    req = requirements_from(args, client)
    result = backend.bootstrap(client, req, region=region, endpoint_url=args.endpoint_url)
    if result.created:
        print(f"created bucket {req.bucket}" + ("" if args.endpoint_url else f" in {region}"))
    not_kept = {d.setting for d in result.remaining if d.fixable}
    for drift in result.changed:
        suffix = "; the endpoint did not keep it" if drift.setting in not_kept else ""
        print(f"{'tried to set' if suffix else 'set'} {drift.setting} (was: {show(drift.found)}){suffix}")
    if not req.require_tls:
        print(
            "left out the bucket policy that denies requests without TLS: the endpoint is plain HTTP "
            "(--allow-plain-http), and that policy would refuse every request made through it, Pulumi's included"
        )
    for drift in result.remaining:
        print(f"NOT FIXED {drift.describe()}", file=sys.stderr)
    if result.remaining:
        print(
            f"bucket {req.bucket} does NOT have the required settings: {len(result.remaining)} left to a person "
            "(NOT FIXED above); fix them and run bootstrap again",
            file=sys.stderr,
        )
        return EXIT_DRIFT
    if result.created or result.changed:
        print(f"bucket {req.bucket} now has the required settings")
    else:
        print(f"bucket {req.bucket} already has the required settings; nothing to change")
    _login_line(client, req.bucket, args.endpoint_url)
    return 0


def command_check(client, args) -> int:
    req = requirements_from(args, client)
    found = backend.read_settings(client, req.bucket)  # NoSuchBucket for a missing one: describe_error
    drift = backend.find_drift(found, req)
    if not req.require_tls:
        print(
            "note: the endpoint is plain HTTP (--allow-plain-http), so no policy denying requests without TLS is "
            "required"
        )
    if found[ACCESS_BLOCK] == UNSUPPORTED:
        print("note: the endpoint has no public access block; the bucket policy is checked for public grants instead")
    for item in drift:
        print(f"DRIFT {item.describe()}")
    if drift:
        hint = "; `bootstrap` fixes the fixable ones" if any(d.fixable for d in drift) else ""
        print(f"{len(drift)} setting(s) differ from the requirements{hint}", file=sys.stderr)
        return EXIT_DRIFT
    print(f"bucket {req.bucket} has the required settings")
    _login_line(client, req.bucket, args.endpoint_url)
    return 0


def explained(client, args, no_state: NoState) -> StateBackendError:
    """Over plain HTTP, "no state" under a TLS-only bucket policy is the denial it is: storage that enforces that
    policy on object requests only lists no state, since nothing, Pulumi included, could write any."""
    if backend.is_plain_http(args.endpoint_url) and backend.denies_plain_http(client, args.bucket):
        return StateBackendError(
            f"access denied on bucket {args.bucket!r} at {args.endpoint_url}: its policy denies requests without "
            "TLS (aws:SecureTransport), so no state can be written or read over this plain-HTTP endpoint; use the "
            "endpoint's https:// URL"
        )
    return no_state


def command_history(client, args) -> int:
    status = client.get_bucket_versioning(Bucket=args.bucket).get("Status", "never enabled")
    if status != "Enabled":
        print(f"warning: versioning on bucket {args.bucket} is {status}; older states are not kept", file=sys.stderr)
    try:
        versions = backend.state_versions(client, args.bucket, args.project or backend.project_name(), args.stack)
    except NoState as no_state:
        raise explained(client, args, no_state) from None
    print(f"versions of s3://{args.bucket}/{versions[0]['Key']}, newest first:")
    for version in versions:
        when = version["LastModified"].astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        size = f"{version['Size']} bytes" if "Size" in version else "deleted"
        print(f"{version['VersionId']}  {when}  {size}" + ("  (current)" if version["IsLatest"] else ""))
    return 0


def command_restore(client, args) -> int:
    project = args.project or backend.project_name()
    try:
        restored = backend.restore(client, args.bucket, project, args.stack, args.version_id)
    except NoState as no_state:
        raise explained(client, args, no_state) from None
    if restored is None:
        print(f"version {args.version_id} is already the current state of stack {args.stack}; nothing to do")
        return 0
    print(
        f"restored version {args.version_id} of {restored.key} as the current version {restored.new_version_id} "
        f"({restored.size} bytes, sha256 {restored.sha256}, verified)"
    )
    if restored.replaced_version_id:
        print(
            f"the state it replaced is kept as version {restored.replaced_version_id}; restore it the same way to undo "
            "this"
        )
    return 0


def requirements_from(args, client) -> Requirements:
    plain_http = backend.is_plain_http(args.endpoint_url)
    return Requirements(args.bucket, args.noncurrent_days, args.kms_key_id, client.meta.partition, not plain_http)


# ---------------------------------------------------------------------------------------------------------------
# The values the parser checks before any request.


def positive_days(text: str) -> int:
    days = int(text)
    if days < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 day, got {days}")
    return days


ENDPOINT_FORM = "https://HOST[:PORT], e.g. https://s3.example.org"
_LABEL = r"[A-Za-z0-9](?:[-A-Za-z0-9]{0,61}[A-Za-z0-9])?"
_NETLOC = re.compile(rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{{1,5}})?", re.ASCII)


def endpoint_url(text: str) -> str:
    """An endpoint URL botocore can use: http or https, a host, maybe a port, nothing else."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is empty; expected {ENDPOINT_FORM}, or leave it out for AWS S3")
    try:
        parts = urlsplit(text)
        port_ok = parts.port is None or parts.port > 0
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r} is not a URL ({error}); expected {ENDPOINT_FORM}") from None
    if parts.scheme not in ("https", "http"):
        raise argparse.ArgumentTypeError(f"{text!r} has no https:// or http:// scheme; expected {ENDPOINT_FORM}")
    if not parts.hostname or not port_ok or not _NETLOC.fullmatch(parts.netloc):
        # botocore refuses a host it cannot put in a request line (https://my_host) with a traceback of its own, and
        # urlsplit reads a port written in other scripts' digits.
        raise argparse.ArgumentTypeError(
            f"{text!r} names no host (DNS labels of letters, digits and '-', or an IP address), or a bad port (ASCII "
            f"digits, 1 to 65535); expected {ENDPOINT_FORM}"
        )
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username is not None:
        raise argparse.ArgumentTypeError(
            f"{text!r} has more than scheme, host and port; expected {ENDPOINT_FORM} (buckets are addressed path-style)"
        )
    return text


def kms_key_id(text: str) -> str:
    """A KMS key id, ARN or alias: an empty one would silently mean "any default encryption" (AES256)."""
    if not text.strip() or text != text.strip():
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected a KMS key id, key ARN or alias/NAME; leave --kms-key-id out to accept AES256"
        )
    return text


BUCKET_FORM = "3 to 63 lowercase letters, digits, '.' and '-', starting and ending with a letter or digit"
RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
RESERVED_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3")
"""What S3's general purpose bucket naming rules reserve (access point, Object Lambda and Multi-Region Access
Point aliases, directory buckets): AWS refuses to create such a bucket, and one by that name is not a bucket."""


def bucket_name(text: str) -> str:
    """An S3 bucket name as the S3 naming rules (and Ceph RGW's defaults) allow it, checked before any request."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", text) or ".." in text:
        raise argparse.ArgumentTypeError(f"{text!r} is not a bucket name: expected {BUCKET_FORM}")
    if re.fullmatch(r"\d+\.\d+\.\d+\.\d+", text):
        raise argparse.ArgumentTypeError(f"{text!r} is an IP address, not a bucket name: expected {BUCKET_FORM}")
    reserved = [p for p in RESERVED_PREFIXES if text.startswith(p)] + [s for s in RESERVED_SUFFIXES if text.endswith(s)]
    if reserved:
        raise argparse.ArgumentTypeError(
            f"{text!r} uses {reserved[0]!r}, which S3 reserves (prefixes {', '.join(RESERVED_PREFIXES)}; suffixes "
            f"{', '.join(RESERVED_SUFFIXES)}): expected {BUCKET_FORM}, without those"
        )
    return text


STATE_NAME_FORM = "1 to 100 letters, digits, '-', '_' or '.', not '.' or '..'"


def state_name(text: str) -> str:
    """A stack or project name as it becomes a part of the state object's key (``.pulumi/stacks/<project>/<stack>``):
    the Pulumi CLI's names (tokens ``ParseStackName``, ``ValidateProjectName``), and never a ``.`` or ``..`` part,
    which would name another folder of the bucket; refused before any request."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", text, re.ASCII) or text in (".", ".."):
        raise argparse.ArgumentTypeError(f"{text!r} is not a Pulumi stack or project name: expected {STATE_NAME_FORM}")
    return text


# ---------------------------------------------------------------------------------------------------------------
# Running a command: an S3 or bucket error is one line, exit 2.


def describe_error(error: Exception, bucket: str, endpoint_url: str | None, elapsed_seconds: float = 0.0) -> str:
    """One line for the operator; botocore's own one-line message where it already says what and where."""
    where = endpoint_url or "AWS S3"
    if isinstance(error, botocore.exceptions.ReadTimeoutError):
        return (
            f"no answer from {where} within {backend.READ_TIMEOUT_SECONDS:g} s in each of {backend.MAX_ATTEMPTS} "
            f"attempts (gave up after {elapsed_seconds:.1f} s; never more than {backend.give_up_after_seconds():g} s): "
            "it accepts connections but does not respond; check --endpoint-url and the storage service"
        )
    if isinstance(error, botocore.exceptions.NoCredentialsError):
        return (
            "no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE "
            "(credentials are read only from the standard AWS environment variables and profile files)"
        )
    if not isinstance(error, botocore.exceptions.ClientError):
        return f"{error}; check --endpoint-url, the network, AWS_PROFILE and AWS_REGION"  # botocore's own message
    code = backend.error_code(error)
    if code in backend.NO_SUCH_BUCKET:
        return (
            f"bucket {bucket!r} does not exist at {where}; create it with "
            f"`./supersonic state bootstrap --bucket {bucket}`, or check the name and --endpoint-url"
        )
    if code in backend.ACCESS_DENIED:
        plain_http = (
            "; over plain HTTP, a bucket policy that denies requests without TLS (aws:SecureTransport) refuses every "
            "request: use the endpoint's https:// URL"
        )
        return (
            f"access denied on bucket {bucket!r} at {where} ({error.operation_name}): the credentials from the AWS "
            "environment/profile lack that permission, or a bucket policy denies it; grant it, or use an identity "
            "that has it (AWS_PROFILE)" + (plain_http if backend.is_plain_http(endpoint_url) else "")
        )
    message = error.response.get("Error", {}).get("Message", "")
    return f"{error.operation_name} on bucket {bucket!r} at {where} failed: {code}: {message}"


COMMANDS = {
    "bootstrap": command_bootstrap,
    "check": command_check,
    "history": command_history,
    "restore": command_restore,
}


def run(args: argparse.Namespace) -> int:
    """Run the command ``args`` names (as ``cli/state.py`` parsed them); an S3 or bucket error is one line, exit 2."""
    if args.allow_plain_http:
        print(
            f"warning: {args.endpoint_url} is plain HTTP (--allow-plain-http): requests and state cross the network "
            "unencrypted; use the endpoint's https:// URL outside tests",
            file=sys.stderr,
        )
    start = time.monotonic()
    try:
        return COMMANDS[args.command](backend.make_client(args.endpoint_url), args)
    except StateBackendError as error:
        print(f"error: {error}", file=sys.stderr)
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as error:
        elapsed = time.monotonic() - start
        print(f"error: {describe_error(error, args.bucket, args.endpoint_url, elapsed)}", file=sys.stderr)
    return EXIT_ERROR
