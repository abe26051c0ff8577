"""``./supersonic diff <stack>``: the verb's work once its parser has read and checked the command line
(``cli/diff.py``): both sides rendered and compared (``report.diff_stack``), the text printed, and each way it can
fail as one line and its exit code (``cli/main.py``)."""

from __future__ import annotations

import sys
from json import dumps
from pathlib import Path

from supersonic_interlink import EXIT_FINDING, EXIT_OK, EXIT_SKIPPED, EXIT_USAGE
from supersonic_interlink.config import ConfigError
from supersonic_interlink.config.stack_config import stack_names
from supersonic_interlink.diff import report, sides


def run(
    stack: str,
    base: str | None,
    chart: Path | None,
    *,
    markdown: bool = False,
    strict: bool = False,
    json: bool = False,
) -> int:
    try:
        result = report.diff_stack(stack, base, chart)
    except ConfigError as error:
        print(f"stack {stack}: invalid config in the working tree:", file=sys.stderr)
        for problem in error.problems:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_USAGE
    except sides.BaseRefError as error:
        print(f"stack {stack}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except sides.SideError as error:
        print(f"stack {stack}: {error}", file=sys.stderr)
        return EXIT_FINDING
    if not result.base.exists and not result.head.exists:
        print(
            f"stack {stack}: no stack file stacks/Pulumi.{stack}.yaml at the base or in the working tree "
            f"(stacks: {', '.join(stack_names())})",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if json:
        print(dumps(report.as_json(result), indent=2, default=str))
    else:
        print(report.markdown(result) if markdown else report.text(result), end="")
    if strict and not result.chart_compared:
        print(f"stack {stack}: --strict: the chart's objects were not compared (exit 3)", file=sys.stderr)
        return EXIT_SKIPPED
    return EXIT_OK
