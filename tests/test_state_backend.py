"""./supersonic state: the bucket settings as data, the commands under moto, and runs over HTTP against moto's
standalone server the way a Ceph RGW or MinIO endpoint is used, with bucket policies enforced as RGW does."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import socket
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
import botocore.config
import botocore.exceptions
import botocore.loaders
import botocore.session
import jmespath
import pytest
from botocore import xform_name
from botocore.awsrequest import AWSResponse
from botocore.retries.standard import ExponentialBackoff, RetryContext
from cli_runner import run_cli
from moto import mock_aws
from moto.core import set_initial_no_auth_action_count
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from moto.s3.models import s3_backends
from werkzeug.serving import make_server

from supersonic_interlink.cli import state as state_cli
from supersonic_interlink.state import backend as sb

ROOT = Path(__file__).resolve().parent.parent
BUCKET = "sonic-pulumi-state"
STATE_KEY = ".pulumi/stacks/supersonic-interlink/hammer.json"
DOCS_VERSION_ID = "8ab11350-8c22-4b3c-9aed-e4cfeb687848"
REGION = "eu-west-1"
OLD_STATE = b'{"version": 3, "checkpoint": {"stack": "organization/supersonic-interlink/hammer", "good": true}}\n'
BAD_STATE = b'{"version": 3, "checkpoint": {"stack": "organization/supersonic-interlink/hammer", "good": fal'


@pytest.fixture(scope="module", autouse=True)
def shared_service_models():
    """botocore's read-only cache of service models shared by every command's fresh client: 0.25 s a command."""
    loader = botocore.loaders.create_loader()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(botocore.session, "create_loader", lambda *args, **kwargs: loader)
        yield


@pytest.fixture
def aws_env(monkeypatch, tmp_path):
    """Dummy credentials from the environment only; no profile or metadata service of the machine leaks in."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def aws(aws_env):
    with mock_aws():
        yield boto3.client("s3", region_name=REGION)


@pytest.fixture
def calls(monkeypatch):
    """Every S3 operation the commands send, by name, so a test can prove what was (not) written."""
    sent: list[str] = []
    make_client = sb.make_client

    def recording_client(endpoint_url):
        client = make_client(endpoint_url)
        client.meta.events.register("before-call.s3.*", lambda model, **_: sent.append(model.name))
        return client

    monkeypatch.setattr(sb, "make_client", recording_client)
    return sent


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = state_cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write_state(s3, body: bytes, key: str = STATE_KEY, bucket: str = BUCKET) -> str:
    return s3.put_object(Bucket=bucket, Key=key, Body=body)["VersionId"]


def test_the_lifecycle_rule_expires_only_replaced_versions_and_the_policy_denies_every_request_without_tls():
    rule = sb.state_lifecycle_rule(30)
    assert rule["NoncurrentVersionExpiration"] == {"NoncurrentDays": 30}, "replaced versions go after the set days"
    assert "Expiration" not in rule and "Transitions" not in rule, "the current state must never expire or move"
    assert rule["Filter"] == {"Prefix": ".pulumi/"}, "only Pulumi's own objects are in scope"
    assert rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"] > 0, "abandoned uploads are cleaned"
    statement = sb.deny_insecure_transport_statement(BUCKET)
    assert statement["Effect"] == "Deny" and statement["Principal"] == "*"
    assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert set(statement["Resource"]) == {f"arn:aws:s3:::{BUCKET}", f"arn:aws:s3:::{BUCKET}/*"}, (
        "the bucket and every object in it are covered"
    )


def test_the_login_url_of_an_https_endpoint_is_in_the_form_pulumis_s3_driver_reads():
    # Ceph and MinIO are addressed path-style, and Pulumi's S3 driver needs some region to sign with. The login URLs
    # of AWS and of a plain-HTTP endpoint are pinned by the bootstrap runs below.
    query = "endpoint=rgw.example.org:8443&s3ForcePathStyle=true&region=us-east-1"
    assert sb.login_url(BUCKET, "https://rgw.example.org:8443", None) == f"s3://{BUCKET}?{query}"


