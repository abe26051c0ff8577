"""The Triton settings: image, command, resources, placement on the interLink virtual node, probes, model
repository; resources and tolerations checked as the API server checks them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from pydantic import (
    Field,
    model_validator,
)

from supersonic_interlink.config.rules import (
    PULUMI_NUMBER_MAX,
    Expect,
    Frozen,
    JSONObject,
    Limits,
    Model,
    OneOf,
    fail_at,
)
from supersonic_interlink.config.types import (
    AbsolutePath,
    AnnotationMap,
    ContainerResource,
    Image,
    LabelMap,
    LabelValue,
    NoEmptyArgument,
    QualifiedName,
    Quantity,
    overcommit_allowed,
    quantity_value,
)


class ModelRepositorySettings(Model):
    """Where Triton finds its models."""

    enabled: bool
    storageType: Annotated[str, OneOf(("cvmfs-pvc", "cvmfs-hostPath", "pvc", "nfs"))]
    mountPath: AbsolutePath


class ServiceMetadata(Model):
    """Labels and annotations of the headless Triton Service."""

    labels: LabelMap
    annotations: AnnotationMap


class ResourceRequirements(Model):
    """A container's resources: quantities by resource name (cpu, memory, nvidia.com/gpu, ...)."""

    requests: Annotated[Mapping[ContainerResource, Quantity], Frozen, Expect("an object of Kubernetes quantities")] = (
        Field(default_factory=dict)
    )
    limits: Annotated[Mapping[ContainerResource, Quantity], Frozen, Expect("an object of Kubernetes quantities")] = (
        Field(default_factory=dict)
    )

    @model_validator(mode="after")
    def _as_the_api_server_checks(self) -> ResourceRequirements:
        # validation.go ValidateContainerResourceRequirements and ValidateResourceQuantityValue.
        for name, quantity in {**self.limits, **self.requests}.items():
            where = "requests" if name in self.requests else "limits"
            if not overcommit_allowed(name) and quantity_value(quantity).denominator != 1:
                raise fail_at(f"{where}.{name}", quantity, "a whole number (the API server: must be an integer)")
        for name, request in self.requests.items():
            limit = self.limits.get(name)
            if limit is None:
                if not overcommit_allowed(name):
                    raise fail_at(
                        f"limits.{name}",
                        None,
                        "a limit equal to the request (the API server: Limit must be set for non overcommitable "
                        "resources)",
                    )
                continue
            if not overcommit_allowed(name) and quantity_value(request) != quantity_value(limit):
                raise fail_at(
                    f"requests.{name}",
                    request,
                    "the limit ({limit}): the API server requires a request equal to the limit of a resource "
                    "that cannot be overcommitted",
                    limit=limit,
                )
            if quantity_value(request) > quantity_value(limit):
                raise fail_at(
                    f"requests.{name}",
                    request,
                    "at most the limit ({limit}) (the API server: must be less than or equal to the limit)",
                    limit=limit,
                )
        return self


class Toleration(Model):
    """A Kubernetes toleration, with the API server's rules (validation.go ``ValidateTolerations``)."""

    key: QualifiedName | None = None
    operator: Annotated[str, OneOf(("Exists", "Equal"))] | None = None
    value: LabelValue | None = None
    effect: Annotated[str, OneOf(("NoSchedule", "PreferNoSchedule", "NoExecute"))] | None = None
    tolerationSeconds: (
        Annotated[
            int,
            Limits(
                -PULUMI_NUMBER_MAX, PULUMI_NUMBER_MAX, "a Kubernetes int64 that stays exact through Pulumi's numbers"
            ),
        ]
        | None
    ) = None

    @model_validator(mode="after")
    def _as_the_api_server_checks(self) -> Toleration:
        if not self.key and self.operator != "Exists":
            raise fail_at(
                "operator",
                self.operator,
                "Exists when key is empty (the API server: an empty key with Exists matches every taint)",
            )
        if self.operator == "Exists" and self.value:
            raise fail_at("value", self.value, "no value with operator Exists (the API server refuses one)")
        if self.tolerationSeconds is not None and self.effect != "NoExecute":
            raise fail_at(
                "effect",
                self.effect,
                "NoExecute when tolerationSeconds is set (the API server refuses any other effect)",
            )
        return self


Tolerations = Annotated[tuple[Toleration, ...], Frozen, Expect("a list of tolerations")]
Args = Annotated[
    tuple[str, ...],
    Field(min_length=1),
    NoEmptyArgument,
    Frozen,
    Expect("a non-empty list of strings (Triton's arguments; [] would start the image without a model repository)"),
]
Command = Annotated[tuple[str, ...], NoEmptyArgument, Frozen, Expect("a list of strings")]


class TritonSettings(Model):
    """The Triton inference server pods."""

    image: Image
    command: Command
    args: Annotated[Args, Field(description="required per stack")]
    resources: ResourceRequirements
    nodeSelector: LabelMap
    tolerations: Tolerations
    podAnnotations: Annotated[AnnotationMap, Field(description="interLink's slurm-job.vk.io/* annotations go here")]
    service: ServiceMetadata
    modelRepository: ModelRepositorySettings
    readinessProbe: Annotated[
        JSONObject,
        Field(
            description="the chart's exec probe, in the form the chart renders it: command (list of strings), "
            "initialDelaySeconds, periodSeconds, timeoutSeconds, successThreshold, failureThreshold (the chart "
            "renders no grpc or httpGet handler); {} keeps the chart's"
        ),
    ]
    startupProbe: Annotated[
        JSONObject,
        Field(
            description="the chart's httpGet probe: httpGet {path, port}, initialDelaySeconds, periodSeconds, "
            "failureThreshold; {} keeps the chart's"
        ),
    ]
