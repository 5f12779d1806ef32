"""`gpu-advise plan`: every value of every run, with where it came from."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.core.document import Location
from advisor.core.escape import escape_text, escape_value, strict_json
from advisor.core.paths import relative
from advisor.core.provenance import Namespace, Value

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

_SHOWN = ("launch", "env", "accelerate", "training", "deepspeed", "model", "batch", "run", "data", "hardware")
# namespaces read from the user's files: their rows show the key as written there (`max_length`, not
# training.max_seq_length); the others are derived facts and keep their fact names
_WRITTEN = ("launch", "env", "accelerate", "training", "deepspeed")


def _pointer_path(key: str) -> tuple[str, ...]:
    """A Location.key JSON pointer (/fsdp_config/fsdp_version) as a key path."""
    return tuple(part.replace("~1", "/").replace("~0", "~") for part in key.strip("/").split("/") if part)


def _line(file: Path, line: int, docs: dict[str, Any]) -> str | None:
    doc = docs.get(str(file))
    text = getattr(doc, "text", None)
    if not text:
        return None
    lines = text.splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else None


def written_key(loc: Location | None, docs: dict[str, Any]) -> str | None:
    """The key as the user wrote it at loc: the config key path, or the launch flag / variable in
    front of the value on its line (`--num_processes 2`, `--num_processes=2`, `CUDA_VISIBLE_DEVICES=1`)."""
    if loc is None:
        return None
    if loc.key:
        return ".".join(_pointer_path(loc.key)) or None
    line = _line(loc.file, loc.line, docs)
    if line is None:
        return None
    at = line[max(loc.col - 1, 0) :].split()
    if at and re.match(r"--?[A-Za-z]", at[0]) and "=" not in at[0]:
        return at[0]  # a switch written alone (`--bf16`, `#SBATCH --exclusive`): the value is the flag itself
    before = line[: max(loc.col - 1, 0)].rstrip()
    token = before.split()[-1] if before.split() else ""
    if "=" in token and not token.startswith("-"):
        token = token.split("=", 1)[0].removeprefix("export")
    token = token.rstrip("=").strip("\"'")
    return token or None


def _losing(loc: Location, docs: dict[str, Any]) -> tuple[str, str]:
    """(the losing value as written, where) for a related location of a conflict."""
    where = f"{relative(loc.file)}:{loc.line}:{loc.col}"
    doc = docs.get(str(loc.file))
    if loc.key and doc is not None:
        try:
            return repr(doc.get(_pointer_path(loc.key))), where
        except Exception:  # a shape the path does not reach: show the place only
            pass
    return "?", where


def _empty(v: Value) -> bool:
    return v.unknown is None and (v.value is None or (isinstance(v.value, (list, dict, str)) and not v.value))


def _where(v: Value) -> str:
    where = f"{relative(v.origin.file)}:{v.origin.line}:{v.origin.col}" if v.origin is not None else v.source
    extra = [f"overrides {relative(r.file)}:{r.line}" for r in v.related] if v.source != "derived" else []
    if v.note:
        extra.append(v.note)
    return escape_text(where + (f" ({'; '.join(extra)})" if extra else ""))


def _non_finite_note(value: Any) -> str | None:
    """Strict JSON has no NaN or Infinity: such a value is printed as null, and the note says so."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"the value is {value!r} (printed as null: JSON has no NaN or Infinity)"
    return None


def _json_value(v: Value, written: str | None = None) -> dict[str, Any]:
    notes = [n for n in (v.note, _non_finite_note(v.value)) if n]
    return escape_value(
        {
            "value": v.value,
            "written": written,
            "unknown": v.unknown,
            "source": v.source,
            "file": relative(v.origin.file) if v.origin else None,
            "line": v.origin.line if v.origin else None,
            "column": v.origin.col if v.origin else None,
            "related": [f"{relative(r.file)}:{r.line}:{r.col}" for r in v.related],
            "note": "; ".join(notes) or None,
        }
    )


def _rows(names: dict[str, Any]) -> list[tuple[str, Value]]:
    rows = []
    for ns_name in _SHOWN:
        ns = names.get(ns_name)
        if not isinstance(ns, Namespace):
            continue
        for key, value in ns.flat(f"{ns_name}."):
            if key.endswith("__raw") or (
                value.source == "default" and ns_name == "training" and value.value is None
            ):
                continue
            rows.append((key, value))
    return rows


def _text_rows(cells: list[tuple[str, str, str, str | None]]) -> list[str]:
    width = max((len(k) for k, _, _, style in cells if style != "section"), default=10)
    return [
        f"  {key}" if style == "section" else f"    {key:<{width}}  {value:<24}  {where}".rstrip()
        for key, value, where, style in cells
    ]


