"""A stand-in ``kubectl`` (and the API server behind it) for running the cleanup script without a cluster.

It holds a namespace's pods in a JSON state file, shaped as the API server returns them, and does what kubectl
and the API server do for the calls the script makes:

    kubectl get pods -n NS -l SELECTOR --field-selector status.phase=Failed --sort-by .metadata.creationTimestamp
        -o name | -o jsonpath=TEMPLATE
    kubectl delete -n NS --wait=false --ignore-not-found pod/a pod/b ...

Selection is real: equality-based label selectors and the pod field selectors are evaluated here against every
pod in the state, as the API server evaluates them, so a test proves the script relies on server-side selection
rather than on a fixture that holds only what should go. Deletions remove pods from the state file, so a second
run sees what the first left. Every call's argv is appended to a log (one JSON line each). Anything outside the
supported subset (an unknown flag, a set-based selector, an unsupported field label, jsonpath beyond fields,
``[*]``, ``[N]``, ``range`` and string literals) is an error with kubectl's exit status 1, never a guess.

Environment: ``KUBECTL_STANDIN_STATE`` (the state file), ``KUBECTL_STANDIN_LOG`` (the call log),
``KUBECTL_STANDIN_FAIL`` (comma-separated verbs that fail like a lost API server: ``get``, ``delete``).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

STATE_ENV = "KUBECTL_STANDIN_STATE"
LOG_ENV = "KUBECTL_STANDIN_LOG"
FAIL_ENV = "KUBECTL_STANDIN_FAIL"

DEFAULT_NAMESPACE = "default"
POD_RESOURCES = ("pods", "pod", "po")
# Field labels the API server accepts for pods (a subset; status.phase is the one the script uses).
POD_FIELDS = {
    "metadata.name": lambda p: p["metadata"]["name"],
    "metadata.namespace": lambda p: p["metadata"].get("namespace", DEFAULT_NAMESPACE),
    "spec.nodeName": lambda p: (p.get("spec") or {}).get("nodeName", ""),
    "status.phase": lambda p: (p.get("status") or {}).get("phase", ""),
}
_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


class KubectlError(Exception):
    """Ends the call with kubectl's exit status 1 and this message on stderr."""


# ----------------------------------------------------------------------------------------------- fixtures


def pod(
    name: str,
    *,
    created: str,
    phase: str,
    labels: dict[str, str],
    namespace: str = "cms",
    reason: str | None = None,
    exit_code: int | None = None,
    container_reason: str | None = None,
    node: str = "interlink-hammer",
) -> dict[str, Any]:
    """A pod as the API server returns it, with the fields the cleanup reads."""
    status: dict[str, Any] = {"phase": phase}
    if reason is not None:
        status["reason"] = reason
    if exit_code is not None or container_reason is not None:
        terminated: dict[str, Any] = {}
        if exit_code is not None:
            terminated["exitCode"] = exit_code
        if container_reason is not None:
            terminated["reason"] = container_reason
        status["containerStatuses"] = [{"name": "triton", "restartCount": 0, "state": {"terminated": terminated}}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels), "creationTimestamp": created},
        "spec": {"nodeName": node},
        "status": status,
    }


def write_state(path: Path, pods: Iterable[dict[str, Any]]) -> None:
    path.write_text(json.dumps({"pods": list(pods)}))


def read_state(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text())["pods"]


def read_calls(path: Path) -> list[list[str]]:
    """Every recorded call's argv (without the program name), in order."""
    if not path.exists():
        return []
    return [json.loads(line)["argv"] for line in path.read_text().splitlines() if line]


def install(bin_dir: Path, python: str = sys.executable) -> Path:
    """Write an executable ``kubectl`` into ``bin_dir`` that runs this module with ``python`` (absolute path)."""
    here = Path(__file__).resolve().parent
    target = bin_dir / "kubectl"
    # -S: the stand-in needs only the standard library; skipping site keeps each call's start-up short.
    target.write_text(
        f"#!{python} -S\n"
        "import sys\n"
        f"sys.path.insert(0, {str(here)!r})\n"
        "import kubectl_standin\n"
        "sys.exit(kubectl_standin.main(sys.argv[1:]))\n"
    )
    target.chmod(0o755)
    return target


