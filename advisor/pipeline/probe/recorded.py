"""Reading `.gpu-advise-verify.json` (recorded measurements) as data that a pull request may have written.

The file replaces what the static check says about a run (GA701 in place of GA101), so it is read
strictly: a value of the wrong type anywhere is a one-line error naming the file, line and column
(exit 2), never an internal error later; only the measured keys the verify stage reads are kept,
each with its type. An entry applies only while its `digest` (advisor/pipeline/probe/spec.py run_digest)
matches the run's files: an entry without one, or with one of the wrong form, is stale, never
"always fresh".
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from advisor.core.document import MAX_INT
from advisor.core.errors import CheckError
from advisor.sources.data_file import DataFileError, JsonData, read_json_data

DIGEST = re.compile(r"[0-9a-f]{16}")  # run_digest: the first 16 hex digits of a sha256
_TEXT_LIMIT = 4096

# measured key -> its kind: what results.py, stage.py and render.py compute with
_COUNTS = (
    "world_size",
    "effective_batch",
    "per_device",
    "accumulation",
    "seq_len",
    "oom_rank",
    "oom_at_step",
    "ranks_reporting",
    "steps_timed",
    "tokens_per_step",
    "param_bytes",
    "grad_bytes",
    "optimizer_bytes",
    "optimizer_scalar_bytes",
    "trainable_params",
    "total_params",
    "scaling_processes",
)
_FIGURES = (
    "seconds_per_step",
    "tokens_per_s",
    "peak_allocated_gib",
    "peak_reserved_gib",
    "peak_rss_gib",
    "device_total_gib",
    "scaling_efficiency",
)
_FLAGS = ("cpu_timings", "faithful", "oom", "terms_equal_across_ranks")
_TEXTS = ("device", "device_name", "error", "stopped", "optim", "backend", "digest")
MEASURED_KINDS: dict[str, str] = {
    **dict.fromkeys(_COUNTS, "count"),
    **dict.fromkeys(_FIGURES, "figure"),
    **dict.fromkeys(_FLAGS, "flag"),
    **dict.fromkeys(_TEXTS, "text"),
    "samples_per_rank": "counts",
}
SCALING_KINDS = {
    "processes": "count",
    "efficiency": "figure",
    "single_status": "text",
    "single": "measured",
    "predicted_single": "object",
    "single_command": "words",
}


class _Checker:
    def __init__(self, read: JsonData) -> None:
        self.read = read

    def fail(self, message: str, *keys: str | int) -> CheckError:
        shown = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in keys).lstrip(".")
        return CheckError(f"{self.read.at(*keys)}: recorded measurements: {shown or 'the file'}: {message}")

    def value(self, kind: str, value: Any, *keys: str | int) -> Any:
        """`value` when it is of `kind` (None passes: a value not measured), else CheckError."""
        if value is None:
            return None
        if kind == "count":
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT:
                raise self.fail(f"expected a whole number from 0 to 2**63 - 1, got {_shown(value)}", *keys)
            return value
        if kind == "figure":
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            if not ok or not math.isfinite(value) or not 0 <= value <= MAX_INT:
                raise self.fail(f"expected a number of at least 0, got {_shown(value)}", *keys)
            return value
        if kind == "flag":
            if not isinstance(value, bool):
                raise self.fail(f"expected true or false, got {_shown(value)}", *keys)
            return value
        if kind == "text":
            if not isinstance(value, str) or len(value) > _TEXT_LIMIT:
                raise self.fail(
                    f"expected a string (at most {_TEXT_LIMIT} characters), got {_shown(value)}", *keys
                )
            return value
        if kind == "counts":
            if not isinstance(value, list):
                raise self.fail(f"expected a list of whole numbers, got {_shown(value)}", *keys)
            return [self.value("count", v, *keys, i) for i, v in enumerate(value)]
        if kind == "words":
            if isinstance(value, str):
                return self.value("text", value, *keys)
            if not isinstance(value, list):
                raise self.fail(f"expected a list of strings, got {_shown(value)}", *keys)
            return [self.value("text", v, *keys, i) for i, v in enumerate(value)]
        if kind == "measured":
            return self.measured(value, *keys)
        return self.mapping(value, *keys)  # "object"

    def mapping(self, value: Any, *keys: str | int) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(f"expected an object, got {_shown(value)}", *keys)
        return value

    def typed(self, value: Any, kinds: dict[str, str], *keys: str | int) -> dict[str, Any]:
        """The known keys of an object, each checked; the others are left out (nothing reads them)."""
        data = self.mapping(value, *keys)
        return {
            k: self.value(kind, data[k], *keys, k) for k, kind in kinds.items() if data.get(k) is not None
        }

    def measured(self, value: Any, *keys: str | int) -> dict[str, Any]:
        out = self.typed(value, MEASURED_KINDS, *keys)
        if out.get("world_size") == 0:
            raise self.fail("a run has at least one process, got 0", *keys, "world_size")
        return out

    def device(self, value: Any) -> dict[str, Any]:
        data = dict(self.mapping(value, "device"))
        devices = data.get("devices")
        if devices is None:
            return data
        if not isinstance(devices, list):
            raise self.fail(f"expected a list, got {_shown(devices)}", "device", "devices")
        data["devices"] = [
            self.typed(d, {"name": "text", "total_memory": "figure"}, "device", "devices", i)
            for i, d in enumerate(devices)
        ]
        return data

    def run(self, value: Any, i: int) -> dict[str, Any]:
        entry = self.mapping(value, "runs", i)
        out: dict[str, Any] = {
            k: self.value("text", entry.get(k), "runs", i, k) for k in ("name", "path", "status", "reason")
        }
        out["digest"] = entry.get("digest")  # judged against the run (stale), not refused here
        out["measured"] = self.measured(entry.get("measured") or {}, "runs", i, "measured")
        scaling = entry.get("scaling")
        out["scaling"] = None if scaling is None else self.typed(scaling, SCALING_KINDS, "runs", i, "scaling")
        spec = entry.get("spec")
        out["spec"] = None if spec is None else self.mapping(spec, "runs", i, "spec")
        return out


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string" if len(value) > 40 else repr(value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        return f"an integer of {len(str(abs(value)))} digits"
    return repr(value)


def read_recorded(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(device, runs) of a recorded file, every value checked (CheckError naming file:line:col)."""
    from advisor.core.paths import relative

    try:
        # the folder made relative, the name kept: a link at the name is named, not its target
        shown = str(Path(relative(path.parent)) / path.name)
        read = read_json_data(path, "recorded measurements (JSON)", shown=shown)
    except DataFileError as exc:
        raise CheckError(str(exc)) from None
    check = _Checker(read)
    data = check.mapping(read.data)
    version = data.get("version", 1)
    if version != 1 or isinstance(version, bool):
        raise check.fail(f"version {_shown(version)} is not supported (expected 1)", "version")
    device = check.device(data.get("device") or {})
    runs = data.get("runs") or []
    if not isinstance(runs, list):
        raise check.fail(f"expected a list, got {_shown(runs)}", "runs")
    return device, [check.run(r, i) for i, r in enumerate(runs)]


def digest_problem(entry: dict[str, Any], digest: str, file_name: str) -> str | None:
    """Why an entry does not apply to the run whose files digest to `digest`, else None."""
    recorded = entry.get("digest")
    if recorded is None:
        return (
            f"recorded in {file_name} without a digest of the run's files, so it cannot be matched to "
            "them: measure again with --verify"
        )
    if not isinstance(recorded, str) or not DIGEST.fullmatch(recorded):
        return f"recorded in {file_name} with an invalid digest: measure again with --verify"
    if recorded != digest:
        return f"recorded in {file_name} before the run's files changed: measure again with --verify"
    return None
