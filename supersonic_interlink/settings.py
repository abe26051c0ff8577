"""Typed stack settings: the one object every component receives.

Defaults live in exactly one place, the ``config:`` block of ``Pulumi.yaml``. The Pulumi CLI passes each
top-level key either from the stack file or from that default (a stack value replaces the whole default
object); ``load_settings`` then fills in the sub-keys the stack left out from the same defaults, so a stack
file states only what differs. The shape of every key is declared here, by the dataclasses below; the loader
checks the config against them and reports every problem at once, each naming the full key, the value and
what is allowed.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

PROJECT = "supersonic-interlink"
PROJECT_FILE = Path(__file__).resolve().parent.parent / "Pulumi.yaml"

JSONObject = Mapping[str, Any]
"""A free-form object passed through as given (probes, resources, extra Helm values)."""


class ConfigError(Exception):
    """Raised with every problem found in a stack's config; ``problems`` holds one line each."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def setting(
    *,
    minimum: int | None = None,
    choices: tuple[str, ...] | None = None,
    check: str | None = None,
    replace: bool = False,
) -> Any:
    """Declare how a field is checked.

    ``minimum`` bounds an integer; ``choices`` lists the allowed strings; ``check`` names a rule in ``_CHECKS``;
    ``replace`` marks an object field that a stack value replaces whole instead of merging into the default.
    """
    return field(metadata={"minimum": minimum, "choices": choices, "check": check, "replace": replace})


# --------------------------------------------------------------------------------------------- the schema


@dataclass(frozen=True)
class ChartSource:
    """Where the SuperSONIC chart comes from.

    One of: a chart repository with an exact version (``repo``, ``name``, ``version``); a local chart directory
    (``path`` alone); or a git repository (``git`` URL, ``commit`` as a full 40-hex id, ``path`` of the chart
    inside it). A git source without ``commit`` is unpinned: it renders offline but is never deployed.
    """

    repo: str | None = setting(check="chart_repo")
    name: str | None = setting(check="k8s_label")
    version: str | None = setting(check="exact_version")
    path: str | None = setting()
    git: str | None = setting(check="git_url")
    commit: str | None = setting(check="git_commit")

    @property
    def kind(self) -> str:
        """``repo``, ``path`` or ``git``: which of the three sources this is."""
        if self.git is not None:
            return "git"
        return "path" if self.path is not None else "repo"

    @property
    def pinned(self) -> bool:
        """Whether the source names one exact chart (a git source needs its commit)."""
        return self.kind != "git" or self.commit is not None


@dataclass(frozen=True)
class ReleaseSettings:
    name: str = setting(check="release_name")
    chart: ChartSource = setting(replace=True)
    maxHistory: int = setting(minimum=1)
    adopt: bool = setting()
    """Take over a Helm release of this name that already runs in the namespace (see docs/takeover.md)."""


@dataclass(frozen=True)
class ScaleFromZeroSettings:
    enabled: bool = setting()
    readyTimeoutSeconds: int = setting(minimum=1)
    holdMinReplicasSeconds: int = setting(minimum=1)


@dataclass(frozen=True)
class ScalingPolicy:
    stabilizationWindowSeconds: int = setting(minimum=0)
    periodSeconds: int = setting(minimum=1)
    stepsize: int = setting(minimum=1)


@dataclass(frozen=True)
class KedaSettings:
    enabled: bool = setting()
    minReplicaCount: int = setting(minimum=0)
    maxReplicaCount: int = setting(minimum=1)
    scaleUp: ScalingPolicy = setting()
    scaleDown: ScalingPolicy = setting()


@dataclass(frozen=True)
class ServerLoadSettings:
    metric: str = setting()
    threshold: int = setting(minimum=1)


@dataclass(frozen=True)
class PrometheusSettings:
    url: str = setting(check="host")
    port: int = setting(minimum=1)
    scheme: str = setting(choices=("http", "https"))


@dataclass(frozen=True)
class ModelRepositorySettings:
    enabled: bool = setting()
    storageType: str = setting(choices=("cvmfs-pvc", "cvmfs-hostPath", "pvc", "nfs"))
    mountPath: str = setting(check="absolute_path")


@dataclass(frozen=True)
class ServiceMetadata:
    labels: Mapping[str, str] = setting()
    annotations: Mapping[str, str] = setting()


