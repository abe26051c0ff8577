"""``./supersonic render``: a stack evaluated offline as ``pulumi up`` would (each secret the placeholder, no passphrase
read), written as a render tree (a Secret's data masked), summarized and checked; a skipped check says why. And
``./supersonic stack new``, which writes a stack file and renders it."""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jmespath
import yaml

from supersonic_interlink import EXIT_FINDING, EXIT_SKIPPED, EXIT_USAGE, ROOT, progress
from supersonic_interlink.chart import source as chart_source
from supersonic_interlink.chart.binaries import BinaryError
from supersonic_interlink.chart.helm import ChartRenderer, ChartRenderError
from supersonic_interlink.chart.pin import pin_chart
from supersonic_interlink.components.supersonic_release import HELM_RELEASE_TYPE
from supersonic_interlink.config import PROJECT, ChartSource, ConfigError, deep_merge, load_yaml
from supersonic_interlink.config.envoy import repository_index_idle_timeout_seconds
from supersonic_interlink.config.loading import CHART_OVERRIDE, values_on_disk
from supersonic_interlink.config.pulumi_config import matchers, settings_from_config
from supersonic_interlink.config.stack_config import (
    SECRET_PLACEHOLDER,
    check_stack_name,
    full_key,
    load_stack,
    merged_config,
    read_stack_document,
    secret_key_of,
    secret_paths,
    stack_file,
)
from supersonic_interlink.contract import CHART
from supersonic_interlink.files import write_text
from supersonic_interlink.objdiff import object_key
from supersonic_interlink.program import build
from supersonic_interlink.render import conformance
from supersonic_interlink.render.checks import envoy_findings, kubernetes_findings, object_findings
from supersonic_interlink.render.evaluate import evaluate, reveal

RELEASE_OPTIONS = ("atomic", "chart", "cleanupOnFail", "dependencyUpdate", "maxHistory", "postrender", "timeout")
CHART_DIR = "chart"


def render(
    stack: str, config: Mapping[str, Any] | None = None, secrets: Sequence[str] = (), chart_dir: Path | None = None
) -> dict[str, Any]:
    """The stack (its file's, or ``config`` and ``secrets`` paths as the CLI passes them) as manifests, release and
    Envoy text, for ``chart_dir`` instead of its own chart if given. Raises ConfigError."""
    if config is None:
        loaded = load_stack(stack)
        config, secrets = loaded.config, loaded.secrets
    override = CHART_OVERRIDE.set(chart_dir)
    try:  # every config problem, before anything is evaluated
        settings = settings_from_config(config, sorted({secret_key_of(path) for path in secrets}))
    except ConfigError as error:
        note = f" (a secret: rendered offline as {SECRET_PLACEHOLDER}, which this key does not take; `pulumi preview`"
        raise ConfigError(
            [p + (f"{note} checks the real value)" if SECRET_PLACEHOLDER in p else "") for p in error.problems]
        ) from None
    finally:
        CHART_OVERRIDE.reset(override)
    evaluation = evaluate({}, stack, program=lambda: build(settings), chart_dir=chart_dir)
    # What the provider is handed: secrets unwrapped (offline they are placeholders).
    kept = [r for r in evaluation.resources if r.custom and r.type.startswith("kubernetes:")]
    manifests = sorted(
        (reveal(r.inputs) for r in kept if r.type != HELM_RELEASE_TYPE),
        key=lambda m: (m["kind"], m["metadata"]["name"]),
    )
    inputs = reveal(evaluation.one(HELM_RELEASE_TYPE).inputs)
    files = [load_yaml(asset["text"]) or {} for asset in inputs.get("valueYamlFiles", [])]  # then `values` over them
    values: dict[str, Any] = functools.reduce(deep_merge, [*files, inputs["values"]], {})  # Helm's order
    chart = settings.release.chart
    fields = {"git": ("git", "commit", "path"), "path": ("path",)}.get(chart.kind, ("repo", "name", "version"))
    config_name = values[CHART.envoy_values_key]["external_config"]["configmap_name"]
    config_map = next(m for m in manifests if m["kind"] == "ConfigMap" and m["metadata"]["name"] == config_name)
    return {
        "manifests": manifests,
        "release": {
            "name": inputs["name"],
            "namespace": inputs["namespace"],
            "chart": {name: getattr(chart, name) for name in fields},
            "options": {key: inputs[key] for key in RELEASE_OPTIONS if key in inputs},
            "values": values,
        },
        "envoy": config_map["data"][CHART.envoy_config_key],
        "chart_source": chart,
        "generation": settings.generation,
        "generation_chart": chart_dir,
        "secrets": list(secrets),
        "settings": settings,
    }


