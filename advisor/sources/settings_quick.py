"""Project settings checked without the full validator: the common keys with plain values, checked here.

Validating `.gpu-advise.toml` with advisor.sources.schema.settings (advisor.core.datacodec.validate over the
settings records) costs ~10 ms of imports and ~1 ms for the first file on this machine: on a fresh CI runner,
whose cache is empty, that is start-up a warm run does not pay (issue 18 item 11; when the validator was
pydantic it was ~100 ms of a ~180 ms check). `quick_settings` accepts a settings
table only when every key is one of FIELDS, written as the file documents it (kebab-case), and every value
has exactly the type and bounds the schema declares; anything else (an unknown or misspelt key, a
snake_case alias, a string where a number goes, a value out of bounds, a key added to the schema but not
here) returns None and the schema validates it, with its error messages. tests/sources/
test_settings_quick.py keeps FIELDS equal to the schema's fields and the two results equal.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from advisor.core import settings_types as views

_SEVERITIES = ("error", "warning", "info")
_PACKAGES = ("transformers", "trl", "accelerate", "peft", "deepspeed")
_MAX_INT = (1 << 63) - 1

# key as written -> (field name, kind): "str", "float", "int", ("int", lo, hi), ("float", lo, hi),
# ("literal", choices),
# ("list", kind), ("dict", key choices or None, kind), "runs", "thresholds"
Kind = Any
_STR_LIST: Kind = ("list", "str")
RUN_FIELDS: dict[str, tuple[str, Kind]] = {
    "path": ("path", "str"),
    "name": ("name", "str"),
    "hardware": ("hardware", "str"),
    "effective-batch": ("effective_batch", ("int", 1, _MAX_INT)),
    "learning-rate": ("learning_rate", ("float", 0.0, 1e6)),
    "dataset-samples": ("dataset_samples", ("int", 1, _MAX_INT)),
    "dataset-tokens": ("dataset_tokens", ("int", 1, _MAX_INT)),
}
THRESHOLD_FIELDS: dict[str, tuple[str, Kind]] = {
    "single-gpu-hours": ("single_gpu_hours", ("float", 0.0, 1e6)),
    "workers-per-process": ("workers_per_process", ("int", 0, 1024)),
    "near-memory-fraction": ("near_memory_fraction", ("float", 0.0, 1.0)),
    "prediction-tolerance": ("prediction_tolerance", ("float", 0.0, 1e6)),
}
FIELDS: dict[str, tuple[str, Kind]] = {
    "select": ("select", _STR_LIST),
    "extend-select": ("extend_select", _STR_LIST),
    "ignore": ("ignore", _STR_LIST),
    "severity": ("severity", ("dict", None, ("literal", _SEVERITIES))),
    "fail-on": ("fail_on", ("literal", _SEVERITIES)),
    "per-file-ignores": ("per_file_ignores", ("dict", None, _STR_LIST)),
    "key-ignores": ("key_ignores", ("dict", None, ("dict", None, _STR_LIST))),
    "hardware": ("hardware", "str"),
    "runs": ("runs", "runs"),
    "extend-rules": ("extend_rules", _STR_LIST),
    "allowed-roots": ("allowed_roots", _STR_LIST),
    "thresholds": ("thresholds", "thresholds"),
    "baseline": ("baseline", "str"),
    "dataset-samples": ("dataset_samples", ("int", 1, _MAX_INT)),
    "dataset-tokens": ("dataset_tokens", ("int", 1, _MAX_INT)),
    "target-versions": ("target_versions", ("dict", _PACKAGES, "str")),
}


class _Refused(Exception):
    """A value this module does not vouch for: the schema decides."""


def _value(kind: Kind, value: Any) -> Any:
    if kind == "str":
        if type(value) is not str:
            raise _Refused
        return value
    if kind == "float" or (isinstance(kind, tuple) and kind[0] == "float"):
        lo, hi = (kind[1], kind[2]) if isinstance(kind, tuple) else (-math.inf, math.inf)
        if type(value) not in (int, float) or not lo <= value <= hi:  # NaN fails both comparisons
            raise _Refused
        return float(value)
    if kind == "int" or (isinstance(kind, tuple) and kind[0] == "int"):
        lo, hi = (kind[1], kind[2]) if isinstance(kind, tuple) else (-_MAX_INT - 1, _MAX_INT)
        if type(value) is not int or not lo <= value <= hi:
            raise _Refused
        return value
    if kind == "runs":
        if type(value) is not list:
            raise _Refused
        return [views.RunSettings(**_table(RUN_FIELDS, item, required=("path",))) for item in value]
    if kind == "thresholds":
        return views.Thresholds(**_table(THRESHOLD_FIELDS, value))
    tag = kind[0]
    if tag == "literal":
        if type(value) is not str or value not in kind[1]:
            raise _Refused
        return value
    if tag == "list":
        if type(value) is not list:
            raise _Refused
        return [_value(kind[1], v) for v in value]
    if tag == "dict":
        if type(value) is not dict or (kind[1] is not None and not set(value) <= set(kind[1])):
            raise _Refused
        return {k: _value(kind[2], v) for k, v in value.items()}
    raise _Refused


def _table(fields: dict[str, tuple[str, Kind]], data: Any, required: tuple[str, ...] = ()) -> dict[str, Any]:
    if type(data) is not dict or not set(data) <= set(fields) or not set(required) <= set(data):
        raise _Refused
    return {fields[key][0]: _value(fields[key][1], value) for key, value in data.items()}


def quick_settings(data: Any, source: Path) -> views.Settings | None:
    """`data` (a settings table) as Settings read from `source`, or None: the schema validates it."""
    try:
        return views.Settings(**_table(FIELDS, data), source=source)
    except _Refused:
        return None