def settings(changes: dict) -> dict:
    """A bucket that meets the requirements, as ``read_settings`` reads it, with ``changes`` by setting."""
    return {
        sb.VERSIONING: "Enabled",
        sb.ENCRYPTION: {"SSEAlgorithm": "AES256"},
        sb.ACCESS_BLOCK: dict(sb.PUBLIC_ACCESS_BLOCK),
        sb.POLICY: {"Version": "2012-10-17", "Statement": [sb.deny_insecure_transport_statement(BUCKET)]},
        sb.LIFECYCLE: [sb.state_lifecycle_rule(sb.DEFAULT_NONCURRENT_DAYS)],
    } | changes


KMS = {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "alias/state"}


def lifecycle(*rules: dict) -> list[dict]:
    return [sb.state_lifecycle_rule(90), *({"Status": "Enabled", "Filter": {"Prefix": ""}} | r for r in rules)]


def public_grant(principal: object) -> dict:
    grant = {"Sid": "Public", "Effect": "Allow", "Principal": principal, "Action": "s3:GetObject", "Resource": "*"}
    return {"Statement": [sb.deny_insecure_transport_statement(BUCKET), grant]}


def cold(days: int, storage_class: str) -> dict:
    return {"ID": "cold", "NoncurrentVersionTransitions": [{"NoncurrentDays": days, "StorageClass": storage_class}]}


@pytest.mark.parametrize(
    ("found", "required", "drift", "why"),
    [
        ({}, {}, [], "a bucket with the required settings has no drift"),
        ({sb.LIFECYCLE: lifecycle({"ID": "tidy", "Filter": {}, "Expiration": {"Days": 365}})}, {},
         [("lifecycle rule 'tidy'", False)], "a whole-bucket expiry would delete the current state one day"),
        ({sb.LIFECYCLE: lifecycle(
            {"ID": "logs", "Filter": {"Prefix": "logs/"}, "Expiration": {"Days": 1}},
            {"ID": "tmp", "Filter": {"Tag": {"Key": "tmp", "Value": "1"}}, "Expiration": {"Days": 1}},
            {"ID": "off", "Status": "Disabled", "Expiration": {"Days": 1}},
        )}, {}, [], "Pulumi never writes under logs/ or tags its objects, and a disabled rule does nothing"),
        ({sb.LIFECYCLE: lifecycle(
            {"ID": "short", "Filter": None, "Prefix": ".pulumi/", "NoncurrentVersionExpiration": {"NoncurrentDays": 3}},
            {"ID": "glacier", "Transitions": [{"Days": 30, "StorageClass": "GLACIER"}]},
        )}, {}, [("lifecycle rule 'short'", False), ("lifecycle rule 'glacier'", False)],
         "3 days undercuts the promised retention, and Pulumi cannot read state from Glacier"),
        # An archived version takes hours (DEEP_ARCHIVE: two days) to restore; within 90 days each must read at once.
        ({sb.LIFECYCLE: lifecycle(cold(1, "DEEP_ARCHIVE"))}, {}, [("lifecycle rule 'cold'", False)], "archived"),
        ({sb.LIFECYCLE: lifecycle(cold(89, "GLACIER"))}, {}, [("lifecycle rule 'cold'", False)], "archived"),
        ({sb.LIFECYCLE: lifecycle(cold(90, "GLACIER"))}, {}, [], "archived after the kept window"),
        ({sb.LIFECYCLE: lifecycle(cold(1, "STANDARD_IA"))}, {}, [], "readable at once"),
        ({sb.ENCRYPTION: KMS}, {}, [], "KMS is not downgraded to AES256"),
        ({sb.ENCRYPTION: KMS}, {"kms_key_id": "alias/other"}, [("default encryption", True)],
         "an explicitly required key must be the one used"),
        ({sb.ACCESS_BLOCK: sb.UNSUPPORTED}, {}, [],
         "MinIO has no such API; check would otherwise fail forever on a bucket that cannot be fixed"),
        # State holds every resource's inputs; a public read is a leak bootstrap must not decide about.
        *(({sb.POLICY: public_grant(principal)}, {}, [("bucket policy", False)] if public else [], "a public grant")
          for principal, public in (("*", True), ({"AWS": "*"}, True), ({"AWS": ["arn:aws:iam::1:root", "*"]}, True),
                                    ({"AWS": "arn:aws:iam::1:root"}, False))),
    ],
)  # fmt: skip
def test_the_settings_found_are_compared_with_the_requirements(found, required, drift, why):
    found_drift = sb.find_drift(settings(found), sb.Requirements(BUCKET, **required))
    assert [(d.setting, d.fixable) for d in found_drift] == drift, why


