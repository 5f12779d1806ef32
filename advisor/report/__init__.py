"""Reporters: each turns a CheckResult into text for one audience."""

from __future__ import annotations

from advisor.core.document import Location
from advisor.core.paths import relative

__all__ = ["location_json", "relative"]


def location_json(loc: Location) -> dict[str, object]:
    return {"file": relative(loc.file), "line": loc.line, "column": loc.col, "key": loc.key}