def chart_pinned(stack: str) -> bool:
    """Whether the stack's chart source names one exact chart (False when its config does not load): lint's check."""
    try:
        loaded = load_stack(stack)
        return bool(settings_from_config(loaded.config, loaded.secret_keys).release.chart.pinned)
    except ConfigError:
        return False


def locate_chart(stack: str, chart: ChartSource, chart_dir: Path | None = None) -> tuple[Path | None, str]:
    """(the chart directory, "") when the chart is on disk (``chart_dir`` if given), else (None, why not)."""
    if chart_dir is not None or chart.kind not in ("git", "path"):
        return chart_dir, "" if chart_dir else "the chart is in a chart repository, not on disk (give --chart DIR)"
    if chart.kind == "path":
        found = chart_source.chart_on_disk(chart)
        return found, "" if found else f"no chart at {chart.path}"
    if chart.commit is None:
        return None, f"the chart is not pinned (`{chart_source.pin_command(stack)}`)"
    found, modified = chart_source.fetched_copy(str(chart.commit), str(chart.path))
    if modified is not None:
        return None, (
            f"the fetched copy of commit {chart.commit} is modified: {modified} (delete "
            f"{chart_source.CACHE_DIR}/{chart.commit} and run `./supersonic render {stack} --fetch-chart`)"
        )
    return found, "" if found else (
        f"commit {str(chart.commit)[:12]} is not on disk: the chart checks need `./supersonic render {stack} "
        f"--fetch-chart` (network access to {chart.git})"
    )


