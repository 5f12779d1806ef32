"""`gpu-advise plan`: every value of every run, with where it came from."""

from __future__ import annotations

import math
from typing import Any

from advisor.facts import run_names
from advisor.paths import relative
from advisor.plan import RunPlan
from advisor.provenance import Namespace, Value
from advisor.report.escape import escape_text, escape_value, strict_json

_SHOWN = ("launch", "env", "accelerate", "training", "deepspeed", "model", "batch", "run", "data", "hardware")


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


def _json_value(v: Value) -> dict[str, Any]:
    notes = [n for n in (v.note, _non_finite_note(v.value)) if n]
    return escape_value(
        {
            "value": v.value,
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


def render_plans(plans: list[RunPlan], *, as_json: bool = False) -> str:
    if as_json:
        out = []
        for plan in plans:
            names = run_names(plan)
            out.append(
                {
                    "name": escape_text(plan.name),
                    "files": [escape_text(relative(d.path)) for d in plan.spec.documents],
                    "values": {escape_text(key): _json_value(v) for key, v in _rows(names)},
                }
            )
        return strict_json(out) + "\n"
    lines: list[str] = []
    for plan in plans:
        names = run_names(plan)
        lines.append(f"run {escape_text(plan.name)}")
        lines.append("  files: " + ", ".join(escape_text(relative(d.path)) for d in plan.spec.documents))
        for ref in plan.spec.references:
            if ref.path is None:
                lines.append(
                    escape_text(
                        f"  missing: {ref.raw} (named at {relative(ref.named_at.file)}:{ref.named_at.line})"
                    )
                )
        rows = _rows(names)
        width = max((len(k) for k, _ in rows), default=10)
        for key, v in rows:
            shown = escape_text(f"? ({v.unknown})" if v.unknown else repr(v.value))
            if len(shown) > 60:
                shown = shown[:57] + "..."
            lines.append(f"  {escape_text(key):<{width}}  {shown:<24}  {_where(v)}")
        lines.append("")
    return "\n".join(lines) + ("\n" if lines else "no runs found\n")