def test_bootstrap_creates_a_bucket_with_every_required_setting_and_a_second_run_changes_nothing(aws, capsys, calls):
    code, out, _ = run(capsys, "bootstrap", "--bucket", BUCKET, "--noncurrent-days", "45")
    assert code == 0, out
    assert f"created bucket {BUCKET} in {REGION}" in out, "on AWS the operator sees where the bucket went"
    assert aws.get_bucket_versioning(Bucket=BUCKET)["Status"] == "Enabled"
    rules = aws.get_bucket_lifecycle_configuration(Bucket=BUCKET)["Rules"]
    assert [r["NoncurrentVersionExpiration"]["NoncurrentDays"] for r in rules] == [45], "the days given are used"
    assert aws.get_bucket_location(Bucket=BUCKET)["LocationConstraint"] == REGION, "created in the session region"
    assert sb.find_drift(sb.read_settings(aws, BUCKET), sb.Requirements(BUCKET, noncurrent_days=45)) == []
    assert f"pulumi login 's3://{BUCKET}?region={REGION}'" in out, "the operator is told how to log in"
    first_writes = [c for c in calls if c.startswith(("Put", "Create"))]
    calls.clear()
    code, out, _ = run(capsys, "bootstrap", "--bucket", BUCKET, "--noncurrent-days", "45")
    assert code == 0 and "nothing to change" in out
    assert len(first_writes) == 6, f"the first run creates the bucket and sets five settings: {first_writes}"
    assert [c for c in calls if c.startswith(("Put", "Create"))] == [], f"second run wrote something: {calls}"
    assert calls, "the second run did read the bucket (the recorder saw its calls)"
    code, _, _ = run(capsys, "check", "--bucket", BUCKET, "--noncurrent-days", "45")
    assert code == 0 and not [c for c in calls if c.startswith(("Put", "Create", "Delete"))], calls


def test_bootstrap_fixes_an_existing_bucket_and_keeps_what_operators_added(aws, capsys):
    aws.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    logs = {"ID": "expire-logs", "Status": "Enabled", "Filter": {"Prefix": "logs/"}, "Expiration": {"Days": 7}}
    aws.put_bucket_lifecycle_configuration(Bucket=BUCKET, LifecycleConfiguration={"Rules": [logs]})
    reader = {
        "Sid": "Readers",
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
        "Action": "s3:GetObject",
        "Resource": f"arn:aws:s3:::{BUCKET}/*",
    }
    stale = {"Sid": sb.POLICY_SID, "Effect": "Deny", "Principal": "*", "Action": "s3:PutObject", "Resource": "*"}
    aws.put_bucket_policy(Bucket=BUCKET, Policy=json.dumps({"Version": "2012-10-17", "Statement": [reader, stale]}))

    code, out, _ = run(capsys, "bootstrap", "--bucket", BUCKET)

    assert code == 0 and "created bucket" not in out, f"an existing bucket is adopted, not recreated: {out}"
    rule_ids = [r["ID"] for r in aws.get_bucket_lifecycle_configuration(Bucket=BUCKET)["Rules"]]
    assert rule_ids == ["expire-logs", sb.LIFECYCLE_RULE_ID], "the operator's rule is kept"
    sids = [s["Sid"] for s in json.loads(aws.get_bucket_policy(Bucket=BUCKET)["Policy"])["Statement"]]
    assert sids == ["Readers", sb.POLICY_SID], "the operator's statement is kept, our stale one replaced"


DRIFTS = {
    "versioning": lambda s3: s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Suspended"}),
    "default encryption": lambda s3: s3.delete_bucket_encryption(Bucket=BUCKET),
    "public access block": lambda s3: s3.put_public_access_block(
        Bucket=BUCKET, PublicAccessBlockConfiguration={**sb.PUBLIC_ACCESS_BLOCK, "BlockPublicPolicy": False}
    ),
    "bucket policy": lambda s3: s3.delete_bucket_policy(Bucket=BUCKET),
    "lifecycle rule": lambda s3: s3.put_bucket_lifecycle_configuration(
        Bucket=BUCKET, LifecycleConfiguration={"Rules": [sb.state_lifecycle_rule(1)]}
    ),
}


