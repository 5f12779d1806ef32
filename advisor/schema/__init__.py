"""Pydantic models of the input files: rule files, project settings, hardware descriptors, the GPU catalog.

They validate input and print JSON schemas, and nothing else. What they accept is converted at once, by
`to_view`, into the frozen dataclasses of the same names (advisor.engine, advisor.settings,
advisor.sources.hardware) that the rest of the program and the on-disk cache (advisor/cache.py) use, so
a check whose inputs are all cached never imports pydantic: its import alone would cost a pre-commit hook
about a fifth of its start-up. The trade-off: each field is declared twice, here with its validation and
there with its type and default; tests/core/test_schema_views.py keeps the two in step. Logic (properties,
methods) lives only on the dataclasses; validation lives only here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from advisor import records


def to_view(value: Any, views: dict[str, type]) -> Any:
    """`value` with every pydantic model in it replaced by the dataclass of the same name in `views`."""
    if isinstance(value, BaseModel):
        cls = views[type(value).__name__]
        return cls(**{f.name: to_view(getattr(value, f.name), views) for f in records.fields(cls)})
    if isinstance(value, list):
        return [to_view(v, views) for v in value]
    if isinstance(value, dict):
        return {k: to_view(v, views) for k, v in value.items()}
    return value
