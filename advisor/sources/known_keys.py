"""Which keys each config dialect accepts, their simple types, and the keys that were removed.

Data for GA001 (wrong type), GA002 (unknown key, with did-you-mean) and GA005 (removed key).  Everything
comes from ``advisor/data/keys/*.json``, written by ``tools/gen_known_keys.py`` from the real classes
(transformers, TRL, accelerate, LLaMA-Factory, axolotl, DeepSpeed), so linting never imports them.  The
JSON is read lazily, once per dialect.

Dialects: ``training_args`` (HF TrainingArguments via HfArgumentParser), ``trl`` (TrlParser recipes:
TRL configs + ModelConfig + ScriptArguments + alignment-handbook / open-r1 extras), ``llamafactory``
(and ``llamafactory_v1``), ``axolotl``, ``accelerate``, ``deepspeed``.  A *section* is the key path of a
nested mapping: ``("deepspeed_config",)`` in an accelerate file, ``("zero_optimization",
"offload_param")`` in a DeepSpeed file.
"""

from __future__ import annotations

import json
import math
from functools import cache
from typing import Any, Literal

from advisor import PACKAGE_DIR
from advisor.core.records import record
from advisor.core.suggest import close_matches

# The sequence-length keys of the training dialects (TRL max_length / max_seq_length, LLaMA-Factory
# cutoff_len, axolotl sequence_len, HF scripts' model_max_length, Megatron-style seq_length, ...)
SEQ_KEYS = (
    "max_seq_length",
    "max_length",
    "cutoff_len",
    "sequence_len",
    "model_max_length",
    "max_seq_len",
    "seq_length",
    "block_size",
)
# The parser classes that fill TrainingArguments-like dataclasses from flags and files (transformers
# hf_argparser.py HfArgumentParser, trl scripts/utils.py TrlParser, alignment-handbook's H4ArgumentParser)
HF_ARGUMENT_PARSERS = frozenset({"HfArgumentParser", "TrlParser", "H4ArgumentParser"})
DIALECTS = ("training_args", "trl", "llamafactory", "llamafactory_v1", "axolotl", "accelerate", "deepspeed")

Section = tuple[str, ...]

_DATA = PACKAGE_DIR / "data" / "keys"

_TRUE = frozenset({"true", "t", "yes", "y", "1", "on"})
_FALSE = frozenset({"false", "f", "no", "n", "0", "off"})


@record(frozen=True, slots=True)
class FieldType:
    """The simple type of one key: ``kind`` is ``int``, ``float``, ``bool``, ``str``, ``list``, ``dict``,
    ``any`` or a ``|`` union of them (``dict|str``)."""

    kind: str
    optional: bool = False
    choices: tuple[Any, ...] | None = None
    choices_ci: bool = False  # choices compare case-insensitively (accelerate enums)
    auto: bool = False  # "auto" is accepted (DeepSpeed values the HF/accelerate integration fills)
    default: Any = None
    deprecated: bool = False
    replacement: str | None = None

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self.kind.split("|"))


@record(frozen=True, slots=True)
class Removal:
    """A key the consumer no longer accepts (``removed``) or still accepts with a warning (``deprecated``)."""

    key: str
    replacement: str | None
    version: str | None  # the first release of ``package`` without it (or that deprecated it)
    status: Literal["removed", "deprecated"] = "removed"
    package: str | None = None
    note: str | None = None
    refused: bool = False  # the consumer still declares the key but raises when it is set


# --------------------------------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------------------------------


def _sec(section: Section | str) -> str:
    if isinstance(section, str):
        return section
    return "/".join(str(p) for p in section)


@cache
def _load(name: str) -> dict[str, Any]:
    return json.loads((_DATA / f"{name}.json").read_text(encoding="utf-8"))


def _check_dialect(dialect: str) -> None:
    if dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect!r}; expected one of {', '.join(DIALECTS)}")


