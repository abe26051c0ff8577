"""The shape of every config key: the pydantic models of the stack settings (strict, unknown keys refused,
frozen). ``Pulumi.yaml``'s ``type`` and ``description`` of each key are generated from them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    Field,
    PrivateAttr,
    model_validator,
)

from supersonic_interlink.config.model_envoy import EnvoySettings
from supersonic_interlink.config.model_triton import Tolerations, TritonSettings
from supersonic_interlink.config.rules import (
    CHANGES_UP,
    CLEANUP_KEEP_MAX,
    HELM_UPGRADE_MARGIN_SECONDS,
    HPA_MAX_PERIOD_SECONDS,
    HPA_MAX_STABILIZATION_WINDOW_SECONDS,
    INT32_MAX,
    PULUMI_NUMBER_MAX,
    READY_TIMEOUT_MAX_SECONDS,
    Expect,
    Frozen,
    Limits,
    Model,
    OneOf,
    _fail,
    fail_at,
)
from supersonic_interlink.config.types import (
    ChartPath,
    ChartRepo,
    Cron,
    ExactVersion,
    GitCommit,
    GitURL,
    Host,
    Image,
    KubernetesName,
    LabelMap,
    Port,
    ReleaseName,
)
from supersonic_interlink.contract import CHART, NEWEST, Generation

# ---------------------------------------------------------------------------------------- the schema


class ChartSource(Model):
    """Where the SuperSONIC chart comes from.

    One of: a chart repository with an exact version (``repo``, ``name``, ``version``); a local chart directory
    (``path`` alone); or a git repository (``git`` URL, ``commit`` as a full 40-hex id, ``path`` of the chart
    inside it). A git source without ``commit`` is unpinned: it renders offline but is never deployed.
    """

    repo: ChartRepo | None = None
    name: KubernetesName | None = None
    version: ExactVersion | None = None
    path: ChartPath | None = None
    git: GitURL | None = None
    commit: GitCommit | None = None

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

    @model_validator(mode="after")
    def _one_source(self) -> ChartSource:
        by_repo = (self.repo, self.name, self.version)
        allowed = "{repo, name, version} (version exact), {path} (a chart directory) or {git, commit, path}"
        if self.git is not None:
            if any(v is not None for v in by_repo) or not self.path:
                raise _fail(
                    f"{allowed}; a git source takes git, commit and path (the chart's directory in the repository) "
                    f"and nothing else"
                )
            if self.path.startswith("/") or ".." in self.path.split("/"):
                raise fail_at(
                    "path",
                    self.path,
                    "the chart's directory inside the git repository, relative and without '..' "
                    "(for example helm/supersonic)",
                )
        elif self.commit is not None:
            raise _fail(f"{allowed}; commit goes with git")
        elif self.path is not None:
            if any(v is not None for v in by_repo):
                raise _fail(f"{allowed}, not a mix")
        elif any(v is None for v in by_repo):
            raise _fail(allowed)
        return self


class ReleaseSettings(Model):
    """The SuperSONIC Helm release."""

    name: Annotated[
        ReleaseName,
        Field(
            description="required per stack. Helm release name and the chart's instance name: it names the Triton "
            "Deployment/Service (<name>-triton), the Envoy Service clients use (<name>) and the cleanup objects. "
            "Changing it (or namespace) replaces the release: refused unless release.removable (docs/engine.md: "
            "Removing or renaming a release)"
        ),
    ]
    chart: Annotated[
        ChartSource,
        Field(
            description="{repo, name, version} with an exact version, {path} to a chart directory, or {git, commit, "
            "path}: an https git URL, a full 40-hex commit and the chart's directory in it (without commit it renders "
            "offline, but preview and up refuse it; `./supersonic render <stack> --pin-chart [REF]` writes the "
            "commit). "
            "Replaced whole, not merged"
        ),
    ]
    maxHistory: Annotated[
        Annotated[int, Limits(1, INT32_MAX, "Helm revisions")],
        Field(description="Helm revisions kept for `helm rollback`"),
    ]
    adopt: Annotated[
        bool,
        Field(
            description="take over a Helm release of this name that already runs in the namespace instead of "
            "installing one (docs/takeover.md)"
        ),
    ]
    removable: Annotated[
        bool,
        Field(
            description="false protects the release: pulumi destroy, a rename of release.name or namespace, and "
            "removing it from the program are refused, and the pull-request preview fails on them. Set true in a "
            "reviewed change to uninstall or rename on purpose (docs/engine.md: Removing or renaming a release)"
        ),
    ]


class ScaleFromZeroSettings(Model):
    """Scale from zero (SuperSONIC #90): Envoy's Lua filter wakes Triton on a client's first RepositoryIndex."""

    enabled: Annotated[bool, Field(description="turn it on; requires keda.enabled")]
    readyTimeoutSeconds: Annotated[
        Annotated[
            int,
            Limits(
                1,
                READY_TIMEOUT_MAX_SECONDS,
                f"the Helm timeout, this + {HELM_UPGRADE_MARGIN_SECONDS} s, is a Go duration, and the RepositoryIndex "
                f"idle_timeout, this + {CHART.ready_timeout_margin_seconds} s, an Envoy duration",
            ),
        ],
        Field(
            description="how long a RepositoryIndex is held waiting for a healthy Triton; the RepositoryIndex "
            f"route's idle_timeout follows at this + {CHART.ready_timeout_margin_seconds} s, derived, never set "
            "separately"
        ),
    ]
    holdMinReplicasSeconds: Annotated[
        Annotated[int, Limits(1, PULUMI_NUMBER_MAX, "exact through Pulumi")],
        Field(description="how long a woken Triton is kept; at least readyTimeoutSeconds"),
    ]
    admissionImage: Annotated[
        Image | None,
        Field(
            description="image of the chart's admission sidecar (scaleFromZero.admissionImage); unset: the chart's "
            "own default"
        ),
    ] = None


class ScalingPolicy(Model):
    """One direction of KEDA's scaling behaviour (a Kubernetes HPA policy)."""

    stabilizationWindowSeconds: Annotated[int, Limits(0, HPA_MAX_STABILIZATION_WINDOW_SECONDS, "Kubernetes' HPA limit")]
    periodSeconds: Annotated[int, Limits(1, HPA_MAX_PERIOD_SECONDS, "Kubernetes' HPA limit")]
    stepsize: Annotated[int, Limits(1, INT32_MAX, "a Kubernetes int32")]


class KedaSettings(Model):
    """KEDA autoscaling of the Triton Deployment."""

    enabled: Annotated[bool, Field(description="required while scaleFromZero.enabled")]
    minReplicaCount: Annotated[
        Annotated[int, Limits(0, INT32_MAX, "a Kubernetes int32")], Field(description="0 only with scale from zero")
    ]
    maxReplicaCount: Annotated[int, Limits(1, INT32_MAX, "a Kubernetes int32")]
    scaleUp: ScalingPolicy
    scaleDown: ScalingPolicy
    metricType: Annotated[
        Annotated[str, OneOf(("Value", "AverageValue"))],
        Field(
            description="how KEDA compares serverLoad with its threshold: Value (the whole release's load) or "
            "AverageValue (per replica); always passed, since the chart's default moved from Value to AverageValue"
        ),
    ]
    pollingInterval: Annotated[
        Annotated[int, Limits(1, INT32_MAX, "a Kubernetes int32")] | None,
        Field(description="seconds between KEDA's queries of the load metric; unset: the chart's own default"),
    ] = None
    cooldownPeriod: Annotated[
        Annotated[int, Limits(0, INT32_MAX, "a Kubernetes int32")] | None,
        Field(
            description="seconds KEDA waits after the last active load before scaling to minReplicaCount; unset: the "
            "chart's own default"
        ),
    ] = None


class ServerLoadSettings(Model):
    """The load signal KEDA scales on."""

    metric: Annotated[str, Field(description="PromQL for the chart's serverLoadMetric; empty keeps the chart's")]
    threshold: Annotated[
        Annotated[int, Limits(1, PULUMI_NUMBER_MAX, "exact through Pulumi")], Field(description="serverLoadThreshold")
    ]


class PrometheusSettings(Model):
    """The cluster's Prometheus that KEDA queries (the chart's prometheus.external)."""

    url: Annotated[Host, Field(description="required per stack: host name without scheme or port")]
    port: Port
    scheme: Annotated[str, OneOf(("http", "https"))]


class CleanupSettings(Model):
    """The CronJob that deletes this release's Failed Triton pods, keeping the newest for diagnosis."""

    enabled: bool
    schedule: Cron
    keep: Annotated[
        Annotated[int, Limits(0, CLEANUP_KEEP_MAX, "the cleanup script refuses more")],
        Field(description="newest Failed pods kept (0 allowed)"),
    ]
    dryRun: Annotated[bool, Field(description="log what would go, delete nothing")]
    image: Image
    nodeSelector: Annotated[LabelMap, Field(description="where the cleaner runs (not on the virtual node)")]
    tolerations: Tolerations


def _keeps_chart_names(values: Mapping[str, Any]) -> Mapping[str, Any]:
    for key in CHART.name_override_values:
        if key in values:
            raise fail_at(
                key,
                values[key],
                "no value: it renames the chart's objects, and Envoy's route to Triton, the cleanup's selector and "
                "the exported endpoint are computed from release.name alone (rename with release.name)",
            )
    return values


HelmValues = Annotated[Mapping[str, Any], Frozen, AfterValidator(_keeps_chart_names), Expect("an object")]
"""Extra chart values, passed through as given except what would rename the chart's objects."""


class Settings(Model):
    """Everything one stack deploys. Top-level fields are the project's config keys."""

    namespace: Annotated[
        KubernetesName,
        Field(
            description=(
                "Namespace of the Helm release, the Envoy ConfigMap and the cleanup CronJob. Required per stack."
            )
        ),
    ]
    release: ReleaseSettings
    scaleFromZero: ScaleFromZeroSettings
    keda: KedaSettings
    serverLoad: ServerLoadSettings
    prometheus: PrometheusSettings
    triton: TritonSettings
    envoy: EnvoySettings
    cleanup: CleanupSettings
    helmValues: Annotated[
        HelmValues,
        Field(
            description="Extra chart values for what the keys above do not model, deep-merged underneath the computed "
            "values. A key here that the program computes is an error, never a silent override."
        ),
    ]

    deliberateProviderConfig: Annotated[
        Mapping[
            Annotated[str, OneOf(tuple(CHANGES_UP))],
            Annotated[str, Field(min_length=1), Expect("the reason, as text")],
        ],
        Frozen,
        Expect("an object: provider or engine key -> why this stack sets it"),
        Field(
            description="kubernetes: and pulumi: keys this stack sets on purpose although they change what pulumi up "
            "does (kubernetes:renderYamlToDirectory deploys nothing, kubernetes:deleteUnreachable drops resources "
            "from the state, ...), each with the reason; such a key set but not listed here is refused, and one "
            "listed but not set too"
        ),
    ]

    _secret_keys: frozenset[str] = PrivateAttr(default_factory=frozenset)
    _generation: Generation = PrivateAttr(default=NEWEST)

    @property
    def generation(self) -> Generation:
        """The chart generation of ``release.chart`` (``config.generation.select``): the names the chart gives the
        inference server. ``load_settings`` always sets it from the chart."""
        return self._generation

    @property
    def secret_keys(self) -> frozenset[str]:
        """Top-level keys whose value the CLI passed as a secret (``pulumi config set --secret``)."""
        return self._secret_keys

    def is_secret(self, *keys: str) -> bool:
        """Whether any of these top-level keys came from a secret."""
        return any(key in self._secret_keys for key in keys)


REPLACED_WHOLE = {("release", "chart")}
"""Object fields a stack value replaces instead of merging into the default."""

SECRET_CAPABLE = ("helmValues", "triton", "envoy", "cleanup", "serverLoad", "prometheus", "keda", "scaleFromZero")
"""Top-level keys that may be secrets. ``namespace`` and ``release`` name objects, URNs' neighbours and the exported
endpoint: a secret there could not stay secret, so it is refused."""
