"""Taking over a live Flux-managed release: the URNs the engine gives it, and the runbook for one stack.

Everything is derived from the program's own names (project, component names and types, the provider's type token)
and the stack's settings, so the printed commands name exactly what ``pulumi up`` registers. ``STEPS`` is the one
source of the runbook: ``takeover steps`` prints it for a stack, and docs/takeover.md holds it for hammer
(``python -m supersonic_interlink.takeover.steps --write``), beside the reasons and sources behind the order.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace

from supersonic_interlink.components.envoy_config import config_checksum, config_map_name, envoy_config_text
from supersonic_interlink.components.failed_pod_cleanup import object_name as cleanup_object_name
from supersonic_interlink.components.supersonic_release import (
    HELM_RELEASE_TYPE,
    helm_release_resource_name,
    live_release_id,
)
from supersonic_interlink.components.supersonic_release import TYPE as RELEASE_COMPONENT_TYPE
from supersonic_interlink.config import PROJECT, Settings
from supersonic_interlink.config.pulumi_config import settings_from_config
from supersonic_interlink.config.stack_config import ROOT, load_stack, stack_file
from supersonic_interlink.contract import CHART
from supersonic_interlink.program import RELEASE_COMPONENT

LIVE_OBJECTS_FILE = "live-objects.yaml"
"""Where step 1 saves the live objects the chart looks up, for ``./supersonic takeover objects <stack>`` in step 2."""


def resource_urn(stack: str, project: str, type_chain: Sequence[str], name: str) -> str:
    """The URN the engine gives a resource: ``urn:pulumi:<stack>::<project>::<qualified type>::<name>``, the types of
    its ancestors and its own joined by ``$``, the root stack left out (pulumi/pulumi ``Deployment.generateURN``,
    ``urn.New``)."""
    types = [t for t in type_chain if t != "pulumi:pulumi:Stack"]
    if not types:
        raise ValueError("a URN needs the resource's own type")
    return f"urn:pulumi:{stack}::{project}::{'$'.join(types)}::{name}"


@dataclass(frozen=True)
class Adoption:
    """Everything the steps name for one stack."""

    stack: str
    namespace: str
    release: str
    adopt: bool
    chart_pinned: bool
    component_urn: str
    release_urn: str
    import_id: str
    envoy_service: str
    envoy_deployment: str
    triton_deployment: str
    scaled_object: str
    hold_seconds: int
    new_envoy_config_map: str
    cleanup_cronjob: str


def adoption(stack: str, settings: Settings) -> Adoption:
    name, chart = settings.release.name, settings.release.chart
    release_type = [RELEASE_COMPONENT_TYPE, HELM_RELEASE_TYPE]
    return Adoption(
        stack=stack,
        namespace=settings.namespace,
        release=name,
        adopt=settings.release.adopt,
        chart_pinned=chart.kind == "git" and chart.pinned,
        component_urn=resource_urn(stack, PROJECT, [RELEASE_COMPONENT_TYPE], RELEASE_COMPONENT),
        release_urn=resource_urn(stack, PROJECT, release_type, helm_release_resource_name(RELEASE_COMPONENT)),
        import_id=live_release_id(settings),
        envoy_service=CHART.instance_name(name),
        envoy_deployment=CHART.envoy_object_name(name),
        triton_deployment=settings.generation.inference_object_name(name),
        scaled_object=CHART.scaled_object_name(name),
        hold_seconds=settings.scaleFromZero.holdMinReplicasSeconds,
        new_envoy_config_map=config_map_name(name, config_checksum(envoy_config_text(settings))),
        cleanup_cronjob=cleanup_object_name(name),
    )


@dataclass(frozen=True)
class Do:
    """One action of a step: a shell command, or an edit made in a repository (``shell=False``)."""

    text: str
    shell: bool = True


@dataclass(frozen=True)
class Step:
    title: str
    changes: str
    """What the step changes on the cluster or in a repository."""
    actions: tuple[Do, ...]
    checks: tuple[str, ...]
    """Commands and the result that shows the step worked."""
    undo: tuple[str, ...]


STEPS = r"""
# Log in to the state backend and create the stack (once per stack)
changes: The stack {stack_name} in the backend, and the encryptionsalt: line `pulumi stack init` adds to
  {stack_path} (commit it: every preview decrypts with it); nothing on the cluster.
