"""The engine and control plane built from their Go modules, each pinned by a wrapper module ``tools/<group>/``,
into ``$SUPERSONIC_CACHE/bin/<name>-<version>/`` (docs/engine.md says what each build depends on)."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
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
    """``go build`` of main packages (binary name -> package) from the wrapper module ``group``; ``label``: the
    binaries' version where the module's is a pseudo-version of a tag; ``generated``: files the main package embeds
    that its module zip leaves out -> how to make them from ``main_dir``."""

    group: str
    module: str
    packages: dict[str, str]
    label: str = ""
    tags: str = ""
    ldflags: tuple[str, ...] = ()
    main_dir: str = ""
    generated: dict[str, Callable[[Path, str], bytes]] = field(default_factory=dict)


def _minified(name: str, versioned: bool = False) -> Callable[[Path, str], bytes]:
    def make(src: Path, label: str) -> bytes:
        document = json.loads((src / name).read_text()) | ({"version": label.removeprefix("v")} if versioned else {})
        return json.dumps(document, separators=(",", ":")).encode()

    return make


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
        generated={
            "schema-embed.json": _minified("schema.json", versioned=True),
            "terraform-mapping-embed.json": _minified("terraform-mapping.json"),
        },
    ),
    Build(group="etcd", module="go.etcd.io/etcd/server/v3", packages={"etcd": "go.etcd.io/etcd/server/v3"}),
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


def module_source(group: str) -> Path:
    """The unpacked source, verified by go.sum, of the module a build group pins; downloaded first if need be."""
    build = next(build for build in BUILDS if build.group == group)
    spec = f"{build.module}@{module_version(build)}"
    return Path(json.loads(_go(["mod", "download", "-json", spec], TOOLS / group, f"go mod download {spec}"))["Dir"])


def cache_dir() -> Path:
    return Path(os.environ.get("SUPERSONIC_CACHE") or Path.home() / ".cache" / "supersonic-interlink")


def go_env() -> dict[str, str]:
    return {"GOTOOLCHAIN": "local", **os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly"}


def module_version(build: Build) -> str:
    text = (TOOLS / build.group / "go.mod").read_text()
    return str(re.findall(rf"^\s*(?:require\s+)?{re.escape(build.module)} (\S+)", text, re.MULTILINE)[0])


def version(build: Build) -> str:
    return build.label or module_version(build)


def build_for(name: str) -> Build:
    if build := next((build for build in BUILDS if name in build.packages), None):
        return build
    raise ToolchainError(f"unknown binary {name!r}; known: {', '.join(n for b in BUILDS for n in b.packages)}")


def path(name: str) -> Path:
    return cache_dir() / "bin" / f"{name}-{version(build_for(name))}" / name


def _ldflags(build: Build) -> str:
    v = version(build)
    major, minor = [*v.removeprefix("v").split("."), "", ""][:2]
    return " ".join(["-s", "-w", *(f.format(version=v, major=major, minor=minor) for f in build.ldflags)])


def ensure(names: list[str] | None = None, *, log: Callable[[str], None] = print) -> dict[str, Path]:
    """Build every binary in ``names`` (default: all) that is not in the cache; return name -> path."""
    wanted = names or [n for b in BUILDS for n in b.packages]
    builds = {name: build_for(name) for name in wanted}
    if any(not path(n).is_file() for n in wanted) and shutil.which("go") is None:
        raise ToolchainError(
            "the go command is not on PATH: building the Pulumi CLI, the provider and the control plane needs Go "
            "1.26.6 or later (the go.mod files under tools/ say which) and the Go module proxy"
        )
    for name, build in builds.items():
        v = version(build)
        if not path(name).is_file():
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


def _go(args: list[str], cwd: Path, what: str) -> str:
    done = subprocess.run(["go", *args], cwd=cwd, env=go_env(), capture_output=True, text=True)
    if done.returncode != 0:
        raise ToolchainError(f"{what} failed (exit {done.returncode}); rerun to retry:\n{done.stderr[-4000:]}")
    return done.stdout


@contextmanager
def _locked(lock_file: Path, name: str, log: Callable[[str], None]) -> Iterator[None]:
    """An exclusive lock on ``lock_file``, saying so when another build holds it."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"toolchain: waiting for another build of {name} ({lock_file})")
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _go_build(build: Build, name: str, log: Callable[[str], None]) -> None:
    v = version(build)
    work = cache_dir() / "work" / f"{build.group}-{v}"
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    _go(["mod", "download"], TOOLS / build.group, f"go mod download in tools/{build.group}")
    log(f"toolchain: {name}: modules downloaded (go mod download) in {_elapsed(started)}")
    args = ["build", "-trimpath", "-ldflags", _ldflags(build), *(["-tags", build.tags] if build.tags else [])]
    cwd, package = TOOLS / build.group, build.packages[name]
    if build.generated:
        # Go refuses overlays of files in the module cache: the main package is copied beside its generated files.
        cwd, package, main_dir = work / "main", ".", module_source(build.group) / build.main_dir
        cwd.mkdir(exist_ok=True)
        for module_file in ("go.mod", "go.sum"):
            (cwd / module_file).write_bytes((TOOLS / build.group / module_file).read_bytes())
        for go_file in main_dir.glob("*.go"):
            if "//go:build ignore" not in go_file.read_text():
                (cwd / go_file.name).write_bytes(go_file.read_bytes())
        for filename, generator in build.generated.items():
            (cwd / filename).write_bytes(generator(main_dir, v))
    # Moved into place once built: an interrupted build leaves no half binary the cache lookup would trust.
    scratch = work / f"{name}.{os.getpid()}.partial"
    _go([*args, "-o", str(scratch), package], cwd, f"go build of {name}")
    path(name).parent.mkdir(parents=True, exist_ok=True)
    os.replace(scratch, path(name))