@dataclass(frozen=True)
class TritonSettings:
    image: str = setting(check="image")
    command: tuple[str, ...] = setting()
    args: tuple[str, ...] = setting()
    resources: JSONObject = setting()
    nodeSelector: Mapping[str, str] = setting()
    tolerations: tuple[JSONObject, ...] = setting()
    podAnnotations: Mapping[str, str] = setting()
    service: ServiceMetadata = setting()
    modelRepository: ModelRepositorySettings = setting()
    readinessProbe: JSONObject = setting()
    startupProbe: JSONObject = setting()


@dataclass(frozen=True)
class OutlierDetectionSettings:
    consecutive5xx: int = setting(minimum=1)
    consecutiveGatewayFailure: int = setting(minimum=1)
    intervalSeconds: int = setting(minimum=1)
    baseEjectionTimeSeconds: int = setting(minimum=1)
    maxEjectionPercent: int = setting(minimum=1)


@dataclass(frozen=True)
class InferenceRetrySettings:
    numRetries: int = setting(minimum=1)
    hostSelectionRetryMaxAttempts: int = setting(minimum=1)
    backOffBaseMs: int = setting(minimum=1)
    backOffMaxMs: int = setting(minimum=1)


@dataclass(frozen=True)
class RepositoryIndexRetrySettings:
    """The retry policy of the RepositoryIndex route (the chart's numbers by default)."""

    numRetries: int = setting(minimum=0)
    perTryTimeoutMs: int = setting(minimum=1)
    backOffBaseMs: int = setting(minimum=1)
    backOffMaxMs: int = setting(minimum=1)


@dataclass(frozen=True)
class CircuitBreakerSettings:
    """Default-priority circuit-breaker thresholds of the Triton cluster (see docs/envoy.md for the choice)."""

    maxConnections: int = setting(minimum=1)
    maxPendingRequests: int = setting(minimum=1)
    maxRequests: int = setting(minimum=1)
    maxRetries: int = setting(minimum=1)


@dataclass(frozen=True)
class EnvoySettings:
    image: str = setting(check="image")
    nodeSelector: Mapping[str, str] = setting()
    tolerations: tuple[JSONObject, ...] = setting()
    serviceType: str = setting(choices=("LoadBalancer", "ClusterIP", "NodePort"))
    loadBalancerPolicy: str = setting(choices=("ROUND_ROBIN", "LEAST_REQUEST", "RANDOM", "RING_HASH", "MAGLEV"))
    grpcRouteTimeoutSeconds: int = setting(minimum=0)
    bufferMaxRequestBytes: int = setting(minimum=1)
    connectTimeoutMs: int = setting(minimum=1)
    dnsRefreshMs: int = setting(minimum=1)
    outlierDetection: OutlierDetectionSettings = setting()
    inferenceRetry: InferenceRetrySettings = setting()
    repositoryIndexRetry: RepositoryIndexRetrySettings = setting()
    circuitBreakers: CircuitBreakerSettings = setting()


@dataclass(frozen=True)
class CleanupSettings:
    enabled: bool = setting()
    schedule: str = setting(check="cron")
    keep: int = setting(minimum=0)
    dryRun: bool = setting()
    image: str = setting(check="image")
    nodeSelector: Mapping[str, str] = setting()
    tolerations: tuple[JSONObject, ...] = setting()


@dataclass(frozen=True)
class Settings:
    """Everything one stack deploys. Top-level fields are the project's config keys."""

    namespace: str = setting(check="k8s_label")
    release: ReleaseSettings = setting()
    scaleFromZero: ScaleFromZeroSettings = setting()
    keda: KedaSettings = setting()
    serverLoad: ServerLoadSettings = setting()
    prometheus: PrometheusSettings = setting()
    triton: TritonSettings = setting()
    envoy: EnvoySettings = setting()
    cleanup: CleanupSettings = setting()
    helmValues: JSONObject = setting()