$ pulumi login '<the backend URL: docs/state-backend.md, step 2>'
$ export PULUMI_CONFIG_PASSPHRASE='<the stacks' passphrase>'
$ pulumi stack init {stack} --secrets-provider passphrase   (skip it if pulumi stack ls lists it)
$ kubectl config current-context
check: pulumi stack ls  lists {stack_name};
check: the context is the cluster of {ns}, and {kubectl} get secrets -l owner=helm  lists {rel}'s records (every
  preview reads them).
undo: pulumi stack rm {stack}   (only while the stack is empty: before step 4)

# Read what runs today
changes: Nothing (read-only).
$ {helm} history {rel} --max 5
$ {helm} get metadata {rel}
$ kubectl get helmcharts.source.toolkit.fluxcd.io -A --field-selector metadata.name={helm_chart} -o
  jsonpath='{{range .items[*]}}{{.metadata.namespace}} {{.status.observedSourceArtifactRevision}}{{"\n"}}{{end}}'
$ {hr} -o jsonpath='{owner}'
$ {helm} get values {rel} -o yaml > live-values.yaml
$ {kubectl} get configmap/{envoy_config_map} scaledobject/{scaled_object} -o yaml > {live_objects}
$ {helm} get manifest {rel} > live-manifest.yaml
$ {address}
check: VERSION ends in +<12 hex>: the first 12 hex digits of the chart commit the release runs; the HelmChart's
  revision (main@sha1:<40 hex>) starts with the same 12 (if not, Flux has a newer commit than the release). Step 4's
  rollback returns to that commit; the stack's own pin is the one step 4 deploys (docs/chart.md);
check: note the HelmChart's namespace, the Kustomization (namespace and name) that applies the HelmRelease, the last
  deployed revision and the LoadBalancer address; {live_objects} holds the two live objects the chart reads with
  lookup (step 2 serves them to it).
undo: Nothing to undo.

# Turn adoption on, compare the values and the objects (a pull request here)
changes: {stack_path} only; nothing on the cluster.
- set `adopt: true` under supersonic-interlink:release in {stack_path}
$ ./supersonic takeover values {stack} --live live-values.yaml > takeover-values.md
$ ./supersonic takeover objects {stack} --live live-values.yaml --live-object {live_objects} --live-manifest
  live-manifest.yaml > takeover-objects.md
$ ./supersonic render {stack} --out rendered/{stack} --check
$ ./supersonic pulumi preview {stack} --diff
check: takeover values exits 0 (every difference declared); paste takeover-values.md into the pull request;
check: takeover objects exits 0 (nothing deleted, or every deletion declared: a move of the chart generation
  replaces the inference server) and names both live objects as read from the file; paste takeover-objects.md into
  the pull request;
check: the preview imports {urn} (id {import_id}) and then updates it: no delete, no replace;
check: it creates ConfigMap {new_envoy_config_map} and the {cleanup_cronjob} objects.
undo: Close the pull request.

# Stop Flux acting on the release (GitOps repository)
changes: HelmRelease {rel} gets spec.suspend: true and the annotation kustomize.toolkit.fluxcd.io/prune: disabled;
  helm-controller stops reconciling it, the release is untouched.
- in the HelmRelease {rel} manifest: spec.suspend: true and metadata.annotations:
  {{kustomize.toolkit.fluxcd.io/prune: disabled}}; commit
$ {reconcile}
check: {hr} -o jsonpath='{{.spec.suspend}} {{.metadata.annotations.kustomize\.toolkit\.fluxcd\.io/prune}}'  prints:
  true disabled;
check: flux get helmreleases -n {ns}  shows SUSPENDED True.
undo: Revert the commit; Flux resumes the release.

# Adopt and upgrade the release
changes: One gated `pulumi up`: the release enters the state (read, unchanged), ConfigMap {new_envoy_config_map} is
  created, one atomic helm upgrade moves {rel} to this project's values and pinned chart commit (a failure rolls back
  to the Flux revision), the {cleanup_cronjob} objects are created. If the generation moves, clients see a cold
  start (docs/chart.md, Moving the generation): run it while the release is idle.
$ ./supersonic pulumi preview {stack} --diff
$ ./supersonic pulumi up {stack} --yes
check: {helm} history {rel} --max 2  shows one new revision, deployed;
check: {helm} get values {rel} -o json | jq -r .envoy.external_config.configmap_name  prints {new_envoy_config_map};
check: pulumi stack export --stack {stack} | jq -r '.deployment.resources[] |
  select(.urn == "{release_urn}") | .id'  prints {import_id};