# ----------------------------------------------------------------------------------------------- selectors


def parse_label_selector(text: str) -> list[tuple[str, str, str | None]]:
    """Equality-based requirements as ``(key, op, value)``; op is ``=``, ``!=``, ``exists`` or ``!exists``."""
    requirements: list[tuple[str, str, str | None]] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise KubectlError(f"unable to parse requirement: empty requirement in {text!r}")
        if " in " in part or " notin " in part or "(" in part:
            raise KubectlError(f"stand-in: set-based selector {part!r} is not supported")
        match = re.fullmatch(r"([^=!]+)(==|=|!=)(.*)", part)
        if match:
            key, op, value = match.group(1), match.group(2), match.group(3)
            op = "!=" if op == "!=" else "="
        elif part.startswith("!"):
            key, op, value = part[1:], "!exists", None
        else:
            key, op, value = part, "exists", None
        if not _LABEL_KEY.match(key):
            raise KubectlError(f"unable to parse requirement: invalid label key {key!r}")
        if value is not None and not _LABEL_VALUE.match(value):
            raise KubectlError(f"unable to parse requirement: invalid label value {value!r}")
        requirements.append((key, op, value))
    return requirements


def labels_match(labels: dict[str, str], requirements: list[tuple[str, str, str | None]]) -> bool:
    for key, op, value in requirements:
        if op == "=" and labels.get(key) != value:
            return False
        if op == "!=" and labels.get(key) == value:
            return False
        if op == "exists" and key not in labels:
            return False
        if op == "!exists" and key in labels:
            return False
    return True


def parse_field_selector(text: str) -> list[tuple[str, str, str]]:
    requirements: list[tuple[str, str, str]] = []
    for part in text.split(","):
        match = re.fullmatch(r"([^=!]+)(==|=|!=)(.*)", part.strip())
        if not match:
            raise KubectlError(f"invalid field selector: {part!r}")
        field, op, value = match.group(1), match.group(2), match.group(3)
        if field not in POD_FIELDS:
            raise KubectlError(f"Error from server (BadRequest): field label not supported: {field}")
        requirements.append((field, "!=" if op == "!=" else "=", value))
    return requirements


def fields_match(pod_object: dict[str, Any], requirements: list[tuple[str, str, str]]) -> bool:
    for field, op, value in requirements:
        actual = POD_FIELDS[field](pod_object)
        if (actual == value) != (op == "="):
            return False
    return True


# ----------------------------------------------------------------------------------------------- jsonpath


def _path_steps(path: str) -> list[str]:
    """``.a.b[*].c`` -> ``["a", "b", "[*]", "c"]``; anything else is an error."""
    text = path.strip()
    if text.startswith(("@", "$")):
        text = text[1:]
    if not text.startswith(".") and not text.startswith("["):
        raise KubectlError(f"error parsing jsonpath: unrecognized expression {path!r}")
    steps = re.findall(r"\.([A-Za-z_][A-Za-z0-9_-]*)|(\[\*\]|\[-?\d+\])", text)
    rebuilt = "".join(f".{name}" if name else index for name, index in steps)
    if rebuilt != text:
        raise KubectlError(f"stand-in: jsonpath {path!r} is outside the supported subset")
    return [name or index for name, index in steps]


def evaluate_path(value: Any, path: str) -> list[Any]:
    """Every value ``path`` reaches from ``value``; missing keys give nothing (kubectl allows missing keys)."""
    current = [value]
    for step in _path_steps(path):
        following: list[Any] = []
        for item in current:
            if step == "[*]":
                if isinstance(item, list):
                    following.extend(item)
            elif step.startswith("["):
                index = int(step[1:-1])
                if isinstance(item, list):
                    if not -len(item) <= index < len(item):
                        raise KubectlError(
                            f"error executing jsonpath: array index out of bounds: index {index}, length {len(item)}"
                        )
                    following.append(item[index])
            elif isinstance(item, dict) and step in item:
                following.append(item[step])
        current = following
    return current


def _unquote(literal: str) -> str:
    return json.loads(literal)  # "\t", "\n", "\"" and "\\" as in Go's strconv.Unquote for these templates


