"""The engine verbs' work once their parsers have read and checked the command line: ``./supersonic pulumi``
(``cli/pulumi.py``) and ``./supersonic cluster`` (``cli/cluster.py``). Exit codes as ``cli/main.py`` states them."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

from supersonic_interlink import EXIT_FINDING, EXIT_OK, EXIT_USAGE
from supersonic_interlink.chart import binaries
from supersonic_interlink.config import ConfigError
from supersonic_interlink.engine import toolchain
from supersonic_interlink.engine.cluster import SCRATCH_PROJECT_ENV, ClusterError, LocalCluster
from supersonic_interlink.engine.run import ROOT, Engine, EngineError, Refused, Unusable, gated, scratch_project


def run_pulumi(stack: str, action: str, *, json: bool = False, cli: str | None = None, **options: Any) -> int:
    """``action`` on ``stack`` through the preview gate; ``json``: the CLI's JSON preview on stdout, the log on
    stderr; ``cli``: the Pulumi CLI named by ``--pulumi``. On the local cluster (``SCRATCH_PROJECT_ENV`` set) the
    engine runs in its throwaway project copy."""

    def printer(line: str) -> None:
        print(line, file=sys.stderr if json else sys.stdout, flush=True)

    scratch = os.environ.get(SCRATCH_PROJECT_ENV)
    try:
        work_dir = scratch_project(Path(scratch)) if scratch else ROOT
        # Only `up` creates a stack in a real backend; on the local cluster's throwaway backend anything may.
        engine = Engine(stack, work_dir=work_dir, log=printer, create=bool(scratch) or action == "up", cli=cli)
        result = gated(engine, action, **({"json": True} if json else {}), **options)
        if json:
            print(result.stdout)
    except ConfigError as error:
        print("\n".join(error.problems), file=sys.stderr)
        return EXIT_USAGE
    except Unusable as error:
        print(f"supersonic pulumi: {error}", file=sys.stderr)
        return EXIT_USAGE
    except Refused as error:
        print(f"supersonic pulumi: {error}", file=sys.stderr)
        return EXIT_USAGE if action == "destroy" else EXIT_FINDING
    except (EngineError, toolchain.ToolchainError) as error:
        print(f"supersonic pulumi: {action} of {stack} failed:\n{error}", file=sys.stderr)
        return EXIT_FINDING
    return EXIT_OK


def run_cluster(action: str, directory: Path) -> int:
    """``start``, ``stop``, ``status`` or ``env`` of the local control plane whose files are in ``directory``."""
    cluster = LocalCluster(directory)
    try:
        if action == "start":
            cluster.start(log=lambda line: print(line, file=sys.stderr, flush=True))
            print(cluster.kubeconfig)
        elif action == "stop":
            cluster.stop(log=lambda line: print(line, file=sys.stderr))
        elif action == "status":
            print("running" if cluster.running() else "stopped")
            return EXIT_OK if cluster.running() else EXIT_FINDING
        elif not cluster.running():
            print(f"cluster: not running in {directory}; start it with ./supersonic cluster start", file=sys.stderr)
            return EXIT_FINDING
        else:
            for key, value in cluster.env().items():
                print(f"export {key}={shlex.quote(value)}")
    except (ClusterError, toolchain.ToolchainError, binaries.BinaryError) as err:
        print(f"cluster: {err}", file=sys.stderr)
        return EXIT_FINDING
    return EXIT_OK
