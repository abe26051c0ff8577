"""Values set with `pulumi config set --secret` reach every resource as Pulumi secrets; offline they are refused.
The real program runs under the mock engine (preview=False); the tests read what the engine received."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_runner import run_cli
from conftest import ROOT, stack_config

from supersonic_interlink.components.supersonic_release import HELM_RELEASE_TYPE
from supersonic_interlink.config import ConfigError, load_settings
from supersonic_interlink.config import stack_config as stack_config_module
from supersonic_interlink.config.pulumi_config import current_secret_keys, settings_from_config
from supersonic_interlink.config.stack_config import SECRET_PLACEHOLDER, cli_config, secret_paths
from supersonic_interlink.render.evaluate import Evaluation, evaluate

P = "supersonic-interlink"
SECRET_SIG = ("4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270")  # how pulumi's rpc marks a secret
CREDENTIAL = "hunter2-not-a-real-token"
SECRET_TEXT = 'pässwörd"\\x\u202e\x1b[31m'
"""Every way ``json.dumps`` or a terminal would change it, so a check for the exact text alone would miss a copy."""


def leaves(value: Any, secret: bool = False, path: str = "") -> list[tuple[str, bool, Any]]:
    """Every leaf of the inputs the engine recorded: its path, whether it sits inside a secret, its value."""
    if isinstance(value, dict):
        inside = secret or value.get(SECRET_SIG[0]) == SECRET_SIG[1]
        return [leaf for key, sub in value.items() for leaf in leaves(sub, inside, f"{path}.{key}")]
    if isinstance(value, list):
        return [leaf for i, sub in enumerate(value) for leaf in leaves(sub, secret, f"{path}[{i}]")]
    return [(path, secret, value)]


def occurrences(inputs: Any, needle: str) -> list[tuple[str, bool]]:
    """Every place ``needle`` appears in recorded inputs, and whether it sits inside a secret."""
    return [(path, secret) for path, secret, value in leaves(inputs) if isinstance(value, str) and needle in value]


def run(secret_keys: list[str], **overrides: Any) -> Evaluation:
    return evaluate(stack_config("hammer", **overrides), "hammer", secret_keys=secret_keys)


@pytest.mark.parametrize(
    ("key", "field", "value", "resource"),
    [
        ("helmValues", "extraEnv", {"auth": {"token": CREDENTIAL}}, HELM_RELEASE_TYPE),
        ("triton", "podAnnotations", {"example.org/token": CREDENTIAL}, HELM_RELEASE_TYPE),
        ("cleanup", "image", f"registry.example.org/{CREDENTIAL}/kubectl:1.34.1", "kubernetes:batch/v1:CronJob"),
    ],
)
def test_a_secret_setting_reaches_its_resource_only_as_secrets(key, field, value, resource) -> None:
    block = json.loads(stack_config("hammer").get(f"{P}:{key}", "{}"))
    block[field] = {**block.get(field, {}), **value} if isinstance(value, dict) else value
    found = occurrences(run([f"{P}:{key}"], **{key: block}).one(resource).inputs, CREDENTIAL)
    assert found and all(secret for _, secret in found), f"in clear in state and in preview --diff at {found}"
    plain = occurrences(run([], **{key: block}).one(resource).inputs, CREDENTIAL)
    assert plain and not any(secret for _, secret in plain), "without the secret key it is plain: the check can fail"


@pytest.mark.parametrize("key", ["scaleFromZero", "envoy"])
def test_a_secret_wake_or_envoy_setting_makes_the_envoy_configmap_and_the_release_values_secret(key: str) -> None:
    evaluation = run([f"{P}:{key}"])
    (config_map,) = evaluation.of_type("kubernetes:core/v1:ConfigMap")
    data = {path: secret for path, secret, _ in leaves(config_map.inputs) if path.startswith(".data")}
    assert data and all(data.values()), f"the Envoy configuration is computed from {key}: {data}"
    release = leaves(evaluation.one(HELM_RELEASE_TYPE).inputs)
    values = [secret for path, secret, _ in release if path.startswith(".values")]
    assert values and all(values)
    (plain_map,) = run([]).of_type("kubernetes:core/v1:ConfigMap")
    assert not any(secret for _, secret, _ in leaves(plain_map.inputs)), "without the secret nothing is marked"


def test_a_secret_namespace_or_release_is_refused_because_it_names_objects() -> None:
    with pytest.raises(Exception, match=f"{P}:namespace: is a secret; expected a plain value(.|\n)*{P}:release: is a"):
        run([f"{P}:namespace", f"{P}:release"])


def test_a_secret_under_a_key_the_config_lacks_is_reported_as_unknown_and_nothing_else() -> None:
    config = {**stack_config("hammer"), f"{P}:nosuchkey": "x"}
    with pytest.raises(ConfigError) as caught:
        load_settings(config, secret_keys={f"{P}:nosuchkey"})
    allowed = "cleanup, envoy, helmValues, keda, namespace, prometheus, release, scaleFromZero, serverLoad, triton"
    assert [p for p in caught.value.problems if "nosuchkey" in p] == [
        f"{P}:nosuchkey: unknown key (allowed under {P}: {allowed})"
    ], "a key that is not in the config: say so, not that it names objects"


def test_the_program_reads_the_secret_keys_the_language_host_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    """pulumi-language-python (main.go) passes them as JSON in PULUMI_CONFIG_SECRET_KEYS."""
    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", json.dumps([f"{P}:helmValues"]))
    assert current_secret_keys({f"{P}:namespace": "cms"}) == {f"{P}:helmValues"}


def test_offline_a_nested_secure_value_is_the_placeholder_and_its_path_is_listed() -> None:
    stack_values = {"helmValues": {"auth": {"token": {"secure": "v1:ciphertext"}}}, "namespace": "cms"}
    config = cli_config(stack_values)
    assert json.loads(config[f"{P}:helmValues"]) == {"auth": {"token": SECRET_PLACEHOLDER}}
    assert secret_paths(stack_values) == [f"{P}:helmValues.auth.token"]
    assert "ciphertext" not in json.dumps(config), "the ciphertext is never read into the config"


def test_a_secret_where_the_placeholder_is_not_allowed_says_pulumi_preview_checks_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (ROOT / "stacks" / "Pulumi.hammer.yaml").read_text()
    url = "    url: prometheus-server.cms.svc.cluster.local\n"
    (tmp_path / "Pulumi.secret.yaml").write_text(text.replace(url, "    url:\n      secure: v1:QUFBQWNpcGhlcnRleHQ=\n"))
    monkeypatch.setattr(stack_config_module, "STACKS_DIR", tmp_path)
    result = run_cli("render", "secret")
    said = f"{P}:prometheus.url = [secret]: expected a host name"
    offline = "(a secret: rendered offline as [secret], which this key does not take; `pulumi preview` checks the real"
    assert result.returncode == 2 and said in result.stderr and offline in result.stderr, result.stdout + result.stderr
    assert "QUFBQWNpcGhlcnRleHQ" not in result.stdout + result.stderr and "Traceback" not in result.stderr


def _fragments(text: str) -> set[str]:
    """Every piece of the secret an error could show: the text, its JSON and repr forms, each 4-character run."""
    dumped, shown = json.dumps(text), repr(text)
    forms = {text, dumped, dumped[1:-1], shown, shown[1:-1], json.dumps(text, ensure_ascii=False)}
    return forms | {form[i : i + 4] for form in forms for i in range(len(form) - 3) if form[i : i + 4].strip()}


def _bad_secret_configs() -> dict[str, tuple[str, Any]]:
    """id: (top-level key, bad value) for every secret-capable key: a bad leaf, a bad object, a rule across fields."""
    base = {key: json.loads(value) for key, value in stack_config("hammer").items() if value.startswith("{")}
    envoy, sfz, keda, triton = (base[f"{P}:{k}"] for k in ("envoy", "scaleFromZero", "keda", "triton"))
    retry = {"numRetries": 1, "hostSelectionRetryMaxAttempts": 1, "backOffBaseMs": 987654, "backOffMaxMs": 876543}
    return {
        "envoy-whole-string": ("envoy", SECRET_TEXT),
        "envoy-not-json": ("envoy", "{" + SECRET_TEXT),
        "envoy-back-off": ("envoy", {**envoy, "inferenceRetry": retry}),
        "triton-annotation": ("triton", {**triton, "podAnnotations": {"a": 987654}}),
        "prometheus-url": ("prometheus", {"url": SECRET_TEXT, "port": 9090, "scheme": "http"}),
        "helm-values-not-object": ("helmValues", [SECRET_TEXT]),
        "hold-below-ready": ("scaleFromZero", {**sfz, "readyTimeoutSeconds": 987654, "holdMinReplicasSeconds": 876543}),
        "keda-min-above-max": ("keda", {**keda, "minReplicaCount": 987654, "maxReplicaCount": 876543}),
    }


@pytest.mark.parametrize(("key", "value"), _bad_secret_configs().values(), ids=_bad_secret_configs())
def test_an_error_about_a_secret_key_names_the_key_and_shows_no_part_of_its_value(key: str, value: Any) -> None:
    config = stack_config("hammer")
    config[f"{P}:{key}"] = value if isinstance(value, str) else json.dumps(value)
    secret_parts = _fragments(SECRET_TEXT) | {"987654", "876543"}
    with pytest.raises(ConfigError) as caught:
        settings_from_config(config, secret_keys=[f"{P}:{key}"])
    problems = caught.value.problems
    assert problems and all(problem.startswith(f"{P}:{key}") for problem in problems), problems
    leaked = sorted(part for part in secret_parts for problem in problems if part in problem)
    assert not leaked, f"{problems} show {leaked}"
    assert any("[secret]" in problem or "expected" in problem for problem in problems)
    with pytest.raises(ConfigError) as plain:
        settings_from_config(config)
    shown = " ".join(plain.value.problems)
    assert any(part in shown for part in secret_parts), plain.value.problems
