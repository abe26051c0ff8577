"""Running one ``./supersonic state`` verb (``cli/state.py`` parses it): the command-line values checked before any
request, and an S3 or bucket error as one line, exit 2."""

from __future__ import annotations

import argparse
import re
import sys
import time
from urllib.parse import urlsplit

import botocore.exceptions
from botocore.utils import is_valid_endpoint_url, is_valid_ipv6_endpoint_url

from supersonic_interlink.state import backend
from supersonic_interlink.state.backend import ACCESS_DENIED, EXIT_ERROR, NO_SUCH_BUCKET


def positive_days(text: str) -> int:
    if (days := int(text)) < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 day, got {days}")
    return days


ENDPOINT_FORM = "expected https://HOST[:PORT] and nothing more, e.g. https://s3.example.org"


def endpoint_url(text: str) -> str:
    """An endpoint URL botocore can use: http or https, a host (botocore's own check), maybe a port, nothing else."""
    try:
        parts = urlsplit(text)
        ok = parts.port is None or (parts.port > 0 and parts.netloc.isascii())
    except ValueError:
        ok = False
    ok = ok and parts.scheme in ("https", "http") and not (parts.path.strip("/") or parts.query or parts.fragment)
    if not ok or parts.username is not None or not (is_valid_endpoint_url(text) or is_valid_ipv6_endpoint_url(text)):
        raise argparse.ArgumentTypeError(f"{text!r} is not an endpoint URL: {ENDPOINT_FORM}")
    return text


def kms_key_id(text: str) -> str:
    """A KMS key id, ARN or alias: an empty one would silently mean "any default encryption" (AES256)."""
    if not text.strip() or text != text.strip():
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected a KMS key id, key ARN or alias/NAME; leave --kms-key-id out to accept AES256"
        )
    return text


RESERVED = (("xn--", "sthree-", "amzn-s3-demo-"), ("-s3alias", "--ol-s3", ".mrap", "--x-s3"))
"""The prefixes and suffixes S3's general purpose bucket naming rules reserve: AWS refuses to create such a bucket."""
BUCKET_FORM = (
    "expected 3 to 63 lowercase letters, digits, '.' and '-', starting and ending with a letter or digit, not an IP "
    f"address, without the prefixes {', '.join(RESERVED[0])} or the suffixes {', '.join(RESERVED[1])}"
)


def bucket_name(text: str) -> str:
    """An S3 bucket name as the S3 naming rules (and Ceph RGW's defaults) allow it."""
    shaped = re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", text) and ".." not in text
    excluded = re.fullmatch(r"\d+\.\d+\.\d+\.\d+", text) or text.startswith(RESERVED[0]) or text.endswith(RESERVED[1])
    if not shaped or excluded:
        raise argparse.ArgumentTypeError(f"{text!r} is not a bucket name: {BUCKET_FORM}")
    return text


def describe_error(error: Exception, bucket: str, endpoint_url: str | None, elapsed_seconds: float = 0.0) -> str:
    """One line for the operator: botocore's own message, what to do where it does not say."""
    where = endpoint_url or "AWS S3"
    if isinstance(error, botocore.exceptions.ReadTimeoutError):
        return (
            f"no answer from {where} within {backend.READ_TIMEOUT_SECONDS:g} s in each of {backend.MAX_ATTEMPTS} "
            f"attempts (gave up after {elapsed_seconds:.1f} s; never more than {backend.give_up_after_seconds():g} s); "
            "check --endpoint-url"
        )
    if isinstance(error, botocore.exceptions.NoCredentialsError):
        return "no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"
    if not isinstance(error, botocore.exceptions.ClientError):
        return f"{error}; check --endpoint-url, the network, AWS_PROFILE and AWS_REGION"
    code, hint = backend.error_code(error), ""
    if code in NO_SUCH_BUCKET:
        hint = "; create it with `./supersonic state bootstrap`, or check --bucket and --endpoint-url"
    elif code in ACCESS_DENIED:
        hint = "; grant that permission, or use an identity that has it (AWS_PROFILE)"
        tls = ", and a TLS-only bucket policy (aws:SecureTransport) refuses plain HTTP: use https://"
        hint += tls if backend.is_plain_http(endpoint_url) else ""
    return f"bucket {bucket!r} at {where}: {error}{hint}"


def run(args: argparse.Namespace) -> int:
    """Run the verb ``args`` names; an S3 or bucket error is one line, exit 2."""
    if args.allow_plain_http:
        warning = f"{args.endpoint_url} is plain HTTP (--allow-plain-http): state crosses unencrypted"
        print(f"warning: {warning}", file=sys.stderr)
    start = time.monotonic()
    try:
        return backend.bootstrap(backend.make_client(args.endpoint_url), args, fix=args.command == "bootstrap")
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as error:
        elapsed = time.monotonic() - start
        print(f"error: {describe_error(error, args.bucket, args.endpoint_url, elapsed)}", file=sys.stderr)
    return EXIT_ERROR