@pytest.mark.parametrize("setting", DRIFTS)
def test_check_finds_each_drifted_setting_and_bootstrap_repairs_it(aws, capsys, setting):
    run(capsys, "bootstrap", "--bucket", BUCKET)
    DRIFTS[setting](aws)

    code, out, _ = run(capsys, "check", "--bucket", BUCKET)

    assert code == sb.EXIT_DRIFT, "CI must fail on a drifted state bucket"
    reported = [line for line in out.splitlines() if line.startswith("DRIFT ")]
    assert len(reported) == 1 and reported[0].startswith(f"DRIFT {setting}: found ") and "expected" in reported[0], (
        f"exactly the changed setting is named, with what was found and what is expected: {reported}"
    )
    assert run(capsys, "bootstrap", "--bucket", BUCKET)[0] == 0
    code, out, _ = run(capsys, "check", "--bucket", BUCKET)
    assert code == 0, f"bootstrap puts the drifted setting back: {out}"
    assert "has the required settings" in out and "pulumi login" in out


def warning_free(err: str) -> str:
    """stderr without the warning every command prints for an http:// endpoint allowed by --allow-plain-http."""
    return "".join(line for line in err.splitlines(keepends=True) if not line.startswith("warning: "))


def assert_clear_error(code: int, err: str, *phrases: str) -> None:
    assert code == sb.EXIT_ERROR
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), f"one error line: {err!r}"
    for phrase in phrases:
        assert phrase in lines[0], f"{phrase!r} missing from {lines[0]!r}"


def test_a_missing_bucket_is_named_with_how_to_create_it(aws, capsys):
    code, _, err = run(capsys, "check", "--bucket", "no-such-state-bucket")
    assert_clear_error(code, err, "bucket 'no-such-state-bucket'", "NoSuchBucket", "bootstrap")


