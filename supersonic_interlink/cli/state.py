"""Keep the S3 bucket that holds this project's Pulumi state in a shape that cannot lose state.

    ./supersonic state bootstrap --bucket NAME [--endpoint-url URL] [--noncurrent-days N] [--kms-key-id KEY]
    ./supersonic state check     --bucket NAME [--endpoint-url URL] [--noncurrent-days N] [--kms-key-id KEY]
    ./supersonic state history STACK --bucket NAME [--endpoint-url URL] [--project NAME]
    ./supersonic state restore STACK --version-id ID --bucket NAME [--endpoint-url URL] [--project NAME]

Every command also takes --allow-plain-http, needed for an http:// endpoint (tests, loopback). No command deletes
anything; docs/state-backend.md has the settings and the way back.
"""

from __future__ import annotations

from supersonic_interlink.cli import args as args_
from supersonic_interlink.state import backend
from supersonic_interlink.state import verbs as commands


def parser() -> args_.Parser:
    common = args_.Parser(add_help=False)
    common.add_argument("--bucket", required=True, type=commands.bucket_name, help="the bucket that holds Pulumi state")
    common.add_argument(
        "--endpoint-url",
        type=commands.endpoint_url,
        help="an S3-compatible endpoint (Ceph RGW, MinIO), e.g. https://s3.example.org",
    )
    common.add_argument(
        "--allow-plain-http",
        action="store_true",
        help="accept an http:// endpoint (tests, loopback): requests and state then cross the network "
        "unencrypted, and bootstrap leaves out the policy that denies requests without TLS",
    )
    settings = args_.Parser(add_help=False)
    settings.add_argument(
        "--noncurrent-days",
        type=commands.positive_days,
        default=backend.DEFAULT_NONCURRENT_DAYS,
        help="keep replaced state versions this many days before they expire (default %(default)s)",
    )
    settings.add_argument(
        "--kms-key-id",
        type=commands.kms_key_id,
        help="require SSE-KMS with this key instead of any default encryption",
    )
    stack = args_.Parser(add_help=False)
    args_.add_stack(stack, help="the stack name, as in stacks/Pulumi.<stack>.yaml").type = commands.state_name
    stack.add_argument(
        "--project", type=commands.state_name, help="the Pulumi project name (default: name: in Pulumi.yaml)"
    )

    parser = args_.Parser(prog="./supersonic state", description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="command", required=True)
    verbs.add_parser(
        "bootstrap", prog="./supersonic state bootstrap", parents=[common, settings], help="create or fix the bucket"
    )
    verbs.add_parser(
        "check",
        prog="./supersonic state check",
        parents=[common, settings],
        help="report settings that differ; exit 1 if any",
    )
    verbs.add_parser(
        "history",
        prog="./supersonic state history",
        parents=[common, stack],
        help="list the versions of a stack's state",
    )
    restore_parser = verbs.add_parser(
        "restore",
        prog="./supersonic state restore",
        parents=[common, stack],
        help="make an earlier state version current again",
    )
    restore_parser.add_argument("--version-id", required=True, help="a version ID from `history`")
    return parser


def main(argv: list[str]) -> int:
    state = parser()
    args = state.parse_args(argv)
    plain_http = backend.is_plain_http(args.endpoint_url)
    if plain_http and not args.allow_plain_http:
        state.error(
            f"argument --endpoint-url: {args.endpoint_url!r} is plain HTTP: requests and state would cross the network "
            "unencrypted, and the bucket policy bootstrap sets refuses requests without TLS; use the https:// URL, "
            "or pass --allow-plain-http (tests, a loopback endpoint)"
        )
    if args.allow_plain_http and not plain_http:
        state.error("argument --allow-plain-http: applies only to an http:// --endpoint-url")
    return commands.run(args)