@cache
def _keys(dialect: str, section: str) -> dict[str, dict[str, Any]]:
    """{key: tag} of one section, with the keys of included dialects merged in."""
    _check_dialect(dialect)
    data = _load(dialect)
    out: dict[str, dict[str, Any]] = {}
    for inc in data.get("includes", ()):
        out.update(_keys(inc, section))
    sec = data["sections"].get(section)
    if sec is not None:
        out.update(sec["keys"])
    return out


def dialect_info(dialect: str) -> dict[str, Any]:
    """Where a dialect's data came from: ``{"package", "version", ...}`` plus the reader notes."""
    _check_dialect(dialect)
    data = _load(dialect)
    return {"source": data.get("source", {}), "reader": data.get("reader")}


def sections(dialect: str) -> frozenset[Section]:
    """The sections this dialect's data describes (``()`` is the top level)."""
    _check_dialect(dialect)
    out: set[Section] = set()
    data = _load(dialect)
    names = set(data["sections"])
    for inc in data.get("includes", ()):
        names |= set(_load(inc)["sections"])
    for name in names:
        out.add(tuple(name.split("/")) if name else ())
    return frozenset(out)


def _section_meta(dialect: str, section: Section | str) -> dict[str, Any] | None:
    data = _load(dialect)
    name = _sec(section)
    sec = data["sections"].get(name)
    if sec is None:
        for inc in data.get("includes", ()):
            sec = _load(inc)["sections"].get(name)
            if sec is not None:
                break
    return sec


def is_described(dialect: str, section: Section = ()) -> bool:
    """True when the data lists the keys of this section (unknown keys in it can be reported)."""
    _check_dialect(dialect)
    sec = _section_meta(dialect, section)
    return sec is not None and not sec.get("open", False)


def is_strict(dialect: str, section: Section = ()) -> bool:
    """True when the consumer rejects an unknown key in this section (an error, not a silent no-op)."""
    _check_dialect(dialect)
    sec = _section_meta(dialect, section)
    return bool(sec and sec.get("strict"))


def coerces(dialect: str, section: Section = ()) -> bool:
    """True when the consumer converts values (argparse defaults, pydantic lax mode) before using them."""
    _check_dialect(dialect)
    sec = _section_meta(dialect, section)
    return bool(sec and sec.get("coerces"))


# --------------------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------------------


@cache
def known_keys(dialect: str, section: Section = ()) -> frozenset[str]:
    """Every key the consumer of ``dialect`` reads in ``section`` (empty when the section is not described;
    see ``is_described``).  TRL and LLaMA-Factory include the TrainingArguments keys."""
    return frozenset(_keys(dialect, _sec(section)))


@cache
def own_keys(dialect: str, section: Section = ()) -> frozenset[str]:
    """The keys the dialect's own classes declare in ``section`` (their ``from`` tag names one of them),
    without those they inherit from the library: LLaMA-Factory's ``stage`` and its re-added
    ``overwrite_output_dir``, not transformers' ``learning_rate`` or ``warmup_ratio``."""
    _check_dialect(dialect)
    sec = _load(dialect)["sections"].get(_sec(section))
    if not sec:
        return frozenset()
    return frozenset(
        k
        for k, tag in sec["keys"].items()
        if any(not str(c).startswith("transformers") for c in tag.get("from", ()))
    )


def field_type(dialect: str, key: str, section: Section = ()) -> FieldType | None:
    """The simple type of ``key``, or None when the key is unknown."""
    tag = _keys(dialect, _sec(section)).get(key)
    if tag is None:
        return None
    return _field_type(dialect, _sec(section), key)


def value_kind(dialect: str, key: str, section: Section = ()) -> str | None:
    """The simple type (``kind``) a command-line word for ``key`` is converted to: the field's, or the type a
    removed key had (a release that still has it converts to that); None when neither is known."""
    ft = field_type(dialect, key, section)
    if ft is not None:
        return ft.kind
    hit = _cached_removed(dialect, _sec(section)).get(key)
    kind = hit[0].get("type") if hit is not None else None
    return kind if isinstance(kind, str) else None


