"""Find a model's config.json offline (and its exact parameter count when local weights exist).

Sources, in order:
1. a local path: a folder holding config.json, or the config file itself;
2. the local Hugging Face cache (``huggingface_hub.try_to_load_from_cache``; the package is imported only
   when the cache folder for that repo exists);
3. the built-in catalog ``advisor/data/models/catalog.json`` (hub ids, lower-case ids, names without the
   org, and listed aliases such as ``-Instruct`` variants with the same architecture), plus two rules: an
   unlisted ``-Instruct``/``-Chat``/``-it``/``-Base`` variant of a listed id of the same org, and a mirror in
   ``unsloth/`` or ``NousResearch/`` under the upstream repo name (``-bnb-4bit``: a pre-quantized copy);
4. with ``online=True`` only: ``hf_hub_download(repo_id, "config.json")`` (config only, never weights);
5. with ``from_name=True`` only, what the name says (advisor.estimate.model_names), stated in ``assumption``:
   the base model a cached model card (``base_model:``), adapter config (``base_model_name_or_path``) or
   config.json without a ``model_type`` (``_name_or_path``) names; the repo a re-upload copies once its dtype
   or quantization tag is taken off (``microsoft/phi-4-bf16``, ``Qwen/Qwen3-32B-FP8``); else the catalog
   model of the same family and size (``OpenHermes-2.5-Mistral-7B``, ``org/Llama-3.1-8B-Instruct-my-sft``,
   ``Qwen2.5-7B-Instruct-2501``, ``TheBloke/Llama-2-7B-GPTQ``): "assumed Qwen/Qwen2.5-7B's shapes: the name
   has family qwen2.5 and size 7B"; and last, when no listed model has the name's family at all but the name
   writes a plain size (``arcee-ai/AFM-4.5B``), a stand-in of that size (advisor.estimate.size_match), marked
   ``shapes_from="size"`` so that the rules soften what they conclude from it.

When ``model.safetensors`` or a complete ``model.safetensors.index.json`` set of shards sits next to the
config, the 8-byte-length-prefixed JSON headers are read (no tensor data) and give the exact count.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from advisor import PACKAGE_DIR
from advisor.core.records import field, record, replace
from advisor.estimate.params import ParamCount, UnknownModelTypeError, count_params

if TYPE_CHECKING:
    from advisor.sources.boundary import ProjectBoundary

__all__ = ["ModelInfo", "catalog_ids", "model_files_outside", "read_safetensors_params", "resolve_model"]

CATALOG_PATH = PACKAGE_DIR / "data" / "models" / "catalog.json"

_DTYPE_BYTES = {
    "F64": 8,
    "I64": 8,
    "U64": 8,
    "F32": 4,
    "I32": 4,
    "U32": 4,
    "F16": 2,
    "BF16": 2,
    "I16": 2,
    "U16": 2,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
}


@record(frozen=True, slots=True, kw_only=True)
class ModelInfo:
    name: str  # what was asked for
    hub_id: str | None = None
    source: Literal["path", "hf-cache", "catalog", "hub"]
    config: dict[str, Any]
    config_path: str | None = None
    weights_params: int | None = None  # exact count from local safetensors headers
    weights_bytes: int | None = None
    weights_dtypes: dict[str, int] = field(default_factory=dict)  # params per stored dtype
    notes: list[str] = field(default_factory=list)
    # "bnb-4bit" for a catalog hit through a pre-quantized mirror (unsloth/...-bnb-4bit): its checkpoint loads
    # as bitsandbytes 4-bit whatever the recipe says
    prequantized: str | None = None
    # how the config was chosen when the name was not found as written (the first of `notes`): the estimate
    # states it as an assumption
    assumption: str | None = None
    # what the shapes are: the model's own config, a listed model the name is built on (its family and size,
    # a base model its card names, a re-upload's), or a stand-in of the size the name writes (size_match)
    shapes_from: Literal["config", "name", "size"] = "config"

    def count(self) -> ParamCount:
        """count_params(config), with the exact total from local safetensors when those exist."""
        try:
            pc = count_params(self.config)
        except UnknownModelTypeError as exc:
            if self.weights_params is None:
                raise
            raise UnknownModelTypeError(
                f"{exc}; its safetensors headers hold {self.weights_params:,} parameters"
            ) from None
        if self.weights_params is None:
            return pc
        if self.config.get("quantization_config"):
            pc.notes.append(
                "local weights are a quantized checkpoint; their stored element count is not "
                "the parameter count, kept the config formula"
            )
            return pc
        if self.weights_params != pc.total:
            pc.notes.append(
                f"safetensors headers hold {self.weights_params:,} params, the config formula gives "
                f"{pc.total:,}; using the weights' count"
            )
            return replace(pc, total=self.weights_params, source="safetensors")
        return replace(pc, source="safetensors")


# ---- catalog ------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _catalog() -> tuple[dict[str, dict[str, Any]], dict[str, str], dict[str, str]]:
    """(configs by hub id, index of ids/aliases incl. lower-case, index of bare names without the org)."""
    data = json.loads(CATALOG_PATH.read_text(encoding="utf-8"))
    models: dict[str, dict[str, Any]] = data["models"]
    full: dict[str, str] = {}
    bare: dict[str, str] = {}
    names = [(hub_id, hub_id) for hub_id in models] + list(data.get("aliases", {}).items())
    for key, target in names:
        for k in (key, key.lower()):
            full.setdefault(k, target)
        if "/" in key:
            for k in (key.split("/")[-1], key.split("/")[-1].lower()):
                bare.setdefault(k, target)
    return models, full, bare


def catalog_ids() -> list[str]:
    """Hub ids of the built-in model configs."""
    return sorted(_catalog()[0])


# orgs that re-host upstream checkpoints under the upstream repo name (the catalog lists the upstream one)
_MIRROR_ORGS = frozenset({"unsloth", "nousresearch"})
_PREQUANTIZED_SUFFIXES = ("-unsloth-bnb-4bit", "-bnb-4bit")
# same-org variants whose architecture is the listed base model's; "-chat-hf" keeps Llama 2's "-hf"
_VARIANT_SUFFIXES = (("-chat-hf", "-hf"), ("-instruct", ""), ("-chat", ""), ("-it", ""), ("-base", ""))


@record(frozen=True, slots=True)
class _Hit:
    hub_id: str
    note: str | None = None
    prequantized: str | None = None
    assumed: bool = False  # chosen from what the name says: the note is an assumption of the estimate


def _catalog_lookup(name: str) -> _Hit | None:
    """Hub id (any case) or alias; a bare name without org ("Meta-Llama-3-8B") matches the name part.

    "org/name" must match an id or alias exactly (up to case), be a same-org variant of one, or sit in a
    mirror org under a listed name: "someone/gpt2" is not gpt2; a path's last component is never looked up.
    """
    key = name.strip()
    if not _looks_like_repo_id(key):
        return None
    _, full, bare = _catalog()
    for k in (key, key.lower()):
        if k in full:
            if key.lower().endswith(_PREQUANTIZED_SUFFIXES):
                return _prequantized_hit(key, full[k])
            return _Hit(full[k])
    if "/" not in key:
        for k in (key, key.lower()):
            if k in bare:
                return _Hit(bare[k])
        return None
    org, repo = key.split("/", 1)
    if org.lower() in _MIRROR_ORGS:
        return _mirror_lookup(key, repo, bare)
    for suffix, replacement in _VARIANT_SUFFIXES:
        if repo.lower().endswith(suffix):
            base = f"{org}/{repo[: -len(suffix)]}{replacement}".lower()
            if base in full:
                return _Hit(
                    full[base], note=f"'{key}' is not in the catalog: counted as its base model {full[base]}"
                )
    return None


def _mirror_lookup(key: str, repo: str, bare: dict[str, str]) -> _Hit | None:
    quantized = False
    for suffix in _PREQUANTIZED_SUFFIXES:
        if repo.lower().endswith(suffix):
            repo, quantized = repo[: -len(suffix)], True
            break
    target = bare.get(repo) or bare.get(repo.lower())
    if target is None:
        return None
    if quantized:
        return _prequantized_hit(key, target)
    return _Hit(target, note=f"'{key}' mirrors {target}")


def _prequantized_hit(key: str, target: str) -> _Hit:
    note = (
        f"'{key}' is a pre-quantized bitsandbytes 4-bit copy of {target}: loads in 4-bit without load_in_4bit"
    )
    return _Hit(target, note=note, prequantized="bnb-4bit")


# ---- safetensors headers ------------------------------------------------------------------------
def _header(path: Path) -> dict[str, Any]:
    from advisor.sources.read import ReadRefused, read_head

    try:
        (n,) = struct.unpack("<Q", read_head(path, 8))
        if n <= 0 or n > 200_000_000:
            raise ValueError(f"{path}: implausible safetensors header length {n}")
        data = json.loads(read_head(path, 8 + n)[8:])
    except ReadRefused as exc:
        raise OSError(exc.reason) from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a safetensors header is a JSON object")
    return data


def read_safetensors_params(folder: str | os.PathLike[str]) -> tuple[int, int, dict[str, int]] | None:
    """(params, bytes, params per dtype) from the safetensors headers in folder; None if incomplete/absent."""
    folder = Path(folder)
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        from advisor.sources.read import ReadRefused, read_text_file

        try:
            weight_map = json.loads(read_text_file(index))["weight_map"]
            files = [folder / f for f in sorted(set(weight_map.values()))]
        except (OSError, ValueError, KeyError, TypeError, AttributeError, ReadRefused):
            return None
    elif (folder / "model.safetensors").is_file():
        files = [folder / "model.safetensors"]
    else:
        return None
    if not files or not all(f.is_file() for f in files):
        return None
    params = nbytes = 0
    by_dtype: dict[str, int] = {}
    try:
        for f in files:
            for name, meta in _header(f).items():
                if name == "__metadata__":
                    continue
                n = math.prod(meta["shape"]) if isinstance(meta, dict) else 0
                params += n
                nbytes += n * _DTYPE_BYTES.get(meta["dtype"], 2)
                by_dtype[meta["dtype"]] = by_dtype.get(meta["dtype"], 0) + n
    except (OSError, ValueError, KeyError, TypeError, struct.error):
        return None
    return params, nbytes, by_dtype


# ---- HF cache -----------------------------------------------------------------------------------
def _hub_cache_dir() -> Path:
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            return Path(os.environ[var]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def _looks_like_repo_id(name: str) -> bool:
    parts = name.split("/")
    return 1 <= len(parts) <= 2 and all(parts) and not name.startswith((".", "~")) and " " not in name


def _cached_repo_dir(repo_id: str) -> bool:
    """Whether the HF cache holds a folder for the repo; a name no folder can have (too long) is not."""
    try:
        return (_hub_cache_dir() / f"models--{repo_id.replace('/', '--')}").is_dir()
    except (OSError, ValueError):
        return False


def _from_hf_cache(repo_id: str) -> Path | None:
    if not _looks_like_repo_id(repo_id):
        return None
    if not _cached_repo_dir(repo_id):
        return None  # cheap check first: no huggingface_hub import when the repo was never cached
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    found = try_to_load_from_cache(repo_id, "config.json", cache_dir=str(_hub_cache_dir()))
    return Path(found) if isinstance(found, str) and Path(found).is_file() else None


def _from_hub(repo_id: str) -> Path | None:
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        return None
    try:
        return Path(hf_hub_download(repo_id, "config.json"))
    except Exception:  # network errors, gated repos, missing repo: the caller reports "unknown model"
        return None


def _load_config(path: Path) -> dict[str, Any] | None:
    from advisor.sources.read import ReadRefused, read_text_file

    try:
        data = json.loads(read_text_file(path))  # regular files only, at most 10 MB
    except (OSError, ValueError, RecursionError, ReadRefused):
        return None
    return data if isinstance(data, dict) else None


def _info_from_file(
    name: str, cfg_path: Path, source: Literal["path", "hf-cache", "hub"], hub_id: str | None
) -> ModelInfo | None:
    cfg = _load_config(cfg_path)
    if cfg is None:
        return None
    st = read_safetensors_params(cfg_path.parent)
    weights_params, weights_bytes, weights_dtypes = st if st is not None else (None, None, {})
    return ModelInfo(
        name=name,
        hub_id=hub_id or cfg.get("_name_or_path") or None,
        source=source,
        config=cfg,
        config_path=str(cfg_path),
        weights_params=weights_params,
        weights_bytes=weights_bytes,
        weights_dtypes=weights_dtypes,
    )


def _local_files(p: Path) -> list[Path]:
    """The files read for a local model folder (or config file): config, safetensors index and shards."""
    if not p.is_dir():
        return [p]
    files = [p / "config.json", p / "model.safetensors.index.json", p / "model.safetensors"]
    from advisor.sources.read import ReadRefused, read_text_file

    try:
        weight_map = json.loads(read_text_file(files[1]))["weight_map"]
        files += [p / f for f in sorted(set(weight_map.values()))]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ReadRefused):
        pass
    return [f for f in files if os.path.lexists(f)]


def model_files_outside(name_or_path: str, boundary: ProjectBoundary) -> str | None:
    """Why a local model folder is not read: one of the files it would be read from (its config.json,
    its safetensors index or shards) is a link out of the project boundary. None for a hub id."""
    try:
        p = Path(str(name_or_path).strip()).expanduser()
        if not str(name_or_path).strip() or not (p.is_dir() or p.is_file()):
            return None
        for f in _local_files(p):
            reason = boundary.outside_reason(f)
            if reason is not None:
                return reason
    except (OSError, ValueError):
        return None
    return None


def resolve_model(
    name_or_path: str,
    online: bool = False,
    boundary: ProjectBoundary | None = None,
    from_name: bool = False,
    depth: int = 0,
) -> ModelInfo | None:
    """Find the config.json for a local path or hub id; None when no source has it. With ``boundary``
    (a model named by a project's file), a local folder whose files lead out of it is not read. With
    ``from_name``, a name found nowhere as written is resolved by what its cached card or its name says
    (source 5 above), and ``assumption`` says so: a caller that passes it shows that line with the
    estimate, so that the choice is never silent."""
    name = str(name_or_path).strip()
    if not name:
        return None
    p = Path(name).expanduser()
    try:
        is_dir, is_file = p.is_dir(), p.is_file()
    except (OSError, ValueError):  # a name too long for a path
        is_dir = is_file = False
    if (is_dir or is_file) and boundary is not None and model_files_outside(name, boundary) is not None:
        return None
    if is_dir and (p / "config.json").is_file():
        return _info_from_file(name, p / "config.json", "path", None)
    if is_file:
        return _info_from_file(name, p, "path", None)

    hit = _catalog_lookup(name)
    canonical = hit.hub_id if hit is not None else None
    for repo in dict.fromkeys([name, *([canonical] if canonical else [])]):
        cached = _from_hf_cache(repo)
        if cached is not None:
            info = _info_from_file(name, cached, "hf-cache", repo)
            if info is not None and not (from_name and _names_its_origin(info.config)):
                return info
    if hit is not None:
        return _catalog_info(name, hit)
    if not _looks_like_repo_id(name):
        return None
    base = _cached_base_model(name) if from_name else None
    if base is not None and depth < MAX_BASE_HOPS:
        based_on, why = base
        info = resolve_model(based_on, online, boundary, from_name=True, depth=depth + 1)
        if info is not None:
            note = f"assumed {info.hub_id or based_on}'s shapes: {why}"
            shapes_from = "size" if info.shapes_from == "size" else "name"
            notes = [note, *info.notes]
            return replace(info, name=name, notes=notes, assumption=note, shapes_from=shapes_from)
    if online:
        downloaded = _from_hub(name)
        if downloaded is not None:
            return _info_from_file(name, downloaded, "hub", name)
    if not from_name or len(name) > MAX_NAME_CHARS:
        return None
    named = _by_name(name)
    return _catalog_info(name, named) if named is not None else _by_size(name)


def _by_size(name: str) -> ModelInfo | None:
    """A stand-in of the size the name writes, when nothing else the name says is listed (size_match)."""
    from advisor.estimate.model_names import parse_name
    from advisor.estimate.size_match import match_size, size_in_params

    parts = parse_name(name)
    stated = size_in_params(parts.size)
    if stated is None or _family_listed(parts):  # OPT-2.7B is OPT's, not a stand-in's: unknown
        return None
    found = match_size(stated, _stand_ins(), parts.before)
    if found is None:
        return None
    return ModelInfo(
        name=name,
        hub_id=None,
        source="catalog",
        config=found.config,
        notes=[found.note],
        assumption=found.note,
        shapes_from="size",
    )


# the Hub's repo names are at most 96 characters an org and a name: a longer string is no model's name
MAX_NAME_CHARS = 256
MAX_BASE_HOPS = 2  # a card naming a base whose card names another: followed twice, never in a loop


def _catalog_info(name: str, hit: _Hit) -> ModelInfo:
    models = _catalog()[0]
    return ModelInfo(
        name=name,
        hub_id=hit.hub_id,
        source="catalog",
        config=dict(models[hit.hub_id]),
        notes=[hit.note] if hit.note else [],
        prequantized=hit.prequantized,
        assumption=hit.note if hit.assumed else None,
        shapes_from="name" if hit.assumed else "config",
    )


# ---- what the name says -------------------------------------------------------------------------
def _by_name(name: str) -> _Hit | None:
    """A re-upload of a listed repo (its dtype or quantization tag taken off), else the listed model of
    the family and size the name writes; the note says which and why."""
    from advisor.estimate.model_names import parse_name, quantization_note, stripped_name

    parts = parse_name(name)
    said = [n for n in (quantization_note(parts),) if n]
    if parts.dtype:
        said.append(f"'{parts.dtype}' is the dtype it was saved in")
    copied = stripped_name(name)
    hit = _catalog_lookup(copied) if copied else None
    if hit is not None:
        why = "; ".join([f"the name is {copied}'s with its tags", *said])
        return _Hit(hit.hub_id, note=f"assumed {hit.hub_id}'s shapes: {why}", assumed=True)
    found = _family_and_size(parts)
    if found is None:
        return None
    hub_id, family, alias = found
    why = f"the name has family {family} and size {parts.size.upper() if parts.size else ''}"
    if alias is not None:
        why += f" (as {alias}, a listed fine-tune of it)"
    if parts.date:
        why += f" (the date tag '{parts.date}' marks a release of that model)"
    note = f"assumed {hub_id}'s shapes: " + "; ".join([why, *said])
    return _Hit(hub_id, note=note, assumed=True)


def _family_label(tokens: tuple[str, ...]) -> str:
    """('qwen', '2.5') -> qwen2.5, ('llama', '3.1') -> llama-3.1, ('mistral', 'small') -> mistral-small."""
    head, *rest = tokens
    if rest and head in _JOINED_FAMILIES and rest[0][:1].isdigit():
        head, rest = head + rest[0], rest[1:]
    return "-".join([head, *rest])


# families whose version is written joined to the name (Qwen2.5, SmolLM2, Falcon3, OLMo-2 is not): as written
_JOINED_FAMILIES = frozenset({"qwen", "smollm", "falcon", "internlm", "baichuan", "starcoder", "lfm"})


@lru_cache(maxsize=2)
def _family_index(
    aliases: bool = False,
) -> dict[tuple[tuple[str, ...], str], list[tuple[tuple[str, ...], str]]]:
    """{(family tokens, size): [(tokens after the size, hub id)]} over the catalog's models, or over its
    aliases (``aliases=True``; the hub id is then the alias's own): an alias is a fine-tune's name
    (``HuggingFaceH4/zephyr-7b-beta``), consulted only when no listed model has the family, because a
    fine-tune named after it (``OpenBuddy/openbuddy-zephyr-7b-v14.1``) keeps its base's shapes."""
    from advisor.estimate.model_names import parse_name

    models, full, _bare = _catalog()
    names: list[str] = list(models)
    if aliases:  # ``full`` holds each alias as written, then lower-cased: keep the first spelling of each
        seen = {hub_id.lower() for hub_id in models}
        names = []
        for name in full:
            if "/" in name and name.lower() not in seen:
                seen.add(name.lower())
                names.append(name)
    out: dict[tuple[tuple[str, ...], str], list[tuple[tuple[str, ...], str]]] = {}
    for hub_id in names:
        parts = parse_name(hub_id)
        if parts.size is None or not parts.before:
            continue
        out.setdefault((parts.before, parts.size), []).append((parts.after, hub_id))
    return out


def _family_and_size(parts: Any) -> tuple[str, str, str | None] | None:
    """(hub id, family, alias): the listed model whose family ends the tokens before the size (``openhermes
    2.5 mistral`` | 7b), or else starts those after it (``zephyr`` | 7b | ``gemma sft``); the longest family
    wins, then the entry whose other tokens the name shares (v0.2, instruct), then the plainest
    (Mistral-7B-v0.1 before v0.3). Only when no model has the family, a listed alias of that family and size
    (``zephyr`` | 7b: HuggingFaceH4/zephyr-7b-beta), named as the third item."""
    from advisor.estimate.model_names import ROLE_TOKENS

    if parts.size is None:
        return None
    wanted = set(parts.tokens)

    def rank(entry: tuple[tuple[str, ...], str]) -> tuple[int, int, tuple[str, ...], str]:
        after, hub_id = entry
        extra = tuple(t for t in after if t not in wanted and t not in ROLE_TOKENS)
        roles = sum(1 for t in after if t in ROLE_TOKENS and t not in wanted)
        return len(extra), roles, extra, hub_id

    for aliases in (False, True):
        index = _family_index(aliases)
        family = next((f for f in _family_candidates(parts) if (f, parts.size) in index), None)
        if family is None:
            continue
        _after, hub_id = min(index[(family, parts.size)], key=rank)
        if not aliases:
            return hub_id, _family_label(family), None
        return _catalog()[1][hub_id], _family_label(family), hub_id
    return None


@lru_cache(maxsize=1)
def _stand_ins() -> tuple[Any, ...]:
    """The catalog's size stand-ins (advisor.estimate.size_match), counted once."""
    from advisor.estimate.size_match import stand_ins

    return stand_ins(_catalog()[0])


def _family_candidates(parts: Any) -> list[tuple[str, ...]]:
    """The families a name may write, longest first: the tokens that end those before its size, then those
    that start the ones after it."""
    before = [parts.before[-n:] for n in range(len(parts.before), 0, -1)]
    return before + [parts.after[:n] for n in range(len(parts.after), 0, -1)]


def _family_listed(parts: Any) -> bool:
    """A listed model (or alias) has the family the name writes, at some other size."""
    families = {family for index in (_family_index(False), _family_index(True)) for family, _size in index}
    return any(f in families for f in _family_candidates(parts))


def _cached_base_model(repo_id: str) -> tuple[str, str] | None:
    """(base model, why) from the files of ``repo_id`` in the local HF cache: its model card's
    ``base_model`` (the Hub's model-card metadata, huggingface_hub ModelCardData.base_model), an
    adapter_config.json's ``base_model_name_or_path`` (PEFT's), or a config.json with no ``model_type`` but
    a ``_name_or_path``. Only the cache is read; nothing when the repo was never cached."""
    if not _cached_repo_dir(repo_id):
        return None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    from advisor.sources.read import ReadRefused, read_text_file

    def cached(filename: str) -> str | None:
        found = try_to_load_from_cache(repo_id, filename, cache_dir=str(_hub_cache_dir()))
        if not isinstance(found, str) or not Path(found).is_file():
            return None
        try:
            return read_text_file(Path(found), 1024 * 1024)
        except (OSError, UnicodeDecodeError, ReadRefused):
            return None

    config = _json_object(cached("config.json"))
    if config is not None and _names_its_origin(config):
        base = str(config["_name_or_path"])
        return base, f"its cached config.json has no model_type and names _name_or_path {base}"
    adapter = _json_object(cached("adapter_config.json"))
    if adapter is not None and _is_repo_name(adapter.get("base_model_name_or_path")):
        base = str(adapter["base_model_name_or_path"])
        return base, f"its cached adapter_config.json names base_model_name_or_path {base}"
    card = cached("README.md")
    base_model = _card_base_model(card) if card else None
    if base_model is not None:
        return base_model, f"its cached model card names base_model {base_model}"
    return None


def _names_its_origin(config: dict[str, Any]) -> bool:
    """A config.json that cannot be counted (no model_type) but names the repo it was saved from."""
    return not config.get("model_type") and _is_repo_name(config.get("_name_or_path"))


def _json_object(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _is_repo_name(value: Any) -> bool:
    return isinstance(value, str) and _looks_like_repo_id(value.strip()) and "/" in value


def _card_base_model(text: str) -> str | None:
    """``base_model: org/name`` (or the first item of its list) in the card's YAML front matter."""
    if not text.startswith("---"):
        return None
    end = text.find("\n---", 3)
    lines = text[3 : end if end > 0 else len(text)].splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"base_model\s*:\s*(.*)$", line)
        if m is None:
            continue
        value = m.group(1).strip().strip("'\"")
        if not value and i + 1 < len(lines):
            item = re.match(r"\s*-\s*(.+)$", lines[i + 1])
            value = item.group(1).strip().strip("'\"") if item else ""
        return value if _is_repo_name(value) else None
    return None