# --------------------------------------------------------------------------------------------- checks

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_EXACT_VERSION = re.compile(r"^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
_HOST = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?$")
_CRON_FIELD = re.compile(r"^[0-9*/,-]+$")
# Longest suffix the program appends to the release name for an object it names itself
# ("-failed-pod-cleanup"); a CronJob name may have at most 52 characters.
RELEASE_NAME_MAX = 33


def _check_k8s_label(value: str) -> str | None:
    if len(value) > 63 or not _DNS_LABEL.match(value):
        return "a Kubernetes name: lowercase letters, digits and '-', starting and ending alphanumeric, at most 63"
    return None


def _check_release_name(value: str) -> str | None:
    if len(value) > RELEASE_NAME_MAX or not _DNS_1035.match(value):
        return (
            f"a release name: lowercase letters, digits and '-', starting with a letter, at most "
            f"{RELEASE_NAME_MAX} characters (objects are named '<release>-failed-pod-cleanup', and "
            f"a CronJob name may have at most 52)"
        )
    return None


def _check_exact_version(value: str) -> str | None:
    if not _EXACT_VERSION.match(value):
        return "an exact chart version such as 0.4.2 (no ranges, no wildcards, so every preview is reproducible)"
    return None


def _check_chart_repo(value: str) -> str | None:
    if not re.match(r"^(https?|oci)://\S+$", value):
        return "a chart repository URL starting with https://, http:// or oci://"
    return None


def _check_git_url(value: str) -> str | None:
    if not re.fullmatch(r"https://[A-Za-z0-9.-]+(:[0-9]+)?/[^\s]+", value):
        return "a git repository URL starting with https://"
    return None


def _check_git_commit(value: str) -> str | None:
    if not re.fullmatch(r"[0-9a-f]{40}", value):
        return "a full commit id: 40 lowercase hexadecimal digits (a branch, tag or short id is not a pin)"
    return None


def _check_image(value: str) -> str | None:
    if "@sha256:" in value:
        return None
    last = value.rsplit("/", 1)[-1]
    if ":" not in last or last.endswith(":latest") or last.endswith(":"):
        return "an image with a pinned tag or digest (repository:tag, not 'latest')"
    return None


def _check_host(value: str) -> str | None:
    if not _HOST.match(value):
        return "a host name without scheme or port"
    return None


def _check_absolute_path(value: str) -> str | None:
    if not value.startswith("/"):
        return "an absolute path"
    return None


def _check_cron(value: str) -> str | None:
    fields = value.split()
    if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
        return "a five-field cron schedule such as '*/5 * * * *'"
    return None


_CHECKS = {
    "k8s_label": _check_k8s_label,
    "release_name": _check_release_name,
    "exact_version": _check_exact_version,
    "chart_repo": _check_chart_repo,
    "git_url": _check_git_url,
    "git_commit": _check_git_commit,
    "image": _check_image,
    "host": _check_host,
    "absolute_path": _check_absolute_path,
    "cron": _check_cron,
}


# --------------------------------------------------------------------------------------------- loading


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` through libyaml when PyYAML has it (several times faster on the files read here)."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@functools.cache
def _project_document(project_file: Path) -> Any:
    return load_yaml(project_file.read_text())


def project_defaults(project_file: Path = PROJECT_FILE) -> dict[str, Any]:
    """The ``default:`` of every key declared in ``Pulumi.yaml`` (the only place defaults are written)."""
    document = _project_document(project_file)
    defaults: dict[str, Any] = {}
    for key, declaration in (document.get("config") or {}).items():
        if isinstance(declaration, dict) and "default" in declaration:
            defaults[key] = copy.deepcopy(declaration["default"])
    return defaults


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _show(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _key(path: str) -> str:
    return f"{PROJECT}:{path}"


class _Loader:
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.sections: dict[str, Any] = {}
        """Top-level sections that parsed, for the cross-key rules."""

    def problem(self, path: str, value: Any, allowed: str) -> None:
        self.problems.append(f"{_key(path)} = {_show(value)}: expected {allowed}")

    def build(self, cls: type, path: str, given: Any, default: Any) -> Any:
        """Build dataclass ``cls`` from the stack's value merged over the default; None if anything is wrong."""
        if given is None:
            given = {}
        if not isinstance(given, dict):
            self.problem(path, given, "an object")
            return None
        default = default if isinstance(default, dict) else {}
        names = {f.name for f in dataclasses.fields(cls)}
        for unknown in sorted(set(given) - names):
            self.problems.append(
                f"{_key(_join(path, unknown))}: unknown key (allowed under "
                f"{_key(path) if path else PROJECT}: {', '.join(sorted(names))})"
            )
        hints = _type_hints(cls)
        values: dict[str, Any] = {}
        ok = True
        for f in dataclasses.fields(cls):
            sub = _join(path, f.name)
            present = f.name in given
            if not present and f.name not in default:
                if cls is ChartSource:
                    values[f.name] = None
                    continue
                self.problems.append(f"{_key(sub)}: missing (no default in Pulumi.yaml; set it in the stack file)")
                ok = False
                continue
            raw = given[f.name] if present else default[f.name]
            value = self.convert(hints[f.name], f, sub, raw, default.get(f.name))
            if value is _BAD:
                ok = False
            elif not path:
                self.sections[f.name] = value
            values[f.name] = value
        if not ok:
            return None
        return cls(**values)

    def convert(self, hint: Any, f: dataclasses.Field, path: str, raw: Any, default: Any) -> Any:
        meta = f.metadata
        origin = typing.get_origin(hint)
        if dataclasses.is_dataclass(hint):
            result = self.build(hint, path, raw, None if meta.get("replace") else default)
            return _BAD if result is None else result
        if hint is bool:
            if isinstance(raw, str) and raw in ("true", "false"):
                raw = raw == "true"
            if not isinstance(raw, bool):
                self.problem(path, raw, "true or false")
                return _BAD
            return raw
        if hint is int:
            if isinstance(raw, str) and re.fullmatch(r"-?\d+", raw):
                raw = int(raw)
            if isinstance(raw, float) and raw.is_integer():
                raw = int(raw)
            minimum = meta.get("minimum")
            if isinstance(raw, bool) or not isinstance(raw, int) or (minimum is not None and raw < minimum):
                self.problem(path, raw, "a whole number" + (f" >= {minimum}" if minimum is not None else ""))
                return _BAD
            return raw
        if hint is str or hint == (str | None):
            if hint != str and raw is None:
                return None
            if not isinstance(raw, str) or (hint is str and raw == "" and meta.get("check")):
                self.problem(path, raw, "a non-empty string" if isinstance(raw, str) else "a string")
                return _BAD
            choices = meta.get("choices")
            if choices and raw not in choices:
                self.problem(path, raw, "one of " + ", ".join(choices))
                return _BAD
            check = meta.get("check")
            if check:
                complaint = _CHECKS[check](raw)
                if complaint:
                    self.problem(path, raw, complaint)
                    return _BAD
            return raw
        if origin is tuple:
            item = typing.get_args(hint)[0]
            if not isinstance(raw, list):
                self.problem(path, raw, "a list")
                return _BAD
            want_str = item is str
            for i, element in enumerate(raw):
                if want_str and not isinstance(element, str):
                    self.problem(f"{path}[{i}]", element, "a string")
                    return _BAD
                if not want_str and not isinstance(element, dict):
                    self.problem(f"{path}[{i}]", element, "an object")
                    return _BAD
            return tuple(_freeze(e) for e in raw)
        if hint == Mapping[str, str]:
            if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
                self.problem(path, raw, "an object whose values are strings (quote numbers and booleans)")
                return _BAD
            return _freeze(raw)
        if hint == JSONObject:
            if not isinstance(raw, dict):
                self.problem(path, raw, "an object")
                return _BAD
            return _freeze(raw)
        raise TypeError(f"no rule for {hint!r} at {path}")  # a schema bug, not a user mistake


_BAD = object()


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Plain dicts and lists again, for YAML/JSON output and for Pulumi inputs."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


def deep_merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``: objects on both sides merge key by key, anything else in ``top`` wins."""
    merged = thaw(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = thaw(value)
    return merged


def _parse_cli_value(text: Any) -> Any:
    """The CLI passes every value as a string: objects and lists as JSON, scalars as their text."""
    if not isinstance(text, str):
        return text
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        try:
            return json.loads(stripped)
        except json.JSONDecodeError:
            return text
    return text


def _check_scaling(sfz: ScaleFromZeroSettings, keda: KedaSettings) -> list[str]:
    problems: list[str] = []
    if sfz.enabled and sfz.holdMinReplicasSeconds < sfz.readyTimeoutSeconds:
        problems.append(
            f"{_key('scaleFromZero.holdMinReplicasSeconds')} = {sfz.holdMinReplicasSeconds}: expected a value >= "
            f"scaleFromZero.readyTimeoutSeconds ({sfz.readyTimeoutSeconds}); the chart refuses a hold shorter "
            f"than the wake it protects"
        )
    if sfz.enabled and not keda.enabled:
        problems.append(
            f"{_key('keda.enabled')} = false: expected true while scaleFromZero.enabled is true "
            f"(KEDA is what scales Triton back down)"
        )
    if keda.minReplicaCount > keda.maxReplicaCount:
        problems.append(
            f"{_key('keda.minReplicaCount')} = {keda.minReplicaCount}: expected a value <= "
            f"keda.maxReplicaCount ({keda.maxReplicaCount})"
        )
    if keda.minReplicaCount == 0 and not sfz.enabled:
        problems.append(
            f"{_key('keda.minReplicaCount')} = 0: expected >= 1 unless scaleFromZero.enabled is true "
            f"(nothing would wake Triton from zero)"
        )
    return problems


def _check_chart(release: ReleaseSettings) -> list[str]:
    chart = release.chart
    given = {k: v for k, v in dataclasses.asdict(chart).items() if v is not None}
    by_repo = (chart.repo, chart.name, chart.version)
    allowed = "{repo, name, version} (version exact), {path} (a chart directory) or {git, commit, path}"
    if chart.git is not None:
        if any(v is not None for v in by_repo) or not chart.path:
            return [
                f"{_key('release.chart')} = {_show(given)}: expected {allowed}; a git source takes git, "
                f"commit and path (the chart's directory in the repository) and nothing else"
            ]
        if chart.path.startswith("/") or ".." in chart.path.split("/"):
            return [
                f"{_key('release.chart.path')} = {_show(chart.path)}: expected the chart's directory inside "
                f"the git repository, relative and without '..' (for example helm/supersonic)"
            ]
        return []
    if chart.commit is not None:
        return [f"{_key('release.chart')} = {_show(given)}: expected {allowed}; commit goes with git"]
    if chart.path is not None:
        if any(v is not None for v in by_repo) or chart.path == "":
            return [f"{_key('release.chart')} = {_show(given)}: expected {allowed}, not a mix"]
    elif any(v is None for v in by_repo):
        return [f"{_key('release.chart')} = {_show(given)}: expected {allowed}"]
    return []


def _check_envoy(envoy: EnvoySettings) -> list[str]:
    problems: list[str] = []
    for name in ("inferenceRetry", "repositoryIndexRetry"):
        retry = getattr(envoy, name)
        if retry.backOffBaseMs > retry.backOffMaxMs:
            problems.append(
                f"{_key(f'envoy.{name}.backOffBaseMs')} = {retry.backOffBaseMs}: expected a value <= "
                f"envoy.{name}.backOffMaxMs ({retry.backOffMaxMs})"
            )
    if envoy.outlierDetection.maxEjectionPercent > 100:
        problems.append(
            f"{_key('envoy.outlierDetection.maxEjectionPercent')} = "
            f"{envoy.outlierDetection.maxEjectionPercent}: expected a percentage from 1 to 100"
        )
    return problems


def _check_prometheus(prometheus: PrometheusSettings) -> list[str]:
    if prometheus.port > 65535:
        return [f"{_key('prometheus.port')} = {prometheus.port}: expected a port from 1 to 65535"]
    return []


_CROSS_CHECKS = (
    (("scaleFromZero", "keda"), _check_scaling),
    (("release",), _check_chart),
    (("envoy",), _check_envoy),
    (("prometheus",), _check_prometheus),
)
"""Rules that relate several keys, with the top-level sections each needs. A rule runs whenever its sections
parsed, so a type error in one section does not hide a conflict in another."""


def _cross_checks(sections: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    for needs, check in _CROSS_CHECKS:
        if all(sections.get(name) is not None for name in needs):
            problems.extend(check(*(sections[name] for name in needs)))
    return problems


def load_settings(config: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> Settings:
    """Build ``Settings`` from the config map the Pulumi CLI passes (``"supersonic-interlink:key" -> text``).

    Keys of other namespaces (``kubernetes:context`` and the like) are not ours and are ignored. Raises
    ``ConfigError`` listing every problem.
    """
    defaults = project_defaults() if defaults is None else defaults
    ours: dict[str, Any] = {}
    for full_key, text in config.items():
        namespace, _, key = full_key.partition(":")
        if namespace == PROJECT:
            ours[key] = _parse_cli_value(text)
    loader = _Loader()
    settings = loader.build(Settings, "", ours, dict(defaults))
    problems = loader.problems + _cross_checks(loader.sections)
    if problems:
        raise ConfigError(problems)
    return settings