@cache
def _field_type(dialect: str, section: str, key: str) -> FieldType:
    tag = _keys(dialect, section)[key]
    choices = tag.get("choices")
    return FieldType(
        kind=tag.get("type", "any"),
        optional=bool(tag.get("optional", False)),
        choices=tuple(choices) if choices else None,
        choices_ci=bool(tag.get("choices_ci", False)),
        auto=bool(tag.get("auto", False)),
        default=tag.get("default"),
        deprecated=bool(tag.get("deprecated", False)),
        replacement=tag.get("replacement"),
    )


def _type_name(value: Any) -> str:
    return {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict"}.get(
        type(value), type(value).__name__
    )


def _is_kind(value: Any, kind: str) -> bool:
    if kind == "any":
        return True
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind == "list":
        return isinstance(value, list | tuple)
    if kind == "dict":
        return isinstance(value, dict)
    return True


def _coerce_ok(value: Any, kind: str) -> bool:
    """Would argparse (string defaults go through the field's type) or pydantic lax mode accept it?"""
    if isinstance(value, str):
        s = value.strip()
        if kind == "int":
            try:
                int(s)
                return True
            except ValueError:
                return False
        if kind == "float":
            try:
                return math.isfinite(float(s)) or s.lower() in ("inf", "-inf", "nan")
            except ValueError:
                return False
        if kind == "bool":
            return s.lower() in _TRUE | _FALSE
        if kind in ("list", "dict", "str", "any"):
            return kind != "dict"
        return False
    if kind == "int" and isinstance(value, float) and not isinstance(value, bool):
        return value.is_integer()
    if kind == "bool" and isinstance(value, int) and not isinstance(value, bool):
        return value in (0, 1)
    return False


def _in_choices(value: Any, ft: FieldType) -> bool:
    assert ft.choices is not None
    for c in ft.choices:
        if isinstance(value, bool) or isinstance(c, bool):
            if value is c:
                return True
            continue
        if value == c:
            return True
        a, b = str(value), str(c)
        if ft.choices_ci:
            a, b = a.lower(), b.lower()
        if a == b and isinstance(value, int | float | str) and isinstance(c, int | float | str):
            return True
    return False


def _show_choices(ft: FieldType) -> str:
    assert ft.choices is not None
    shown = [repr(c) if isinstance(c, str) else str(c) for c in ft.choices[:12]]
    more = f", ... ({len(ft.choices)} in all)" if len(ft.choices) > 12 else ""
    return ", ".join(shown) + more


def check_type(field_type: FieldType, value: Any, coerces: bool = False) -> str | None:
    """A message when ``value`` has a type the consumer would reject, else None.

    ``coerces`` says how the consumer reads values: False for HfArgumentParser.parse_yaml_file /
    parse_dict (no conversion: ``learning_rate: "1e-5"`` stays a string), True for TrlParser (YAML values
    become argparse defaults, and string defaults go through the field's type) and for pydantic models.
    """
    ft = field_type
    kinds = ft.kinds
    if value is None:
        if ft.optional or "any" in kinds:
            return None
        return f"null is not allowed here: expected {_expected(ft)}"
    if ft.auto and value == "auto":
        return None
    if "any" in kinds:
        return None
    if ft.choices is not None and not isinstance(value, bool | list | dict):
        if _in_choices(value, ft):
            return None
        # a value outside the choices is still fine when a non-choice kind takes it (axolotl `bf16: true`)
        free = [k for k in kinds if k not in _choice_kinds(ft)]
        if not any(_is_kind(value, k) for k in free):
            return f"{value!r} is not one of: {_show_choices(ft)}"
        return None
    if isinstance(value, bool) and ft.choices is not None and "bool" not in kinds:
        return (
            f"{value!r} is a bool, expected one of: {_show_choices(ft)} "
            "(YAML 1.1 reads unquoted no/yes/off/on as booleans: quote the word)"
        )
    if any(_is_kind(value, k) for k in kinds):
        return None
    if coerces and any(_coerce_ok(value, k) for k in kinds):
        return None
    msg = f"expected {_expected(ft)}, got {_type_name(value)} {value!r}"
    if isinstance(value, str) and ("float" in kinds or "int" in kinds) and not coerces:
        try:
            float(value)
            msg += (
                " (the file is read without type conversion; PyYAML reads 1e-5 without a dot as a string: "
                "write 1.0e-5)"
                if "e" in value.lower()
                else " (the file is read without type conversion: write the number unquoted)"
            )
        except ValueError:
            pass
    return msg