def act_as_user_allowed(monkeypatch, actions: list[str]) -> None:
    """The commands run as an IAM user allowed only ``actions`` (four unauthenticated calls to set it up)."""
    iam = boto3.client("iam", region_name=REGION)
    iam.create_user(UserName="operator")
    allowed = {"Effect": "Allow", "Action": actions, "Resource": "*"}
    document = json.dumps({"Version": "2012-10-17", "Statement": [allowed]})
    iam.put_user_policy(UserName="operator", PolicyName="only", PolicyDocument=document)
    key = iam.create_access_key(UserName="operator")["AccessKey"]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key["AccessKeyId"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", key["SecretAccessKey"])


@set_initial_no_auth_action_count(4)
def test_denied_access_names_the_bucket_and_the_operation(aws, capsys, monkeypatch):
    aws.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    act_as_user_allowed(monkeypatch, ["sts:GetCallerIdentity"])

    code, _, err = run(capsys, "check", "--bucket", BUCKET)

    assert_clear_error(code, err, f"bucket '{BUCKET}'", "AccessDenied", "GetBucketVersioning", "AWS_PROFILE")


def test_missing_credentials_say_where_they_are_read_from(aws_env, capsys, monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    code, _, err = run(
        capsys, "check", "--bucket", BUCKET, "--endpoint-url", "http://127.0.0.1:9", "--allow-plain-http"
    )
    assert_clear_error(code, warning_free(err), "no AWS credentials found", "AWS_ACCESS_KEY_ID", "AWS_PROFILE")


def test_a_second_bootstrap_with_a_hazard_left_gives_one_verdict(aws, capsys):
    aws.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    tidy = {"ID": "tidy", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 30}}
    aws.put_bucket_lifecycle_configuration(Bucket=BUCKET, LifecycleConfiguration={"Rules": [tidy]})
    assert run(capsys, "bootstrap", "--bucket", BUCKET)[0] == sb.EXIT_DRIFT, "a bucket that can lose state fails"

    code, out, err = run(capsys, "bootstrap", "--bucket", BUCKET)

    assert code == sb.EXIT_DRIFT
    assert "tidy" in [r["ID"] for r in aws.get_bucket_lifecycle_configuration(Bucket=BUCKET)["Rules"]], (
        "bootstrap removes nothing an operator configured"
    )
    assert "nothing to change" not in out and "has the required settings" not in out, (
        f"a bucket that can still lose state must not also be called fine: {out!r}"
    )
    assert "DRIFT lifecycle rule 'tidy'" in out
    assert err.strip().splitlines()[-1].startswith(f"bucket {BUCKET} does NOT have the required settings: 1 left"), err
    assert "pulumi login" not in out, "no go-ahead to log in next to a verdict that says the bucket is not safe"


def test_a_setting_the_endpoint_accepts_but_does_not_keep_is_reported_once_as_not_kept(aws, capsys, monkeypatch):
    """An endpoint that answers 200 to a configuration write and keeps nothing: the read-back catches it."""
    make_client = sb.make_client

    def forgetful_client(endpoint_url):
        client = make_client(endpoint_url)
        accepted = (AWSResponse("", 200, {}, None), {"ResponseMetadata": {"HTTPStatusCode": 200}})
        client.meta.events.register("before-call.s3.PutBucketLifecycleConfiguration", lambda **_: accepted)
        return client

    monkeypatch.setattr(sb, "make_client", forgetful_client)

    code, out, _ = run(capsys, "bootstrap", "--bucket", BUCKET)

    assert code == sb.EXIT_DRIFT and "DRIFT lifecycle rule: found nothing configured" in out
    assert "tried to set lifecycle rule (was: nothing configured); the endpoint did not keep it" in out
    assert "set lifecycle rule" not in out.replace("tried to set lifecycle rule", ""), "never also 'set' it"
    assert "now has the required settings" not in out and "nothing to change" not in out


URL, NAME = "is not an endpoint URL: expected https://HOST[:PORT] and nothing more", "is not a bucket name: expected"
RESERVED = "without the prefixes xn--, sthree-, amzn-s3-demo- or the suffixes -s3alias, --ol-s3, .mrap, --x-s3"
KMS_FORM = "expected a KMS key id, key ARN or alias/NAME; leave --kms-key-id out to accept AES256"
BAD_ENDPOINTS: tuple[str, ...] = ("", "s3.example.org", "ftp://s3.example.org", "https://", "https://my_host")
BAD_ENDPOINTS += ("https://h:99999", "https://s3.example.org/bucket", "https://h?x=1", "https://user@s3.example.org")
BAD_BUCKETS: tuple[str, ...] = ("BAD BUCKET", "ab", "state..bucket", "state-", "192.168.1.10", "state-s3alias")
BAD_BUCKETS += ("state--ol-s3", "state.mrap", "xn--state")


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        *((["--endpoint-url", url], (f"argument --endpoint-url: {url!r} {URL}",)) for url in BAD_ENDPOINTS),
        (["--endpoint-url", "http://127.0.0.1:9"], ("'http://127.0.0.1:9' is plain HTTP", "--allow-plain-http")),
        (
            ["--endpoint-url", "https://s3.example.org", "--allow-plain-http"],
            ("argument --allow-plain-http: applies only to an http:// --endpoint-url",),
        ),
        *((["--bucket", name], (f"argument --bucket: {name!r} {NAME}", RESERVED)) for name in BAD_BUCKETS),
        # An empty key would silently mean any default encryption.
        *((["--kms-key-id", key], (KMS_FORM,)) for key in ("", " ", " alias/state")),
        (["--noncurrent-days", "0"], ("argument --noncurrent-days: must be at least 1 day",)),  # 0 expires at once
    ],
)
def test_a_bad_command_line_is_one_line_exit_2_and_nothing_is_sent(aws_env, capsys, calls, argv, says):
    with pytest.raises(SystemExit) as exit_info:
        state_cli.main(["bootstrap", *argv] if "--bucket" in argv else ["bootstrap", *argv, "--bucket", BUCKET])
    err = capsys.readouterr().err
    assert exit_info.value.code == sb.EXIT_ERROR
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith(("state bootstrap: argument ", "state: argument ")), err
    assert all(phrase in err for phrase in says), (says, err)
    assert calls == [], "nothing is sent for a command line that is wrong"


def test_the_configured_timeouts_give_up_within_30_seconds():
    assert sb.give_up_after_seconds() <= 30, "an unresponsive endpoint must fail within 30 s, not 240 s"
    config = sb.make_client("https://s3.example.org").meta.config
    used = (config.connect_timeout, config.read_timeout, config.retries["total_max_attempts"])
    assert used == (sb.CONNECT_TIMEOUT_SECONDS, sb.READ_TIMEOUT_SECONDS, sb.MAX_ATTEMPTS), "the bound is what is used"
    backoff = ExponentialBackoff(random=lambda: 1.0, service_name="s3")
    longest = sum(
        backoff.delay_amount(
            RetryContext(attempt_number=n, caught_exception=botocore.exceptions.ReadTimeoutError(endpoint_url="x"))
        )
        for n in range(1, sb.MAX_ATTEMPTS)
    )
    assert longest <= sb.RETRY_BACKOFF_ALLOWANCE_SECONDS, "botocore's waits between attempts fit the allowance"


