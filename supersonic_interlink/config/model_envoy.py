"""The Envoy settings: the proxy's image and placement, and what the computed configuration takes from them
(timeouts, the request buffer, outlier ejection, retries, circuit breakers), each within Envoy's own limits."""

from __future__ import annotations

from typing import Annotated

from pydantic import (
    Field,
    model_validator,
)

from supersonic_interlink.config.model_triton import Tolerations
from supersonic_interlink.config.rules import (
    ENVOY_DURATION_MAX_SECONDS,
    INT64_MAX,
    UINT32_MAX,
    Limits,
    Model,
    OneOf,
    fail_at,
)
from supersonic_interlink.config.types import (
    Image,
    LabelMap,
)

_ENVOY_MS_MAX = ENVOY_DURATION_MAX_SECONDS * 1000


EnvoyMillis = Annotated[int, Limits(1, _ENVOY_MS_MAX, "milliseconds of an Envoy duration")]
EnvoySeconds = Annotated[int, Limits(1, ENVOY_DURATION_MAX_SECONDS, "seconds of an Envoy duration")]
EnvoySecondsOrZero = Annotated[int, Limits(0, ENVOY_DURATION_MAX_SECONDS, "seconds of an Envoy duration")]
EnvoyCount = Annotated[int, Limits(1, UINT32_MAX, "an Envoy uint32")]


class OutlierDetectionSettings(Model):
    """Outlier ejection on the Triton cluster."""

    consecutive5xx: EnvoyCount
    consecutiveGatewayFailure: EnvoyCount
    intervalSeconds: EnvoySeconds
    baseEjectionTimeSeconds: EnvoySeconds
    maxEjectionPercent: Annotated[int, Limits(1, 100, "a percentage")]


class InferenceRetrySettings(Model):
    """The retry policy of the inference route."""

    numRetries: EnvoyCount
    hostSelectionRetryMaxAttempts: Annotated[int, Limits(1, INT64_MAX, "an Envoy int64")]
    backOffBaseMs: EnvoyMillis
    backOffMaxMs: EnvoyMillis

    @model_validator(mode="after")
    def _back_off(self) -> InferenceRetrySettings:
        _check_back_off(self)
        return self


class RepositoryIndexRetrySettings(Model):
    """The retry policy of the RepositoryIndex route (the chart's numbers by default)."""

    numRetries: Annotated[int, Limits(0, UINT32_MAX, "an Envoy uint32")]
    perTryTimeoutMs: EnvoyMillis
    backOffBaseMs: EnvoyMillis
    backOffMaxMs: EnvoyMillis

    @model_validator(mode="after")
    def _back_off(self) -> RepositoryIndexRetrySettings:
        _check_back_off(self)
        return self


def _check_back_off(retry: InferenceRetrySettings | RepositoryIndexRetrySettings) -> None:
    if retry.backOffBaseMs > retry.backOffMaxMs:
        raise fail_at(
            "backOffBaseMs",
            retry.backOffBaseMs,
            "a value <= backOffMaxMs ({backOffMaxMs}); Envoy refuses a base interval above the maximum",
            backOffMaxMs=retry.backOffMaxMs,
        )


class CircuitBreakerSettings(Model):
    """Default-priority circuit-breaker thresholds of the Triton cluster (see docs/envoy.md for the choice)."""

    maxConnections: EnvoyCount
    maxPendingRequests: EnvoyCount
    maxRequests: EnvoyCount
    maxRetries: EnvoyCount


class EnvoySettings(Model):
    """The Envoy proxy in front of Triton and the configuration this program computes for it. Envoy's ports are the
    chart's (8001, 9901, 8080), not settings: the chart takes no value for them."""

    image: Image
    nodeSelector: LabelMap
    tolerations: Tolerations
    serviceType: Annotated[str, OneOf(("LoadBalancer", "ClusterIP", "NodePort"))]
    loadBalancerPolicy: Annotated[
        Annotated[str, OneOf(("ROUND_ROBIN", "LEAST_REQUEST", "RANDOM", "RING_HASH", "MAGLEV"))],
        Field(description="of the Triton cluster in the computed Envoy configuration"),
    ]
    grpcRouteTimeoutSeconds: Annotated[EnvoySecondsOrZero, Field(description="route timeout of both routes; 0 = none")]
    bufferMaxRequestBytes: Annotated[
        EnvoyCount, Field(description="largest request body buffered (and so replayable); larger gets 413")
    ]
    connectTimeoutMs: EnvoyMillis
    dnsRefreshMs: Annotated[
        Annotated[int, Limits(2, _ENVOY_MS_MAX, "Envoy requires a DNS refresh rate above 1 ms")],
        Field(description="DNS refresh period of the Triton cluster"),
    ]
    outlierDetection: OutlierDetectionSettings
    inferenceRetry: InferenceRetrySettings
    repositoryIndexRetry: RepositoryIndexRetrySettings
    circuitBreakers: Annotated[
        CircuitBreakerSettings,
        Field(
            description="with Envoy's default maxRetries (3), when a Triton restarts under load every retry beyond "
            "the third concurrent one fails at once; maxRetries equal to maxRequests refuses a retry only when a "
            "new request would be refused too (docs/envoy.md)"
        ),
    ]