check: {kubectl} rollout status deployment/{envoy_deployment};
check: {address}  prints the address from step 1;
check: {kubectl} get scaledobject {scaled_object} -o jsonpath='{{.spec.minReplicaCount}}'  still prints the live
  value: the chart keeps the live ScaledObject's minReplicaCount across upgrades (step 7 sets it to 0).
undo: pulumi state delete --force {urn} --stack {stack} --yes   (Pulumi forgets the protected release; it is not
  uninstalled)
undo: {helm} rollback {rel} <revision from step 1>
undo: pulumi destroy --stack {stack}   (only after the state delete: the Envoy ConfigMap and the cleanup objects; with
  the release in the state, destroy would uninstall it)
undo: then undo step 3.

# Retire the HelmRelease and the old ConfigMaps
changes: Flux prunes ConfigMaps {values_config_map} and {envoy_config_map}; the suspended HelmRelease stays (prune
  disabled) until it is deleted by hand, which, suspended, uninstalls nothing.
- remove HelmRelease {rel}, ConfigMap {values_config_map} and ConfigMap {envoy_config_map} from the GitOps
  repository; commit
$ {reconcile}
$ test "$({hr} -o jsonpath='{{.spec.suspend}}')" = true && {kubectl} delete helmrelease {rel}
$ kubectl -n <HelmChart namespace from step 1> delete helmchart {helm_chart} --ignore-not-found
check: {hr}  and  {kubectl} get configmap {values_config_map} {envoy_config_map}  report NotFound;
check: {helm} status {rel}  still deployed at the revision of step 4;
check: ./supersonic pulumi preview {stack} --expect-no-changes  exits 0.
undo: Revert the GitOps commit: the HelmRelease comes back suspended, the ConfigMaps come back.

# Retire the old pod pruner after the new CronJob has run
changes: Flux prunes CronJob, ServiceAccount, Role and RoleBinding {pruner}; until then both cleaners run, which is
  harmless (both keep the newest Failed pod).
$ {kubectl} get cronjob {cleanup_cronjob} -o jsonpath='{{.status.lastSuccessfulTime}}'
- once that prints a time: remove CronJob, ServiceAccount, Role and RoleBinding {pruner} from the GitOps
  repository; commit
$ {reconcile}
check: {kubectl} get cronjob,serviceaccount,role,rolebinding {pruner}  reports NotFound for all four.
undo: Revert the GitOps commit.

# Acceptance: scale to zero, then a cold start through the new path
changes: ScaledObject {scaled_object} gets minReplicaCount 0 (the value the stack deploys; the chart's lookup kept
  the live one) and KEDA scales Triton to zero; the probe then wakes it once (a Slurm job).
$ {kubectl} patch scaledobject {scaled_object} --type merge -p '{{"spec":{{"minReplicaCount":0}}}}'
$ {kubectl} get deployment {triton_deployment} -o jsonpath='{{.spec.replicas}}'
$ ./supersonic probe {stack}   (from a host that resolves cluster DNS, or docs/probe.md)
check: the deployment prints 0 before the probe runs (KEDA scales down once nothing is inferring);
check: the probe ends `ready` with exit 0: a cold start woke Triton through the Lua filter and the sidecar;
check: about {hold_seconds} s (holdMinReplicasSeconds) after the wake, minReplicaCount is 0 again and Triton goes
  back to zero replicas;
check: then set `adopt: false` in {stack_path} (a follow-up pull request): its preview shows no changes.
undo: {kubectl} patch scaledobject {scaled_object} --type merge -p '{{"spec":{{"minReplicaCount":1}}}}'   (keeps one
  Triton up; later upgrades keep it too)
