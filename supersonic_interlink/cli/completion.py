"""``./supersonic completion bash|zsh``: a completion script for the front door.

The words come from the verbs' own parsers (each verb's and sub-verb's ``--help``), read when the script is made,
so the script offers what the parsers accept today; stack names are read from ``stacks/`` at each completion.
Install: ``./supersonic completion bash > ~/.local/share/bash-completion/completions/supersonic`` or, for zsh,
``./supersonic completion zsh > "${fpath[1]}/_supersonic"`` (or ``source <(./supersonic completion zsh)``).
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import sys

from supersonic_interlink.cli import main as cli_main

_CHOICES = re.compile(r"\{([a-z][a-z0-9,-]*)\}")
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
_OPTION_LINE = re.compile(r"^\s{2}(?:-\w[ ,]+)?(--[a-z][a-z0-9-]*)", re.MULTILINE)


def _help(argv: list[str]) -> str:
    """What ``./supersonic <argv> --help`` prints (argparse exits after printing it)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()), contextlib.suppress(SystemExit):
        cli_main.main([*argv, "--help"])
    return out.getvalue()


def _usage_choices(verb: str, text: str) -> list[str]:
    """The sub-verbs of a verb's parser: its usage's ``{a,b,c}`` group, or the literal words that open one of its
    usage forms (``./supersonic probe report FILE``, ``./supersonic toolchain build [NAME ...] | path NAME``)."""
    usage = text.split("\n\n", 1)[0]
    found = _CHOICES.search(usage)
    if found:
        return found.group(1).split(",")
    subs: list[str] = []
    for line in usage.removeprefix("usage:").splitlines():
        words = line.split()
        if words[:2] != ["./supersonic", verb]:
            continue
        for form in " ".join(words[2:]).split("|"):
            first = form.split()[:1]
            if first and re.fullmatch(r"[a-z]+", first[0]) and first[0] not in subs:
                subs.append(first[0])
    return subs


def _flags(text: str) -> list[str]:
    """The options a parser takes: those its usage line shows and those its options list starts a line with
    (argparse's layout), not a flag a description mentions in passing."""
    usage = text.split("\n\n", 1)[0]
    taken = set(_FLAG.findall(usage)) | set(_OPTION_LINE.findall(text))
    return [*sorted(taken - {"--help"}), "--help"]


def words() -> dict[str, dict[str, list[str]]]:
    """verb -> {"": its sub-verbs and flags, sub-verb: that sub-verb's flags}."""
    table: dict[str, dict[str, list[str]]] = {}
    for verb in cli_main.VERBS:
        if verb == "completion":
            table[verb] = {"": ["bash", "zsh"]}
            continue
        text = _help([verb])
        subs = _usage_choices(verb, text)
        table[verb] = {"": subs + _flags(text)}
        for sub in subs:
            table[verb][sub] = _flags(_help([verb, sub]))
    for verb in cli_main.FRONT_DOOR_ONLY:
        table[verb] = {"": []}
    return table


def _case(cases: dict[str, str], variable: str, indent: str) -> list[str]:
    lines = [f'{indent}case "${variable}" in']
    for key, value in cases.items():
        lines.append(f"{indent}  {shlex.quote(key) if key else '*'}) words={shlex.quote(value)} ;;")
    lines.append(f"{indent}esac")
    return lines


def bash_script() -> str:
    table = words()
    body = [
        "# bash completion for ./supersonic (made by: ./supersonic completion bash)",
        "_supersonic() {",
        '  local cur="${COMP_WORDS[COMP_CWORD]}" verb="${COMP_WORDS[1]}" sub="" w="" words="" stacks=""',
        '  if [ "$COMP_CWORD" -eq 1 ]; then',
        f"    words={shlex.quote(' '.join(table))}",
        "  else",
        '    case "$verb" in',
    ]
    for verb, entries in table.items():
        subs = [key for key in entries if key]
        body.append(f"      {verb})")
        if subs:
            # The sub-verb is whichever earlier word names one (takeover and pulumi put it before the stack).
            body.append('        for w in "${COMP_WORDS[@]:2:COMP_CWORD-2}"; do case "$w" in')
            body.append(f"          {'|'.join(subs)}) sub=$w ;; esac; done")
            cases = {sub: " ".join(entries[sub]) for sub in subs}
            body += _case({**cases, "": " ".join(entries[""])}, "sub", "        ")
        else:
            body.append(f"        words={shlex.quote(' '.join(entries['']))}")
        body.append("        ;;")
    body += [
        "    esac",
        '    case "$cur" in',
        "      -*) ;;",
        "      *) for f in stacks/Pulumi.*.yaml; do",
        '           [ -e "$f" ] && f=${f#stacks/Pulumi.} && stacks="$stacks ${f%.yaml}"',
        "         done ;;",
        "    esac",
        '    words="$words$stacks"',
        "  fi",
        "  # shellcheck disable=SC2207  # the words are flags, verbs and stack names: no spaces, no globs",
        '  COMPREPLY=($(compgen -W "$words" -- "$cur"))',
        "}",
        "complete -o default -F _supersonic supersonic",
    ]
    return "\n".join(body) + "\n"


def zsh_script() -> str:
    return (
        "#compdef supersonic\n# zsh completion for ./supersonic (made by: ./supersonic completion zsh): the bash\n"
        "# completion through zsh's bashcompinit.\nautoload -U +X bashcompinit && bashcompinit\n" + bash_script()
    )


def main(argv: list[str]) -> int:
    if argv in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if len(argv) != 1 or argv[0] not in ("bash", "zsh"):
        print("usage: ./supersonic completion bash|zsh", file=sys.stderr)
        return 2
    print(bash_script() if argv[0] == "bash" else zsh_script(), end="")
    return 0
