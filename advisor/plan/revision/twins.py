"""Which run at the base revision is the twin of which run now (`check --base`).

Matching by name alone let a pull request drop GA101 by renaming or moving the launch script, or by
adding a line above one command of a script that holds several (the run is named `launch.sh:5`). A run
is therefore matched, in this order, by:

1. its own text (the launch command, or the whole file for a run of one command) being the same: the
   file was renamed or moved, or its command moved to another line;
2. its name, unless it is one command of several (`launch.sh:5`): a line added above moves every
   command's name onto another command's old one;
3. similar text (difflib's ratio over the words >= 0.5, git's default rename threshold: words, not
   characters, so two short scripts that share only `#!/bin/bash` and flag spellings are not alike) or
   the same config files (the same path, or the same content under another path): the file was renamed
   and edited.

A base run already matched by name may still be the twin of a new run (a copy: `cp launch.sh
launch_8gpu.sh` and an edit), but a base run nobody else matched is preferred. A run with no twin gets
`baseline.missing`, which GA108 reports: never silence.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.core.records import record

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

SIMILAR = 0.5
_WORD_LIMIT = 2000  # words of each text compared: bounded work for a large or hostile file
_PAIR_LIMIT = 400  # similarity ratios computed in one check; beyond, only exact matches


@record(frozen=True, slots=True)
class RunText:
    """What a run is made of, for matching: its name, its own text and its config files."""

    name: str
    root: str  # the launch script or config the run starts from, relative to its project root
    text: str
    several: bool  # one command of a script that holds several: its name carries a line number
    configs: frozenset[tuple[str, str]]  # (path relative to the project root, text) of its config files


@record(frozen=True, slots=True)
class Twin:
    base: str  # the base run's name
    how: str  # "same name", "renamed", "similar" or "same config"


def run_text(plan: RunPlan, root: Path) -> RunText:
    spec = plan.spec
    configs = frozenset(
        (_relative(doc.path, root), doc.text or "")
        for doc in (spec.training, spec.accelerate, spec.deepspeed, None if spec.command else spec.root)
        if doc is not None
    )
    commands = getattr(spec.root.data, "commands", None) or []
    several = spec.command is not None and len(commands) > 1
    return RunText(plan.name, _relative(spec.root.path, root), _own_text(spec), several, configs)


def _relative(path: Path, root: Path) -> str:
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return Path(path).as_posix()


def _own_text(spec: Any) -> str:
    """The command's lines (with its backslash continuations) for a script of several commands, else
    the whole file."""
    text = spec.root.text or ""
    command = spec.command
    commands = getattr(spec.root.data, "commands", None) or []
    if command is None or len(commands) < 2:
        return text
    lines = text.splitlines()
    out = []
    for line in lines[max(command.span.line - 1, 0) :]:
        out.append(line)
        if not line.rstrip().endswith("\\"):
            break
    return "\n".join(out)


def pair_runs(current: list[RunText], base: list[RunText]) -> dict[str, Twin]:
    """Each current run's twin at the base: by its own text, its name, then similar content; runs
    without one are left out."""
    twins: dict[str, Twin] = {}
    by_text: dict[str, RunText] = {}
    for b in base:
        by_text.setdefault(b.text, b)
    for c in current:
        same = by_text.get(c.text) if c.text else None
        if same is not None:
            twins[c.name] = Twin(same.name, "same name" if same.name == c.name else "renamed")
    by_name = {b.name: b for b in base if not b.several}
    for c in current:
        if c.name not in twins and not c.several and c.name in by_name:
            twins[c.name] = Twin(c.name, "same name")
    taken = {t.base for t in twins.values()}
    budget = [_PAIR_LIMIT]
    for c in current:
        if c.name in twins:
            continue
        best: tuple[float, int, str, str] | None = None
        for b in base:
            scored = _score(c, b, budget)
            if scored is None:
                continue
            score, how = scored
            key = (score + (0.2 if b.root == c.root else 0.0), int(b.name not in taken), how, b.name)
            if best is None or key[:2] > best[:2]:
                best = key
        if best is not None:
            twins[c.name] = Twin(best[3], best[2])
            taken.add(best[3])
    return twins


def _score(c: RunText, b: RunText, budget: list[int]) -> tuple[float, str] | None:
    shared = _shared_configs(c, b)
    ratio = _similarity(c.text, b.text, budget)
    if ratio >= SIMILAR:
        return 1.0 + ratio + shared / 10, "similar"
    if shared and shared == len(c.configs):
        return 1.0, "same config"
    return None


def _shared_configs(c: RunText, b: RunText) -> int:
    """How many of c's config files b has too: the same path, or the same content elsewhere."""
    paths = {p for p, _ in b.configs}
    texts = {t for _, t in b.configs if t}
    return sum(1 for p, t in c.configs if p in paths or (t and t in texts))


def _similarity(a: str, b: str, budget: list[int]) -> float:
    if not a or not b or budget[0] <= 0:
        return 0.0
    from difflib import SequenceMatcher  # only with --base: kept off a plain check's start

    matcher = SequenceMatcher(None, a.split()[:_WORD_LIMIT], b.split()[:_WORD_LIMIT], autojunk=False)
    if matcher.real_quick_ratio() < SIMILAR or matcher.quick_ratio() < SIMILAR:
        return 0.0
    budget[0] -= 1
    return matcher.ratio()