def waiting_connections(listener: socket.socket) -> int:
    """How many connections wait in ``listener``'s backlog; each is accepted and closed."""
    listener.setblocking(False)
    count = 0
    with contextlib.suppress(BlockingIOError):
        while True:
            listener.accept()[0].close()
            count += 1
    return count


def test_an_endpoint_that_never_answers_fails_within_the_bound_and_says_so(aws_env, capsys, monkeypatch):
    # Short timeouts; the test above holds the real bound.
    monkeypatch.setattr(sb, "CONNECT_TIMEOUT_SECONDS", 0.5)
    monkeypatch.setattr(sb, "READ_TIMEOUT_SECONDS", 0.4)
    monkeypatch.setattr(sb, "MAX_ATTEMPTS", 2)
    # A loopback port that never accepts: the kernel completes each connection and no byte ever comes back.
    with socket.create_server(("127.0.0.1", 0)) as listener:
        endpoint = f"http://127.0.0.1:{listener.getsockname()[1]}"
        code, _, err = run(capsys, "check", "--bucket", BUCKET, "--endpoint-url", endpoint, "--allow-plain-http")
        connections = waiting_connections(listener)
    assert_clear_error(
        code, warning_free(err), f"no answer from {endpoint} within 0.4 s in each of 2 attempts", "--endpoint-url"
    )
    assert "never more than 2.8 s" in err, "the message states the bound"
    assert connections == 2, "each attempt reached the endpoint (its connection waits in the backlog)"


def policy_denies_requests_without_tls(bucket_name: str) -> bool:
    located = s3_backends.bucket_accounts.get(bucket_name)
    policy = located and s3_backends[located[1]][located[0]].get_bucket(bucket_name).policy
    return any(
        s.get("Effect") == "Deny" and str(s.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport")) == "false"
        for s in sb.as_list(json.loads(policy).get("Statement") if policy else None)
    )


class EnforcesTlsPolicyLikeRgw:
    """Refuses plain HTTP to a bucket whose policy denies it, as Ceph RGW does; moto alone never looks at transport."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        bucket = environ.get("PATH_INFO", "/").lstrip("/").split("/", 1)[0]
        if bucket and environ["wsgi.url_scheme"] == "http" and policy_denies_requests_without_tls(bucket):
            body = b"<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
            start_response("403 Forbidden", [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))])
            return [body]
        return self.app(environ, start_response)


@pytest.fixture
def s3_endpoint() -> Iterator[str]:
    app = EnforcesTlsPolicyLikeRgw(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", 0, app, True, request_handler=MotoRequestHandler)
    # shutdown() waits for the loop to poll: 0.05 s, not werkzeug's 0.5 s.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(timeout=10)


@pytest.fixture
def bucket() -> str:
    """The server keeps its buckets for the whole test process: each test gets a name of its own."""
    return f"state-{uuid.uuid4().hex[:12]}"


def state_tool(endpoint: str, *argv: str) -> subprocess.CompletedProcess:
    """``./supersonic state ...`` in this process with only the credentials an operator exports."""
    with pytest.MonkeyPatch.context() as patch:
        for name in [n for n in os.environ if n.startswith("AWS_")]:
            patch.delenv(name)
        for name, value in {
            "AWS_ACCESS_KEY_ID": "rgw-user",
            "AWS_SECRET_ACCESS_KEY": "rgw-secret",
            "AWS_CONFIG_FILE": "/dev/null",
            "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
            "AWS_EC2_METADATA_DISABLED": "true",
        }.items():
            patch.setenv(name, value)
        return run_cli("state", *argv, "--endpoint-url", endpoint, "--allow-plain-http")


def endpoint_client(endpoint: str):
    """What Pulumi's S3 driver does through the login URL: plain requests to the same endpoint."""
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="rgw-user",
        aws_secret_access_key="rgw-secret",
        config=botocore.config.Config(s3={"addressing_style": "path"}),
    )