def _template_tokens(template: str) -> list[tuple[str, str]]:
    """``("text", s)`` and ``("expr", s)`` tokens of a kubectl jsonpath template."""
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(template):
        start = template.find("{", position)
        if start < 0:
            tokens.append(("text", template[position:]))
            break
        if start > position:
            tokens.append(("text", template[position:start]))
        end = start + 1
        in_string = False
        while end < len(template) and (in_string or template[end] != "}"):
            if template[end] == '"' and template[end - 1] != "\\":
                in_string = not in_string
            end += 1
        if end >= len(template):
            raise KubectlError(f"error parsing jsonpath {template!r}: unclosed action")
        tokens.append(("expr", template[start + 1 : end].strip()))
        position = end + 1
    return tokens


def _render(tokens: list[tuple[str, str]], context: Any) -> tuple[str, int]:
    out: list[str] = []
    index = 0
    while index < len(tokens):
        kind, text = tokens[index]
        if kind == "text":
            out.append(text)
        elif text == "end":
            return "".join(out), index
        elif text.startswith("range "):
            body = tokens[index + 1 :]
            consumed = 0
            for item in evaluate_path(context, text[len("range ") :]):
                rendered, consumed = _render(body, item)
                out.append(rendered)
            if consumed == 0:
                _, consumed = _render(body, {})
            index += consumed + 1
        elif text.startswith('"'):
            out.append(_unquote(text))
        else:
            out.append(" ".join(_show(v) for v in evaluate_path(context, text)))
        index += 1
    return "".join(out), index


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def render_jsonpath(template: str, document: Any) -> str:
    rendered, _ = _render(_template_tokens(template), document)
    return rendered


# ----------------------------------------------------------------------------------------------- commands


def _sort_key(value: list[Any]) -> tuple[int, Any]:
    if not value:
        return (0, "")
    first = value[0]
    if isinstance(first, (int, float)) and not isinstance(first, bool):
        return (1, first)
    if isinstance(first, str) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", first):
        return (2, datetime.fromisoformat(first.replace("Z", "+00:00")))
    return (3, str(first))


class _Args:
    def __init__(self, argv: list[str], value_flags: dict[str, str], bool_flags: dict[str, str]):
        self.values: dict[str, str] = {}
        self.positional: list[str] = []
        index = 0
        while index < len(argv):
            arg = argv[index]
            if arg.startswith("-") and arg != "-":
                name, has_value, inline = arg.partition("=")
                if name in value_flags:
                    if has_value:
                        value = inline
                    else:
                        index += 1
                        if index >= len(argv):
                            raise KubectlError(f"error: flag needs an argument: {name}")
                        value = argv[index]
                    self.values[value_flags[name]] = value
                elif name in bool_flags:
                    if has_value and inline not in ("true", "false"):
                        raise KubectlError(f"error: invalid argument {inline!r} for {name}")
                    self.values[bool_flags[name]] = inline if has_value else "true"
                else:
                    raise KubectlError(f"error: unknown flag: {name}")
            else:
                self.positional.append(arg)
            index += 1


_NAMESPACE_FLAGS = {"-n": "namespace", "--namespace": "namespace"}