def _choice_kinds(ft: FieldType) -> set[str]:
    out = set()
    for c in ft.choices or ():
        out.add(_type_name(c))
    return out


def _expected(ft: FieldType) -> str:
    parts = " or ".join(ft.kinds)
    if ft.choices is not None:
        parts = f"{parts} (one of: {_show_choices(ft)})"
    if ft.auto:
        parts += ' or "auto"'
    return parts


def _removed_table(dialect: str, section: str) -> dict[str, tuple[dict[str, Any], str | None]]:
    """{key: (entry, package)} of removals that apply to ``dialect``."""
    data = _load(dialect)
    out: dict[str, tuple[dict[str, Any], str | None]] = {}
    if dialect in ("training_args", "trl", "llamafactory"):
        tf = _load("removed")
        tmax = data.get("source", {}).get("transformers_max") if dialect == "llamafactory" else None
        for key, entry in tf["removed"].get(section, {}).items():
            if tmax and entry.get("version") and _vtuple(entry["version"]) > _vtuple(tmax):
                continue  # still present in the newest transformers this project allows
            out[key] = (entry, tf["source"].get("package"))
    for key, entry in data.get("removed", {}).get(section, {}).items():
        out[key] = ({**entry, "own": True}, data.get("source", {}).get("package"))
    return out


def _vtuple(v: str) -> tuple[int, ...]:
    nums = []
    for part in v.lstrip("<=>~").split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits:
            break
        nums.append(int(digits))
    return tuple(nums)


def removed_key(dialect: str, key: str, section: Section = ()) -> Removal | None:
    """The removal (or deprecation) of ``key``, or None.  A key that a current class of the dialect still
    defines is not reported as removed (LLaMA-Factory re-adds ``overwrite_output_dir``), but a deprecated
    alias that still works is (``status == "deprecated"``)."""
    _check_dialect(dialect)
    sec = _sec(section)
    hit = _cached_removed(dialect, sec).get(key)
    if hit is None:
        return None
    entry, package = hit
    status = entry.get("status", "removed")
    refused = False
    if status == "removed" and key in known_keys(dialect, section):
        if not entry.get("own"):
            return None  # a transformers key the dialect's own class declares again (LLaMA-Factory)
        refused = (
            True  # still a field, but a validator raises when it is set (axolotl's DeprecatedParameters)
        )
    return Removal(
        key=key,
        replacement=entry.get("replacement"),
        version=entry.get("version"),
        status=status,
        package=package,
        note=entry.get("note"),
        refused=refused,
    )


@cache
def _cached_removed(dialect: str, section: str) -> dict[str, tuple[dict[str, Any], str | None]]:
    return _removed_table(dialect, section)


def removed_choice(dialect: str, key: str, value: Any) -> str | None:
    """The release that dropped ``value`` as a choice of ``key`` (``optim: adamw_hf``), or None."""
    _check_dialect(dialect)
    names = [dialect, *_load(dialect).get("includes", ())]
    for name in names:
        table = _load(name).get("removed_choices", {}).get(key, {})
        if isinstance(value, str) and value in table:
            return table[value]
    return None


def suggest(dialect: str, key: str, section: Section = (), cutoff: float = 0.8) -> str | None:
    """The closest known key to a misspelt ``key`` (difflib ratio >= ``cutoff``), or None."""
    known = known_keys(dialect, section)
    if not known or key in known:
        return None
    stripped = key.strip()
    if stripped != key and stripped in known:
        return stripped
    lowered = stripped.lower().replace("-", "_")
    if lowered in known:
        return lowered
    match = close_matches(lowered, sorted(known), n=1, cutoff=cutoff)
    return match[0] if match else None