def test_the_whole_path_over_plain_http_leaves_out_the_policy_that_would_lock_it_out(s3_endpoint, bucket):
    first = state_tool(s3_endpoint, "bootstrap", "--bucket", bucket)
    assert first.returncode == 0, first.stdout + first.stderr
    assert f"created bucket {bucket}" in first.stdout
    assert "no bucket policy denying requests without TLS" in first.stdout, (
        "the operator is told the bucket lacks the TLS-only policy, and why"
    )
    assert "set bucket policy" not in first.stdout
    assert first.stderr.startswith(f"warning: {s3_endpoint} is plain HTTP"), first.stderr
    host_port = s3_endpoint.removeprefix("http://")
    assert (
        f"pulumi login 's3://{bucket}?endpoint={host_port}&s3ForcePathStyle=true&region=us-east-1&disableSSL=true'"
        in first.stdout
    ), "without disableSSL Pulumi would speak TLS to a plain HTTP port"

    # Pulumi writing two updates through the endpoint it was told to use, the second one bad.
    s3 = endpoint_client(s3_endpoint)
    old = write_state(s3, OLD_STATE, bucket=bucket)
    bad = write_state(s3, BAD_STATE, bucket=bucket)

    second = state_tool(s3_endpoint, "bootstrap", "--bucket", bucket)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "nothing to change" in second.stdout and "DRIFT" not in second.stdout
    checked = state_tool(s3_endpoint, "check", "--bucket", bucket)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "no bucket policy denying requests without TLS" in checked.stdout

    # The way back as docs/state-backend.md prints it, through the same endpoint.
    commands = documented_s3api_commands(old)
    assert [c.split()[2] for c in commands] == ["list-object-versions", "list-objects-v2", "copy-object"]
    listed, locks, _ = (aws_s3api(s3, command.replace("sonic-pulumi-state", bucket)) for command in commands)
    assert [row[:2] for row in listed] == [[STATE_KEY, bad], [STATE_KEY, old]], "newest first"
    assert locks is None, "no update holds a lock"
    assert s3.get_object(Bucket=bucket, Key=STATE_KEY)["Body"].read() == OLD_STATE, "the good state is current"
    versions = s3.list_object_versions(Bucket=bucket, Prefix=STATE_KEY)["Versions"]
    assert len(versions) == 3 and s3.get_object(Bucket=bucket, Key=STATE_KEY, VersionId=bad)["Body"].read() == BAD_STATE
    with pytest.raises(botocore.exceptions.ClientError, match="NoSuchVersion"):
        aws_s3api(s3, commands[2].replace("sonic-pulumi-state", bucket).replace(old, "no-such-version"))


def documented_s3api_commands(version_id: str) -> list[str]:
    """The ``aws s3api`` commands of docs/state-backend.md, the example version id replaced by ``version_id``."""
    text = (ROOT / "docs" / "state-backend.md").read_text().split("## 5. The way back", 1)[1]
    return [line.replace(DOCS_VERSION_ID, version_id) for line in text.splitlines() if line.startswith("aws s3api ")]


def aws_s3api(s3, command: str):
    """``command`` as the AWS CLI runs it, through ``s3``: names spelled ``xform_name(name, "-")``, --query JMESPath."""
    words = shlex.split(command)
    model = s3.meta.service_model
    (operation,) = [o for o in model.operation_names if xform_name(o, "-") == words[2]]
    members = {xform_name(name, "-"): name for name in model.operation_model(operation).input_shape.members}
    options = dict(zip(words[3::2], words[4::2], strict=True))
    params = {members[option[2:]]: value for option, value in options.items() if option not in ("--query", "--output")}
    return jmespath.search(options.get("--query", "@"), getattr(s3, xform_name(operation))(**params))


def test_a_tls_only_bucket_over_plain_http_is_access_denied_and_points_to_https(s3_endpoint, bucket):
    """A bucket bootstrapped over https checked through its http:// port: RGW refuses every request."""
    s3 = endpoint_client(s3_endpoint)
    s3.create_bucket(Bucket=bucket)
    policy = {"Version": "2012-10-17", "Statement": [sb.deny_insecure_transport_statement(bucket)]}
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps(policy))
    result = state_tool(s3_endpoint, "check", "--bucket", bucket)
    err = warning_free(result.stderr)
    assert_clear_error(result.returncode, err, f"bucket '{bucket}' at", "AccessDenied", "https://")
    assert "aws:SecureTransport" in err, "the operator is told which policy refuses them"