def _get(argv: list[str], pods: list[dict[str, Any]], out: list[str], err: list[str]) -> None:
    args = _Args(
        argv,
        {
            **_NAMESPACE_FLAGS,
            "-l": "selector",
            "--selector": "selector",
            "--field-selector": "field_selector",
            "--sort-by": "sort_by",
            "-o": "output",
            "--output": "output",
        },
        {},
    )
    if not args.positional or args.positional[0] not in POD_RESOURCES or len(args.positional) > 1:
        raise KubectlError(f"stand-in: only `get pods` is supported, got {args.positional}")
    namespace = args.values.get("namespace", DEFAULT_NAMESPACE)
    labels = parse_label_selector(args.values["selector"]) if "selector" in args.values else []
    fields = parse_field_selector(args.values["field_selector"]) if "field_selector" in args.values else []
    # The API server lists in key order (namespace/name), then filters.
    found = [
        p
        for p in sorted(pods, key=lambda p: p["metadata"]["name"])
        if p["metadata"].get("namespace", DEFAULT_NAMESPACE) == namespace
        and labels_match(p["metadata"].get("labels") or {}, labels)
        and fields_match(p, fields)
    ]
    if "sort_by" in args.values:
        sort_path = args.values["sort_by"].strip()
        if sort_path.startswith("{") and sort_path.endswith("}"):
            sort_path = sort_path[1:-1]
        found.sort(key=lambda p: _sort_key(evaluate_path(p, sort_path)))
    output = args.values.get("output")
    if output == "name":
        out.extend(f"pod/{p['metadata']['name']}\n" for p in found)
    elif output is not None and output.startswith("jsonpath="):
        out.append(render_jsonpath(output[len("jsonpath=") :], {"apiVersion": "v1", "kind": "List", "items": found}))
    else:
        raise KubectlError(f"stand-in: output {output!r} is not supported (use -o name or -o jsonpath=...)")
    if not found and output == "name":
        err.append(f"No resources found in {namespace} namespace.\n")


def _delete(argv: list[str], pods: list[dict[str, Any]], out: list[str], err: list[str]) -> list[dict[str, Any]]:
    args = _Args(argv, {**_NAMESPACE_FLAGS}, {"--wait": "wait", "--ignore-not-found": "ignore_not_found"})
    namespace = args.values.get("namespace", DEFAULT_NAMESPACE)
    names: list[str] = []
    positional = args.positional
    if positional and positional[0] in POD_RESOURCES:
        names = positional[1:]
    else:
        for item in positional:
            kind, slash, name = item.partition("/")
            if not slash or kind not in POD_RESOURCES or not name:
                raise KubectlError(f"stand-in: expected pod/<name>, got {item!r}")
            names.append(name)
    if not names:
        raise KubectlError("error: resource(s) were provided, but no name was specified")
    ignore = args.values.get("ignore_not_found") == "true"
    remaining = list(pods)
    failed = False
    for name in names:
        match = [
            p
            for p in remaining
            if p["metadata"]["name"] == name and p["metadata"].get("namespace", DEFAULT_NAMESPACE) == namespace
        ]
        if not match:
            if not ignore:
                err.append(f'Error from server (NotFound): pods "{name}" not found\n')
                failed = True
            continue
        remaining = [p for p in remaining if p is not match[0]]
        out.append(f'pod "{name}" deleted\n')
    if failed:
        raise _PartialFailure(remaining)
    return remaining


class _PartialFailure(Exception):
    """Some deletions failed (kubectl goes on with the others and exits 1)."""

    def __init__(self, remaining: list[dict[str, Any]]):
        self.remaining = remaining


def main(argv: list[str]) -> int:
    log = os.environ.get(LOG_ENV)
    if log:
        with open(log, "a") as handle:
            handle.write(json.dumps({"argv": argv}) + "\n")
    state = Path(os.environ[STATE_ENV])
    failing = {verb for verb in os.environ.get(FAIL_ENV, "").split(",") if verb}
    out: list[str] = []
    err: list[str] = []
    try:
        if not argv:
            raise KubectlError("stand-in: no command")
        verb, rest = argv[0], argv[1:]
        pods = read_state(state)
        if verb == "get":
            _get(rest, pods, out, err)
            if "get" in failing:
                # A connection lost mid-list: part of the output has been written when the error comes.
                out[:] = "".join(out).splitlines(keepends=True)[:1]
                raise KubectlError("The connection to the server was refused - did you specify the right host or port?")
        elif verb == "delete":
            if "delete" in failing:
                raise KubectlError("The connection to the server was refused - did you specify the right host or port?")
            try:
                remaining = _delete(rest, pods, out, err)
            except _PartialFailure as partial:
                write_state(state, partial.remaining)
                raise KubectlError("".join(err).rstrip() or "delete failed") from None
            write_state(state, remaining)
        else:
            raise KubectlError(f"stand-in: unsupported command {verb!r}")
    except KubectlError as error:
        sys.stdout.write("".join(out))
        sys.stderr.write(f"{error}\n")
        return 1
    sys.stdout.write("".join(out))
    sys.stderr.write("".join(err))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
