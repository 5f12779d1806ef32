"""`#SBATCH` lines, read the way sbatch reads them: only before the first command."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from advisor.sources.shell.model import LaunchScript, Word

if TYPE_CHECKING:
    from advisor.sources.shell.protocol import ShellReader

_SBATCH_SHORT = {
    "N": "nodes",
    "n": "ntasks",
    "c": "cpus_per_task",
    "G": "gpus",
    "t": "time",
    "p": "partition",
    "J": "job_name",
    "o": "output",
    "e": "error",
    "D": "chdir",
    "A": "account",
    "w": "nodelist",
    "x": "exclude",
    "C": "constraint",
    "q": "qos",
    "a": "array",
    "d": "dependency",
    "i": "input",
    "m": "distribution",
    "L": "licenses",
    "M": "clusters",
    "s": "oversubscribe",
    "k": "no_kill",
    "H": "hold",
    "O": "overcommit",
    "Q": "quiet",
    "v": "verbose",
    "W": "wait",
    "F": "nodefile",
    "S": "core_spec",
    "B": "extra_node_info",
    "b": "begin",
}
_SBATCH_BOOLS = {
    "exclusive",
    "requeue",
    "no_requeue",
    "hold",
    "overcommit",
    "oversubscribe",
    "contiguous",
    "no_kill",
    "wait",
    "test_only",
    "parsable",
    "quiet",
    "verbose",
    "spread_job",
    "use_min_nodes",
    "ignore_pbs",
    "get_user_env",
    "help",
    "usage",
    "reboot",
    "exact",
    "overlap",
}


def _sbatch_tokens(line: str, base: int) -> list[tuple[str, str, int]]:
    """(text, raw, column offset) of each option word; stops at a # comment."""
    out = []
    i, n = 0, len(line)
    while i < n:
        while i < n and line[i] in " \t":
            i += 1
        if i >= n or line[i] == "#":
            break
        start = i
        text = []
        while i < n and line[i] not in " \t":
            c = line[i]
            if c in "'\"":
                j = line.find(c, i + 1)
                if j < 0:
                    j = n
                text.append(line[i + 1 : j])
                i = j + 1
                continue
            text.append(c)
            i += 1
        out.append(("".join(text), line[start:i], base + start))
    return out


def read_sbatch(shell: ShellReader, text: str, script: LaunchScript) -> None:
    pos = 0
    for line in text.split("\n"):
        line_start = pos
        pos += len(line) + 1
        s = line.strip()
        if not s:
            continue
        if not s.startswith("#"):
            break  # sbatch reads no #SBATCH directive after the first command
        m = re.match(r"\s*#SBATCH\s", line)
        if not m:
            continue
        toks = _sbatch_tokens(line[m.end() :], line_start + m.end())
        k = 0
        while k < len(toks):
            t, raw, off = toks[k]
            k += 1
            if not t.startswith("-") or t == "-":
                continue
            value: tuple[str, str, int] | None = None
            if t.startswith("--"):
                if "=" in t:
                    name, v = t[2:].split("=", 1)
                    e = raw.find("=") + 1
                    value = (v, raw[e:], off + e)
                else:
                    name = t[2:]
            else:
                letter = t[1:2]
                name = _SBATCH_SHORT.get(letter, letter)
                if len(t) > 2:
                    value = (t[2:].lstrip("="), raw[2:].lstrip("="), off + 2 + (1 if raw[2:3] == "=" else 0))
            key = name.replace("-", "_")
            takes_next = k < len(toks) and not toks[k][0].startswith("-")
            if value is None and key not in _SBATCH_BOOLS and takes_next:
                value = toks[k]
                k += 1
            if value is None:
                word = Word("true", raw, shell.span(off))
            else:
                word = Word(value[0], value[1], shell.span(value[2]))
            script.sbatch[key] = word
            shell.key_spans[("sbatch", key)] = shell.span(off)
            shell.value_spans[("sbatch", key)] = word.span