def chart_objects(chart_dir: Path, rendered: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The release's chart objects as ``pulumi up`` would install them, sorted. Raises what Helm's run raises."""
    expected = conformance.Expected.from_rendered(rendered)
    postrender = rendered["release"]["options"].get("postrender")
    post_renderer = ROOT / str(postrender) if postrender else None
    with ChartRenderer(chart_dir, expected.release_name, expected.namespace, expected.served, post_renderer) as helm:
        objects = helm.render(expected.values)
    order = jmespath.compile("[kind, apiVersion, metadata.namespace, metadata.name]")
    return sorted(objects, key=lambda m: [str(field or "") for field in order.search(m)])


def mask(objects: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The objects with every value of a v1 Secret's ``data`` and ``stringData`` masked (a copy)."""

    def masked(value: Any) -> str:
        text = str(value).encode()
        return f"(masked: {len(text)} bytes, sha256 {hashlib.sha256(text).hexdigest()[:12]})"

    copies = [dict(manifest) for manifest in objects]
    for manifest in copies:
        if manifest.get("kind") == "Secret" and str(manifest.get("apiVersion", "")) == "v1":
            for key in ("data", "stringData"):
                if isinstance(manifest.get(key), Mapping):
                    manifest[key] = {name: masked(value) for name, value in manifest[key].items()}
    return copies


def file_names(objects: Iterable[Mapping[str, Any]]) -> list[str]:
    """A file name per object, ``<Kind>[.<group>]/<name>.yaml`` (the namespace added where two would meet)."""
    names: list[str] = []
    for key in map(object_key, objects):
        stem = f"{key.kind}.{key.group}/{key.name}" if key.group else f"{key.kind}/{key.name}"
        names.append(f"{stem}.yaml" if f"{stem}.yaml" not in names else f"{stem}.{key.namespace or 'default'}.yaml")
    return names


class _Dumper(yaml.SafeDumper):  # multi-line strings as literal blocks, so they diff line by line
    pass


_Dumper.add_representer(
    str, lambda d, v: d.represent_scalar("tag:yaml.org,2002:str", v, style="|" if "\n" in v else None)
)


def dump(*documents: Any) -> str:
    return yaml.dump_all(documents, Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=120)


def write(rendered: dict[str, Any], out: Path, chart_objects: Sequence[Mapping[str, Any]] | None = None) -> list[Path]:
    """Write the render tree (``chart/`` given its objects, replacing an earlier one); return what it wrote."""
    out.mkdir(parents=True, exist_ok=True)
    texts = {"manifests.yaml": dump(*rendered["manifests"]), "release.yaml": dump(rendered["release"])}
    written = []
    for name, text in {**texts, "envoy.yaml": rendered["envoy"]}.items():
        write_text(out / name, text)  # a link planted in the output directory is not followed
        written.append(out / name)
    if (out / CHART_DIR).is_dir():
        shutil.rmtree(out / CHART_DIR)
    if chart_objects is not None:
        masked = mask(chart_objects)
        for name, manifest in zip(file_names(masked), masked, strict=True):
            (out / CHART_DIR / name).parent.mkdir(parents=True, exist_ok=True)
            write_text(out / CHART_DIR / name, dump(manifest))
        written.append(out / CHART_DIR)
    return written


def findings(rendered: dict[str, Any]) -> list[str]:
    """The program's own objects: strict schemas, the API server's rules, ``envoy --mode validate``."""
    return (
        kubernetes_findings(rendered["manifests"])
        + object_findings(rendered["manifests"], rendered["settings"], schemas=False)
        + envoy_findings(rendered["envoy"])
    )


def chart_findings(chart_dir: Path, rendered: dict[str, Any]) -> list[str]:
    """The chart's objects through the same checks; none when the chart refuses the values (conformance says so)."""
    try:
        return object_findings(chart_objects(chart_dir, rendered), rendered["settings"])
    except (ChartRenderError, BinaryError):
        return []


def checks(stack: str, rendered: dict[str, Any], chart_dir: Path | None = None, say: Callable = print) -> dict:
    """``render --check`` as ``--json`` has it: ``findings``; ``skipped`` (could not run) and ``deferred`` checks (run
    where the secret is: no pass claimed, no skip)."""
    found, skipped, deferred = findings(rendered), [], []
    chart = rendered["chart_source"]
    if chart.kind == "git" and chart.commit in CHART.guarded_commits:  # known offline, the chart not on disk
        found.append(f"{PROJECT}:release.chart.commit: {chart_source.guarded_message(chart.commit)}")
    directory, why = locate_chart(stack, chart, chart_dir)
    if directory is None:
        skipped.append({"check": "chart conformance", "why": why})
    else:
        found += chart_findings(directory, rendered)
        try:
            expected = conformance.Expected.from_rendered(rendered)
            conforms = [f"chart {directory}: {f}" for f in conformance.check(directory, expected)]
        except BinaryError as error:
            conforms = [f"chart conformance could not run: {error}"]
        found += conforms
        if not conforms:
            say(f"stack {stack}: chart {directory} conforms")
    if any(path.startswith(f"{PROJECT}:serverLoad") for path in rendered["secrets"]):
        # config/pulumi_config.py checks the metric's release and namespace selectors; offline a secret has no text.
        why = "serverLoad is a secret, whose text is not here offline; pulumi preview checks it"
        deferred.append({"check": "load metric selectors", "why": why})
    return {"findings": found, "skipped": skipped, "deferred": deferred}


def summary(stack: str, rendered: dict[str, Any]) -> str:
    """What the render holds; a chart not pinned, a generation assumed and secrets are said."""
    release, chart, chart_dir = rendered["release"], rendered["chart_source"], rendered["generation_chart"]
    where = " ".join(f"{name} {value}" for name, value in release["chart"].items() if value is not None)
    if chart.kind == "git" and not chart.commit:
        where += f", NOT PINNED: pulumi preview/up refuse it; run `{chart_source.pin_command(stack)}`"
    on_disk = chart_dir is not None or values_on_disk(chart) is not None
    read = "read from the chart's values.yaml" if on_disk else "assumed: the chart is not on disk to read it from"
    sfz, idle = release["values"]["scaleFromZero"], repository_index_idle_timeout_seconds(rendered["settings"])
    waking = f"on, readyTimeoutSeconds {sfz['readyTimeoutSeconds']} (RepositoryIndex idle_timeout {idle}s)"
    secrets = (
        f"  secrets rendered as {SECRET_PLACEHOLDER}: {', '.join(rendered['secrets'])}\n" if rendered["secrets"] else ""
    )
    return (
        f"stack {stack}: release {release['name']} in namespace {release['namespace']}\n  chart: {where}\n"
        f"  chart generation: {rendered['generation'].name}, {read}\n{secrets}"
        f"  scale from zero: {waking if sfz['enabled'] else 'off'}"
    )


def _err(text: str) -> None:
    print(text, file=sys.stderr)


def config_problems(stack: str, error: ConfigError) -> int:
    _err(f"stack {stack}: invalid config:\n" + "\n".join(f"  {problem}" for problem in error.problems))
    return EXIT_USAGE


def run(
    stack: str,
    *,
    out: Path | None,
    check: bool,
    strict: bool,
    chart_dir: Path | None,
    fetch_chart: bool,
    pin_chart: str | None,
    as_json: bool = False,
) -> int:
    """Pin or fetch the chart, or render, write (``out``) or summarize, and check; ``as_json``: one JSON document."""
    if pin_chart is not None:
        return _pin(stack, pin_chart)
    try:
        rendered = render(stack, chart_dir=chart_dir)
    except ConfigError as error:
        return config_problems(stack, error)
    if fetch_chart:
        return _fetch(stack, rendered["chart_source"])
    say = functools.partial(print, file=sys.stderr if as_json else sys.stdout)
    document: dict[str, Any] = {"stack": stack, **{key: rendered[key] for key in ("release", "manifests", "envoy")}}
    document |= {"generation": rendered["generation"].name, "chart_objects": None, "written": [], "check": None}

    def done(code: int) -> int:
        if as_json:
            print(json.dumps(document, indent=2, default=str))
        return code

    if out:
        found, why = locate_chart(stack, rendered["chart_source"], chart_dir)
        try:
            objects, refused = (chart_objects(found, rendered) if found else None), ""
        except (ChartRenderError, BinaryError) as error:
            objects, refused = None, " ".join(str(error).split())
        try:
            written = write(rendered, out, objects)
        except OSError as error:
            _err(f"render: --out {out}: cannot write: {error.strerror or error}")
            return EXIT_USAGE
        document |= {"chart_objects": objects, "written": [str(path) for path in written]}
        for path in written:
            say(f"wrote {path}/ ({len(objects or [])} chart objects)" if path.is_dir() else f"wrote {path}")
        if refused:
            _err(f"stack {stack}: the chart's objects cannot be rendered: {refused}")
            if not check:
                return done(EXIT_FINDING)
        elif objects is None:
            say(f"stack {stack}: the chart's objects are not rendered: {why}")
    else:
        say(summary(stack, rendered))
    if not check:
        return done(0)
    with progress.step(f"stack {stack}: checking: schemas, the API server's rules, envoy, the chart if on disk"):
        document["check"] = result = checks(stack, rendered, chart_dir, say)
    for finding in result["findings"]:
        _err(f"check: {finding}")
    for verb in ("skipped", "deferred"):
        for item in result[verb]:
            say(f"stack {stack}: check {verb}: {item['check']}: {item['why']}")
    names = ", ".join(item["check"] for item in result["skipped"] or result["deferred"])
    if result["findings"]:
        _err(f"stack {stack}: {len(result['findings'])} finding(s)")
        return done(EXIT_FINDING)
    if result["skipped"]:
        say(f"stack {stack}: no findings, but {len(result['skipped'])} check(s) skipped ({names}): not a pass")
        if strict:
            _err(f"stack {stack}: --strict: a check that could not run fails the run (exit 3)")
            return done(EXIT_SKIPPED)
        return done(0)
    deferred = f", except {names}, which pulumi preview runs (a secret's text)" if names else ""
    say(f"stack {stack}: checks passed{deferred}")
    return done(0)


def _fetch(stack: str, chart: ChartSource) -> int:
    if chart.kind != "git":
        print(f"stack {stack}: the chart is a {chart.kind} source; nothing to fetch")
        return 0
    if chart.commit is None:
        _err(f"stack {stack}: {chart_source.unpinned_message(stack)}")
        return EXIT_FINDING
    try:
        with progress.step(f"stack {stack}: fetching chart {chart.commit} from {chart.git}"):
            directory = chart_source.fetch(str(chart.git), chart.commit, str(chart.path))
    except chart_source.ChartSourceError as error:
        _err(f"stack {stack}: {error}")
        return EXIT_FINDING
    print(f"stack {stack}: chart {chart.commit} at {directory.relative_to(chart_source.ROOT)}")
    return 0


def _pin(stack: str, ref: str) -> int:
    try:
        with progress.step(f"stack {stack}: resolving {ref} and fetching the chart"):
            commit, path = pin_chart(stack, ref)
    except ConfigError as error:
        return config_problems(stack, error)
    except chart_source.ChartSourceError as error:
        _err(f"stack {stack}: --pin-chart {ref}: {error}")
        return EXIT_FINDING
    print(f"stack {stack}: release.chart pinned to {commit} ({ref}); wrote {path.relative_to(chart_source.ROOT)}")
    return 0


NODE_LABEL = "kubernetes.io/hostname"  # interLink's virtual node carries its name under it


def new_config(source: dict[str, Any], *, namespace: str, release: str, node: str) -> tuple[dict[str, Any], list[str]]:
    """(the new stack's ``config:`` map, the source's secret paths left out)."""
    secrets = secret_paths(source)
    config: dict[str, Any] = {}
    for key, value in source.items():
        if not any(path == full_key(key) or path.startswith(f"{full_key(key)}.") for path in secrets):
            config[full_key(key)] = value
    config[full_key("namespace")] = namespace
    config[full_key("release")] = {**(config.get(full_key("release")) or {}), "name": release}
    triton = config.get(full_key("triton")) or {}
    config[full_key("triton")] = {**triton, "nodeSelector": {**(triton.get("nodeSelector") or {}), NODE_LABEL: node}}
    load = config.get(full_key("serverLoad")) or {}
    metric = load.get("metric")
    if isinstance(metric, str):
        for matcher in matchers(metric):
            if matcher.op in ("=", "=~"):
                wanted = release if matcher.label == "release" else namespace
                metric = metric.replace(matcher.text, f'{matcher.label}{matcher.op}"{wanted}"')
        config[full_key("serverLoad")] = {**load, "metric": metric}
    return config, secrets


def new_stack(name: str, *, namespace: str, release: str, node: str, source: str) -> int:
    """A stack file from another's with its own names, the source's comments and secrets left out, never over a file;
    then ``render --check``."""
    try:
        target = stack_file(check_stack_name(name))
        origin = stack_file(source)
        if not origin.is_file():
            raise ConfigError([f"--from {source}: no file {origin.name} in stacks/"])
        config, dropped = new_config(read_stack_document(origin), namespace=namespace, release=release, node=node)
        settings_from_config(merged_config(config))  # every config problem, before a file is written
    except ConfigError as error:
        print(f"stack new {name}: " + "\n  ".join(error.problems), file=sys.stderr)
        return EXIT_USAGE
    text = (
        f"# {name}: made by `./supersonic stack new` from stack {source}. Its namespace, release name, virtual node\n"
        f"# and load-metric selectors are its own; every other value is {source}'s: review each for this cluster.\n"
    ) + yaml.safe_dump({"config": config}, sort_keys=False, width=4096)
    try:
        with Path(target).open("x", encoding="utf-8") as file:
            file.write(text)
    except FileExistsError:
        print(f"stack new {name}: stacks/{target.name} exists; it is never overwritten", file=sys.stderr)
        return EXIT_USAGE
    print(f"wrote stacks/{target.name}")
    for path in dropped:
        print(f"left out the secret {path} (bound to {source}'s key): pulumi config set --secret --stack {name} ...")
    return run(name, out=None, check=True, strict=False, chart_dir=None, fetch_chart=False, pin_chart=None)