"""
"""The runbook, one block per step: ``# title``, ``changes:``, ``$`` a shell command, ``-`` an edit in a repository,
``check:``, ``undo:``; a line indented by two spaces continues the one above. ``{name}`` is one of the stack's names
(``steps``); the jsonpath and JSON braces are doubled."""


def steps(a: Adoption) -> list[Step]:
    """The takeover for one stack, step 0 first, in the order that never uninstalls the release (docs/takeover.md
    says why)."""
    ns, rel = a.namespace, a.release
    # What the GitOps repository applies for the release today, by the names it gives them: the HelmRelease (the
    # release's name), the HelmChart helm-controller made for it (``<namespace>-<HelmRelease>``, in the
    # GitRepository's namespace), the values and Envoy ConfigMaps, and the old cleanup's objects.
    kubectl = f"kubectl -n {ns}"
    label = "{.metadata.labels.kustomize\\.toolkit\\.fluxcd\\.io/"
    names = {
        **vars(a),
        "ns": ns,
        "rel": rel,
        "helm": f"helm -n {ns}",
        "kubectl": kubectl,
        "helm_chart": f"{ns}-{rel}",
        "values_config_map": f"{rel}-config",
        "envoy_config_map": f"{rel}-envoy-config-custom",
        "pruner": f"{rel}-pod-pruner",
        "stack_name": a.stack,
        "stack_path": stack_file(a.stack).relative_to(ROOT),
        "urn": shlex.quote(a.release_urn),
        "stack": shlex.quote(a.stack),  # a stack name is checked where it is read; quoted here too, as every word
        "hr": f"{kubectl} get helmrelease {rel}",
        "owner": f"{label}namespace}} {label}name}}",
        "address": f"{kubectl} get service {a.envoy_service} -o jsonpath='{{.status.loadBalancer.ingress[0].ip}}'",
        "reconcile": "flux reconcile kustomization <name> -n <namespace> --with-source   (the Kustomization from "
        "step 1)",
        "live_objects": LIVE_OBJECTS_FILE,
    }
    plan = []
    for block in STEPS.strip().format(**names).split("\n\n"):
        lines: list[str] = []
        for line in block.splitlines():
            if line.startswith("  "):
                lines[-1] += " " + line.strip()
            else:
                lines.append(line)
        field = {kind: [line.removeprefix(kind) for line in lines if line.startswith(kind)] for kind in KINDS}
        actions = tuple(Do(line[2:], shell=line[0] == "$") for line in lines if line[:2] in ("$ ", "- "))
        plan.append(
            Step(field["# "][0], field["changes: "][0], actions, tuple(field["check: "]), tuple(field["undo: "]))
        )
    return plan


KINDS = ("# ", "changes: ", "check: ", "undo: ")


def markdown_steps(plan: Sequence[Step]) -> str:
    """The steps as markdown, edits as ``#`` comments in the command block: what ``takeover steps`` prints after its
    header, and docs/takeover.md for hammer."""
    lines: list[str] = []
    for number, step in enumerate(plan):
        lines += [f"### {number}. {step.title}", "", f"Changes: {step.changes}", "", "```sh"]
        lines += [a.text.replace("   (", "   # (", 1) if a.shell else f"# {a.text}" for a in step.actions]
        lines += ["```", "", "Check:", ""] + [f"- {check}" for check in step.checks]
        lines += ["", "Undo:", ""] + [f"- {undo}" for undo in step.undo] + [""]
    return "\n".join(lines)


def format_steps(a: Adoption, plan: Sequence[Step]) -> str:
    pinned = "a pinned git commit." if a.chart_pinned else "not pinned yet: pin it first (docs/chart.md)."
    return (
        f"Take over Helm release {a.release} in namespace {a.namespace} with stack {a.stack} (docs/takeover.md "
        f"explains every step).\n\n  component URN: {a.component_urn}\n  release URN:   {a.release_urn}\n"
        f"  import id:     {a.import_id}\n  release.adopt is {'on' if a.adopt else 'off (step 2 turns it on)'}; the "
        f"chart is {pinned}\n\n{markdown_steps(plan)}"
    )


DOCS = ROOT / "docs" / "takeover.md"
DOCS_BEGIN = "<!-- made from takeover/steps.py by `.venv/bin/python -m supersonic_interlink.takeover.steps --write` -->"
DOCS_END = "<!-- end of the steps -->"


def docs_text(current: str, a: Adoption) -> str:
    """docs/takeover.md with its steps made from ``a`` (hammer's names), the same on every machine: the Envoy
    ConfigMap's content hash as ``<hash>``."""
    a = replace(a, new_envoy_config_map=config_map_name(a.release, "<hash>"))
    head, found, rest = current.partition(DOCS_BEGIN + "\n")
    _, found_end, tail = rest.partition(DOCS_END)
    if not (found and found_end):
        raise ValueError(f"{DOCS.relative_to(ROOT)} lacks the lines {DOCS_BEGIN} and {DOCS_END}")
    return f"{head}{DOCS_BEGIN}\n\n{markdown_steps(steps(a))}\n{DOCS_END}{tail}"


if __name__ == "__main__":
    hammer = load_stack("hammer")
    wanted = docs_text(DOCS.read_text(), adoption("hammer", settings_from_config(hammer.config, hammer.secret_keys)))
    if sys.argv[1:] == ["--write"]:
        DOCS.write_text(wanted)
    elif DOCS.read_text() != wanted:
        sys.exit(f"{DOCS.relative_to(ROOT)} is not what steps.py makes; run with --write")
