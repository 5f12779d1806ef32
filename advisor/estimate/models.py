"""Find a model's config.json offline (and its exact parameter count when local weights exist).

Sources, in order:
1. a local path: a folder holding config.json, or the config file itself;
2. the local Hugging Face cache (``huggingface_hub.try_to_load_from_cache``; the package is imported only
   when the cache folder for that repo exists);
3. the built-in catalog ``advisor/data/models/catalog.json`` (hub ids, lower-case ids, names without the
   org, and listed aliases such as ``-Instruct`` variants with the same architecture), plus two rules: an
   unlisted ``-Instruct``/``-Chat``/``-it``/``-Base`` variant of a listed id of the same org, and a mirror in
   ``unsloth/`` or ``NousResearch/`` under the upstream repo name (``-bnb-4bit``: a pre-quantized copy);
4. with ``online=True`` only: ``hf_hub_download(repo_id, "config.json")`` (config only, never weights).

When ``model.safetensors`` or a complete ``model.safetensors.index.json`` set of shards sits next to the
config, the 8-byte-length-prefixed JSON headers are read (no tensor data) and give the exact count.
"""

from __future__ import annotations

import json
import math
import os
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


def _from_hf_cache(repo_id: str) -> Path | None:
    if not _looks_like_repo_id(repo_id):
        return None
    if not (_hub_cache_dir() / f"models--{repo_id.replace('/', '--')}").is_dir():
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
    name_or_path: str, online: bool = False, boundary: ProjectBoundary | None = None
) -> ModelInfo | None:
    """Find the config.json for a local path or hub id; None when no source has it. With ``boundary``
    (a model named by a project's file), a local folder whose files lead out of it is not read."""
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
            if info is not None:
                return info
    if hit is not None:
        models = _catalog()[0]
        return ModelInfo(
            name=name,
            hub_id=hit.hub_id,
            source="catalog",
            config=dict(models[hit.hub_id]),
            notes=[hit.note] if hit.note else [],
            prequantized=hit.prequantized,
        )
    if online and _looks_like_repo_id(name):
        downloaded = _from_hub(name)
        if downloaded is not None:
            return _info_from_file(name, downloaded, "hub", name)
    return None