def _rich_rows(cells: list[tuple[str, str, str, str | None]]) -> list[str]:
    """The rows as a rich table, wrapped to the terminal's width (on a terminal only: rich's import
    is paid by `plan` there, never by `check`)."""
    import io
    import shutil

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    styles = {"section": "bold", "wins": "green", "loses": "red", None: ""}
    table = Table(box=None, show_header=False, pad_edge=False, show_edge=False)
    for _ in range(3):
        table.add_column(overflow="fold")
    for key, value, where, style in cells:
        table.add_row(
            Text(key, style=styles[style]), Text(value), Text(where, style="dim" if style is None else "")
        )
    buffer = io.StringIO()
    width = shutil.get_terminal_size((120, 24)).columns
    Console(file=buffer, force_terminal=True, width=width, color_system="standard").print(table)
    return ["  " + line.rstrip() for line in buffer.getvalue().splitlines()]


def _documents(plan: RunPlan) -> dict[str, Any]:
    docs = [*plan.spec.documents, getattr(plan.spec, "root", None)]
    return {str(d.path): d for d in docs if d is not None}


def _shown_key(key: str, v: Value, docs: dict[str, Any]) -> str:
    if key.split(".", 1)[0] not in _WRITTEN or v.source in ("default", "derived"):
        return key
    return written_key(v.origin, docs) or key


def _source(plan: RunPlan) -> str:
    """What the run starts from: "script" (a launch script), "readme" (a README code block), "config"."""
    if plan.spec.command is None:
        return "config"
    return "readme" if getattr(plan.spec.root.data, "documented", False) else "script"


def render_plans(
    runs: list[tuple[RunPlan, dict[str, Any]]],
    *,
    as_json: bool = False,
    show_all: bool = False,
    color: bool = False,
) -> str:
    """Each plan with its fact namespaces (advisor.facts.run_names, computed by the caller)."""
    if as_json:
        out = []
        for plan, names in runs:
            docs = _documents(plan)
            values = {}
            for key, v in _rows(names):
                shown = _shown_key(key, v, docs)
                values[escape_text(key)] = _json_value(v, escape_text(shown) if shown != key else None)
            out.append(
                {
                    "name": escape_text(plan.name),
                    "source": _source(plan),
                    "files": [escape_text(relative(d.path)) for d in plan.spec.documents],
                    "values": values,
                }
            )
        return strict_json(out) + "\n"
    lines: list[str] = []
    for plan, names in runs:
        lines.append(f"run {escape_text(plan.name)}")
        if _source(plan) == "readme":
            where = f"{relative(plan.spec.root.path)}:{plan.spec.command.span.line}"
            lines.append(escape_text(f"  source: {where}, a command in a README code block (documentation)"))
        lines.append("  files: " + ", ".join(escape_text(relative(d.path)) for d in plan.spec.documents))
        for ref in plan.spec.references:
            if ref.path is None:
                named = f"(named at {relative(ref.named_at.file)}:{ref.named_at.line})"
                unknown = getattr(ref, "unknown", None)  # opened from a folder not known to be the project
                text = (
                    f"  unknown: {ref.raw} {named}, because {unknown}"
                    if unknown
                    else f"  not read {named}: {ref.outside}"
                    if ref.outside
                    else f"  missing: {ref.raw} {named}"
                )
                lines.append(escape_text(text))
        docs = _documents(plan)
        rows = [(key, v) for key, v in _rows(names) if show_all or not _empty(v)]
        hidden = len(_rows(names)) - len(rows)
        keys = [_shown_key(key, v, docs) for key, v in rows]
        cells: list[tuple[str, str, str, str | None]] = []  # key, value, where, style
        section = None
        for (key, v), shown_key in zip(rows, keys, strict=True):
            namespace = key.split(".", 1)[0]
            if namespace != section:
                section = namespace
                cells.append((f"[{namespace}]", "", "", "section"))
            shown = escape_text(f"? ({v.unknown})" if v.unknown else repr(v.value))
            if len(shown) > 60:
                shown = shown[:57] + "..."
            conflict = namespace in _WRITTEN and v.source != "derived" and any(r.key for r in v.related)
            # the fact name, where the key was written under another name (max_length, --num_processes)
            plain = shown_key.lstrip("-").replace("-", "_")
            alias = f"  = {key}" if plain not in (key.split(".", 1)[-1], key) else ""
            where = _where(v)
            if conflict and v.origin is not None:
                where = escape_text(f"{relative(v.origin.file)}:{v.origin.line}:{v.origin.col}") + "  <- wins"
            cells.append(
                (escape_text(shown_key), shown, where + escape_text(alias), "wins" if conflict else None)
            )
            if conflict:
                for r in v.related:
                    if r.key:
                        value, at = _losing(r, docs)
                        cells.append(("", escape_text(value), escape_text(f"{at}  <- loses"), "loses"))
        lines.extend(_rich_rows(cells) if color else _text_rows(cells))
        if hidden:
            lines.append(f"  ({hidden} empty row{'s' if hidden != 1 else ''} hidden; --all shows them)")
        lines.append("")
    return "\n".join(lines) + ("\n" if lines else "no runs found\n")
