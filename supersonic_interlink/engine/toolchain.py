"""The real engine and control plane, built from their Go modules into a version-keyed cache outside the clone.

Nothing of those projects' source is in this repository: each binary's module and version are pinned by a small
wrapper module under ``tools/<group>/`` (``go.mod`` with a ``tool`` line, and ``go.sum``). ``go build`` reads the
module from the Go module proxy into the Go module cache and writes the binary to
``$SUPERSONIC_CACHE/bin/<name>-<version>/`` (default ``~/.cache/supersonic-interlink``), so a second run, and CI on
the same machine, find it there and start at once.

    python -m supersonic_interlink.engine.toolchain build [NAME ...]   # build what is missing, a line per binary
    python -m supersonic_interlink.engine.toolchain path NAME          # where NAME is (built or not)

Facts the build depends on (read in each module's source at the pinned version):

- ``pkg/v3``'s go.mod replaces ``github.com/atotto/clipboard``; replaces in a dependency are ignored, so
  ``tools/pulumi/go.mod`` repeats it. Without the version ldflag ``pulumi version`` prints nothing and the
  Automation API treats the CLI as 3.0.
- The provider's ``main.go`` embeds ``schema-embed.json`` and ``terraform-mapping-embed.json``, which its
  ``generate.go`` writes from ``schema.json`` (with ``.version`` set) and ``terraform-mapping.json`` and which are
  not in the module zip: the main package is copied into the cache and built there beside them.
- KEDA's go.mod replaces ``github.com/nexus-rpc/nexus-proto-annotations`` and excludes a ``go-chi`` version;
  ``tools/keda/go.mod`` repeats both. Its operator is the heaviest build here (about 25 minutes on two cores).
- ``k8s.io/kubernetes`` replaces its staging modules with its own tree; ``tools/kubernetes/go.mod`` points each
  at the published module of the same release. The version is stamped the way Kubernetes' own build does, so the
  server reports it (the provider trusts ServiceAccounts as ready only on servers >= 1.24).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools"


class ToolchainError(Exception):
    """A binary could not be built; the message says what failed and how to retry."""


@dataclass(frozen=True)
class Build:
    """One ``go build`` of one or more main packages from a wrapper module under ``tools/``."""

    group: str
    """Directory under ``tools/`` holding the wrapper module."""
    module: str
    """The Go module whose version (read from the wrapper's go.mod) is the binaries' version."""
    packages: dict[str, str]
    """Binary name -> main package."""
    label: str = ""
    """The version the binaries are labelled with, when the module's own version is a pseudo-version of a tag."""
    tags: str = ""
    ldflags: tuple[str, ...] = ()
    """``-X`` settings; ``{version}`` is replaced by the label (or the module version)."""
    main_dir: str = ""
    """Directory of the main package inside the module, when files must be generated beside it."""
    generated: dict[str, Callable[[Path, str], bytes]] = field(default_factory=dict)
    """File -> how to make it from the main package's directory and the version, for files the main package embeds
    that its module zip leaves out."""


def _provider_schema(src: Path, label: str) -> bytes:
    spec = json.loads((src / "schema.json").read_text())
    spec["version"] = label.removeprefix("v")
    return json.dumps(spec, separators=(",", ":")).encode()


def _provider_mapping(src: Path, _label: str) -> bytes:
    mapping = json.loads((src / "terraform-mapping.json").read_text())
    return json.dumps(mapping, separators=(",", ":")).encode()


KUBE_VERSION_LDFLAGS = tuple(
    f"-X {pkg}.{var}={value}"
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
    for var, value in (
        ("gitVersion", "{version}"),
        ("gitMajor", "{major}"),
        ("gitMinor", "{minor}"),
        ("gitTreeState", "clean"),
        ("buildDate", "1970-01-01T00:00:00Z"),
    )
)

BUILDS: tuple[Build, ...] = (
    Build(
        group="pulumi",
        module="github.com/pulumi/pulumi/pkg/v3",
        packages={"pulumi": "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"},
        tags="osusergo,grpcnotrace",
        ldflags=("-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version={version}",),
    ),
    Build(
        group="pulumi-kubernetes",
        module="github.com/pulumi/pulumi-kubernetes/provider/v4",
        packages={
            "pulumi-resource-kubernetes": (
                "github.com/pulumi/pulumi-kubernetes/provider/v4/cmd/pulumi-resource-kubernetes"
            )
        },
        # The release tag v4.25.0 is commit f47bc2d6f199, the only provider commit the module proxy serves; the
        # Python SDK in requirements.txt is pinned to the same release (tests/test_toolchain.py).
        label="v4.25.0",
        ldflags=("-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version={version}",),
        main_dir="cmd/pulumi-resource-kubernetes",
        generated={"schema-embed.json": _provider_schema, "terraform-mapping-embed.json": _provider_mapping},
    ),
    Build(
        group="etcd",
        module="go.etcd.io/etcd/server/v3",
        packages={"etcd": "go.etcd.io/etcd/server/v3"},
    ),
    Build(
        group="kubernetes",
        module="k8s.io/kubernetes",
        packages={
            name: f"k8s.io/kubernetes/cmd/{name}"
            for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
        },
        ldflags=KUBE_VERSION_LDFLAGS,
    ),
    Build(
        group="kwok",
        module="sigs.k8s.io/kwok",
        packages={name: f"sigs.k8s.io/kwok/cmd/{name}" for name in ("kwok", "kwokctl")},
        ldflags=("-X sigs.k8s.io/kwok/pkg/consts.Version={version}",),
    ),
    Build(
        group="keda",
        module="github.com/kedacore/keda/v2",
        # KEDA's Makefile builds cmd/operator as bin/keda; here it is named for what it is beside the others.
        packages={"keda-operator": "github.com/kedacore/keda/v2/cmd/operator"},
        ldflags=("-X github.com/kedacore/keda/v2/version.Version={version}",),
    ),
)


SOURCES = {"keda": "github.com/kedacore/keda/v2", "kwok": "sigs.k8s.io/kwok"}
"""Modules read for files (KEDA's CRDs, kwok's default Stages): wrapper group -> module (its version is in
``tools/<group>/go.mod``)."""


def module_source(group: str) -> Path:
    """The unpacked source of ``SOURCES[group]`` at its pinned version (downloaded and verified by go.sum)."""
    build = Build(group=group, module=SOURCES[group], packages={})
    return _module_dir(build)


def cache_dir() -> Path:
    return Path(os.environ.get("SUPERSONIC_CACHE") or Path.home() / ".cache" / "supersonic-interlink")


def go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("GOTOOLCHAIN", "local")  # CI may name an exact toolchain the go command fetches
    env.update(CGO_ENABLED="0", GOFLAGS="-mod=readonly")
    return env


def module_version(build: Build) -> str:
    """The version of ``build.module`` that the wrapper's go.mod pins (one place: the go.mod itself)."""
    for line in (TOOLS / build.group / "go.mod").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in (build.module, "require") and build.module in parts:
            return parts[parts.index(build.module) + 1]
    raise ToolchainError(f"tools/{build.group}/go.mod does not require {build.module}")


def version(build: Build) -> str:
    return build.label or module_version(build)


def build_for(name: str) -> Build:
    for build in BUILDS:
        if name in build.packages:
            return build
    names = ", ".join(n for b in BUILDS for n in b.packages)
    raise ToolchainError(f"unknown binary {name!r}; known: {names}")


def path(name: str) -> Path:
    build = build_for(name)
    return cache_dir() / "bin" / f"{name}-{version(build)}" / name


def _module_dir(build: Build) -> Path:
    out = subprocess.run(
        ["go", "list", "-m", "-f", "{{.Dir}}", build.module],
        cwd=TOOLS / build.group,
        env=go_env(),
        capture_output=True,
        text=True,
    )
    if out.returncode != 0 or not out.stdout.strip():
        # The module is not in the module cache yet: download it (this is the only step that needs the proxy).
        spec = f"{build.module}@{module_version(build)}"
        dl = _go(["mod", "download", "-json", spec], TOOLS / build.group, f"go mod download {spec}")
        return Path(json.loads(dl.stdout)["Dir"])
    return Path(out.stdout.strip())


def _ldflags(build: Build) -> str:
    v = version(build)
    major, minor = [*v.removeprefix("v").split("."), "", ""][:2]
    flags = ["-s", "-w", *(f.format(version=v, major=major, minor=minor) for f in build.ldflags)]
    return " ".join(flags)


def ensure(names: list[str] | None = None, *, log: Callable[[str], None] = print) -> dict[str, Path]:
    """Build every binary in ``names`` (default: all) that is not in the cache; return name -> path. A build says
    each step with its elapsed time, and a wait on another build's lock says whose it is."""
    wanted = names or [n for b in BUILDS for n in b.packages]
    builds = {name: build_for(name) for name in wanted}  # an unknown name is an error, not nothing built
    if any(not path(n).is_file() for n in wanted) and shutil.which("go") is None:
        raise ToolchainError(
            "the go command is not on PATH: building the Pulumi CLI, the provider and the control plane needs Go "
            "1.26.6 or later (the go.mod files under tools/ say which) and the Go module proxy"
        )
    for name, build in builds.items():
        v = version(build)
        if not path(name).is_file():
            # One builder at a time per binary group: a second `./supersonic` waits here and then finds the binary.
            with _locked(cache_dir() / "work" / f"{build.group}.lock", name, log):
                if not path(name).is_file():
                    started = time.monotonic()
                    log(f"toolchain: building {name} {v} from {build.module}@{module_version(build)} (cached after)")
                    _go_build(build, name, log)
                    log(f"toolchain: {name} {v} built in {_elapsed(started)} ({path(name)})")
                    continue
        log(f"toolchain: {name} {v} cached ({path(name)})")
    return {name: path(name) for name in wanted}


def _elapsed(started: float) -> str:
    seconds = int(time.monotonic() - started)
    return f"{seconds // 60}m{seconds % 60:02d}s"


def _go(args: list[str], cwd: Path, what: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["go", *args], cwd=cwd, env=go_env(), capture_output=True, text=True)
    if done.returncode != 0:
        raise ToolchainError(f"{what} failed (exit {done.returncode}); rerun to retry:\n{done.stderr[-4000:]}")
    return done


PROGRESS_SECONDS = 60.0
"""How often a running compile says how far it is."""


def _compile(args: list[str], cwd: Path, what: str, log: Callable[[str], None]) -> None:
    """``go build -v``: it names each package as it compiles it, which is counted into a line a minute."""
    started = last = time.monotonic()
    count, tail = 0, ""
    with subprocess.Popen(
        ["go", *args], cwd=cwd, env=go_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    ) as process:
        assert process.stderr is not None
        for line in process.stderr:
            count += 1
            tail = (tail + line)[-4000:]
            if time.monotonic() - last >= PROGRESS_SECONDS:
                last = time.monotonic()
                log(f"toolchain: {what}: {count} packages compiled so far, {_elapsed(started)}")
    if process.returncode != 0:
        raise ToolchainError(f"{what} failed (exit {process.returncode}); rerun to retry:\n{tail}")
    log(f"toolchain: {what}: {count} packages compiled in {_elapsed(started)}")


@contextmanager
def _locked(lock_file: Path, name: str, log: Callable[[str], None]) -> Iterator[None]:
    """An exclusive lock on ``lock_file``; its holder writes who it is and since when into it, so a waiter can say."""
    import fcntl

    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "a process that did not say who it is"
            log(f"toolchain: waiting for another build of {name}: {lock_file} is held by {holder}")
            fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        handle.truncate()
        since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        handle.write(f"pid {os.getpid()} on {socket.gethostname()} since {since}\n")
        handle.flush()
        try:
            yield
        finally:
            handle.truncate(0)


def _go_build(build: Build, name: str, log: Callable[[str], None]) -> None:
    v = version(build)
    work = cache_dir() / "work" / f"{build.group}-{v}"
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    _go(["mod", "download"], TOOLS / build.group, f"go mod download in tools/{build.group}")
    log(f"toolchain: {name}: modules downloaded (go mod download) in {_elapsed(started)}")
    args = ["build", "-v", "-trimpath", "-ldflags", _ldflags(build)]
    if build.tags:
        args += ["-tags", build.tags]
    cwd = TOOLS / build.group
    package = build.packages[name]
    if build.generated:
        # Go refuses overlays of files in the module cache, so the (tiny) main package is copied into the cache
        # beside its generated files, in a module with the wrapper's go.mod and go.sum, and built from there.
        cwd = work / "main"
        cwd.mkdir(exist_ok=True)
        for module_file in ("go.mod", "go.sum"):
            (cwd / module_file).write_bytes((TOOLS / build.group / module_file).read_bytes())
        src = _module_dir(build)
        main_dir = src / build.main_dir
        for go_file in main_dir.glob("*.go"):
            if "//go:build ignore" not in go_file.read_text():
                (cwd / go_file.name).write_bytes(go_file.read_bytes())
        for filename, generator in build.generated.items():
            (cwd / filename).write_bytes(generator(main_dir, v))
        package = "."
    # Built into a scratch path and moved into place, so an interrupted build never leaves a half binary where the
    # cache lookup would trust it. One package per invocation (Go's build cache shares the rest).
    scratch = work / f"{name}.{os.getpid()}.partial"
    _compile([*args, "-o", str(scratch), package], cwd, f"go build of {name}", log)
    path(name).parent.mkdir(parents=True, exist_ok=True)
    os.replace(scratch, path(name))
