"""``./supersonic state``: the S3 bucket that holds the Pulumi state, kept in a shape that cannot lose state (boto3,
so a module of its own: the other verbs load without it)."""

from __future__ import annotations

import argparse

from supersonic_interlink.cli.verbs import Parser, Verb
from supersonic_interlink.state import backend
from supersonic_interlink.state import verbs as state_verbs


def _arguments(parser: Parser) -> None:
    """Keep the S3 bucket that holds the Pulumi state in a shape that cannot lose state; nothing is ever deleted
    (docs/state-backend.md)."""
    common = Parser(add_help=False)
    add = common.add_argument
    add("--bucket", required=True, type=state_verbs.bucket_name, help="the bucket that holds the state")
    add("--endpoint-url", type=state_verbs.endpoint_url, help="an S3-compatible endpoint (https://)")
    add("--allow-plain-http", action="store_true", help="accept an http:// endpoint (tests, loopback)")
    days = backend.DEFAULT_NONCURRENT_DAYS
    add("--noncurrent-days", type=state_verbs.positive_days, default=days, help="days replaced versions are kept")
    add("--kms-key-id", type=state_verbs.kms_key_id, help="require SSE-KMS with this key")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("bootstrap", parents=[common], help="create or fix the bucket")
    commands.add_parser("check", parents=[common], help="report settings that differ; exit 1 if any")


def _problem(args: argparse.Namespace) -> str | None:
    plain_http = backend.is_plain_http(args.endpoint_url)
    if plain_http and not args.allow_plain_http:
        return f"argument --endpoint-url: {args.endpoint_url!r} is plain HTTP: use https://, or --allow-plain-http"
    if args.allow_plain_http and not plain_http:
        return "argument --allow-plain-http: applies only to an http:// --endpoint-url"
    return None


STATE = Verb("state", _arguments, state_verbs.run, _problem)
parser, main = STATE.parser, STATE.main
