"""Keys of a config file against what its consumer accepts: unknown, removed, wrongly typed.

The known keys ship as data (advisor/data/keys, generated from the real classes by
tools/gen_known_keys.py), so transformers is never imported here.
"""

from __future__ import annotations

from typing import Any

from advisor.core.document import Document, KeyPath, Location, pointer, refused_number
from advisor.core.suggest import close_matches
from advisor.plan.context import CheckContext
from advisor.sources import known_keys as kk

# Below this share of known keys, the file is some other project's dialect that merely shares
# TrainingArguments names (open-instruct's own dataclass, say): judging its keys would be noise.
MIN_KNOWN_SHARE = 0.6

# Sections that describe each mapping of a list: axolotl's `datasets:` entries (SFTDataset, DPODataset...,
# whose legacy message_field_role / message_field_content are remapped with a warning).
ENTRY_SECTIONS = {("axolotl", ("datasets",))}
MAX_ENTRIES = 200

# Keys here are keyword arguments of whichever optimizer or scheduler `type` names (DeepSpeed's
# FusedAdam takes adam_w_mode, OneBitAdam takes freeze_step...): one table cannot judge them.
OPEN_SECTIONS = {("optimizer", "params"), ("scheduler", "params")}

# Projects that parse TrainingArguments-like YAML with their own dataclasses; two of these keys
# identify one. We ship no table for them, so their files are not judged key by key.
FOREIGN_DIALECTS = {
    "open-instruct": {
        "with_tracking",
        "checkpointing_steps",
        "use_slow_tokenizer",
        "dataset_mixer_list",
        "dataset_mix_dir",
        "exp_name",
    },
    "mcore-adapter (LLaMA-Factory USE_MCA)": {
        "tensor_model_parallel_size",
        "pipeline_model_parallel_size",
        "use_distributed_optimizer",
        "overlap_param_gather",
    },
}


def dialect_of(doc: Document) -> str | None:
    if doc.kind == "accelerate":
        return "accelerate"
    if doc.kind == "deepspeed":
        return "deepspeed"
    if doc.kind == "axolotl":
        return "axolotl"
    if doc.kind == "training_args":
        data = doc.data if isinstance(doc.data, dict) else {}
        if any(len(keys & set(data)) >= 2 for keys in FOREIGN_DIALECTS.values()):
            return None
        if doc.dialect == "llamafactory":
            return "llamafactory_v1" if "dist_config" in data or "model_class" in data else "llamafactory"
        return "trl" if doc.dialect == "trl" else "training_args"
    return None


def _loc(doc: Document, path: KeyPath, *, value: bool = False) -> Location:
    s = doc.span(path, value=value)
    return Location(doc.path, s.line, s.col, pointer(path))


# Findings of one kind per file, then one summary finding: 99,000 unknown keys took 20 s (a did-you-mean
# search per key) and would be 99,000 lines nobody reads; rules also walk these lists in comprehensions,
# which the evaluator caps.
MAX_ITEMS_PER_KIND = 50
# difflib searches for a did-you-mean; each costs ~0.1 ms against a dialect's few hundred keys.
MAX_SUGGESTIONS = 200


def key_items(doc: Document, context: CheckContext) -> dict[str, list[dict[str, Any]]]:
    out = _key_items(doc, context)
    for kind, items in out.items():
        if kind in ("removed_keys", "deprecated_keys"):
            for item in items:
                item.setdefault("rename", None)  # what a fix may rename the key to (_add_rename)
        if len(items) > MAX_ITEMS_PER_KIND:
            rest = items[MAX_ITEMS_PER_KIND:]
            summary = dict(rest[0])
            summary.pop("suggestion", None)
            summary["message"] = f"{len(rest)} more like these in this file are not listed ({_WHAT[kind]})"
            out[kind] = [*items[:MAX_ITEMS_PER_KIND], summary]
    return out


_WHAT = {
    "unknown_keys": "unknown keys",
    "removed_keys": "removed keys",
    "deprecated_keys": "deprecated keys",
    "dropped_flags": "flags the script drops",
    "type_errors": "wrongly typed values",
}
_OUT_KIND = {"unknown": "unknown_keys", "removed": "removed_keys", "deprecated": "deprecated_keys"}


def _key_items(doc: Document, context: CheckContext) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {kind: [] for kind in _WHAT}
    if doc.kind == "launch":
        out["type_errors"] = launch_flag_errors(doc)
        from advisor.facts.script_flags import script_flag_items

        for kind, items in script_flag_items(doc, context).items():
            out[kind].extend(items)
        return out
    from advisor.facts.script_readers import may_load_itself

    layout = None
    if may_load_itself(
        doc, context
    ):  # the script loads it itself and hands its sections on (issue 20 item 7)
        from advisor.facts.script_layout import layout_key_items

        layout = layout_key_items(doc, context)
    if layout is not None:
        for kind, items in layout.items():
            out[kind].extend(items)
        return out
    dialect = dialect_of(doc)
    if dialect is None or not isinstance(doc.data, dict):
        return out
    if dialect in {"training_args", "trl"} and _own_parser_reads(doc):
        return out
    top = [k for k in doc.data if isinstance(k, str)]
    consumers = _script_consumers(doc, dialect, context)
    if top and dialect in {"training_args", "trl"} and consumers is None:
        known = kk.known_keys(dialect)
        share = sum(1 for k in top if k in known or kk.removed_key(dialect, k)) / len(top)
        if share < MIN_KNOWN_SHARE:
            return out
    described = kk.sections(dialect)
    budget = [MAX_SUGGESTIONS]
    for section in sorted(described, key=len):
        if section in OPEN_SECTIONS:
            continue
        node = doc.get(section) if section else doc.data
        if isinstance(node, list) and (dialect, section) in ENTRY_SECTIONS:
            for index, entry in enumerate(node[:MAX_ENTRIES]):
                if isinstance(entry, dict):
                    _check_section(doc, dialect, section, entry, out, budget, context, at=(*section, index))
            continue
        if not isinstance(node, dict):
            continue
        _check_section(doc, dialect, section, node, out, budget, context)
    if consumers is not None:
        _judge_top_level_by_scripts(doc, consumers, out)
    elif out["unknown_keys"] and (doc.consumers or dialect in {"training_args", "trl"}):
        # judged alone, the keys the reading scripts' own dataclasses declare are still theirs (issue 20
        # item 10: a SimPOConfig subclass adding gamma_beta_ratio); with no launch naming the file, the
        # project's scripts that parse a config file are its readers
        from advisor.facts.script_flags import own_fields

        own = own_fields(doc, context)
        out["unknown_keys"] = [i for i in out["unknown_keys"] if not (_is_top_level(i) and i["key"] in own)]
    return out


def _own_parser_reads(doc: Document) -> bool:
    """Whether a launcher's own parser reads the file (ms-swift's: a launch hands it over, or its keys
    are that parser's alone): its keys are not TrainingArguments' or TRL's to judge, and no table of
    them ships."""
    from advisor.sources import launchers

    return bool(doc.read_by) or launchers.config_owner(doc.data) is not None


def _script_consumers(doc: Document, dialect: str, context: CheckContext) -> Any:
    """The scripts the runs hand this TrainingArguments / TRL file to, when all of them can be read
    whole (advisor.facts.script_flags); None: the file is judged alone."""
    if dialect not in {"training_args", "trl"} or not doc.consumers:
        return None
    from advisor.facts.script_flags import config_consumers

    return config_consumers(doc, context)


def _judge_top_level_by_scripts(doc: Document, consumers: Any, out: dict[str, list[dict[str, Any]]]) -> None:
    """Top-level keys are the scripts' to judge: their own dataclass fields are accepted, and a key none
    of their dataclasses has is refused at start (type checks of known keys stay)."""
    from advisor.facts.script_flags import config_key_items

    for kind, items in config_key_items(doc, consumers).items():
        kept = [i for i in out[kind] if not _is_top_level(i)]
        out[kind] = kept + items


def _is_top_level(item: dict[str, Any]) -> bool:
    ptr = item["location"].key or ""
    return ptr.count("/") == 1


def _check_section(
    doc: Document,
    dialect: str,
    section: tuple[str, ...],
    node: dict[str, Any],
    out: dict[str, list[dict[str, Any]]],
    budget: list[int],
    context: CheckContext,
    at: KeyPath | None = None,
) -> None:
    """Judge the keys of one section; ``budget`` holds the did-you-mean searches left for the file;
    ``at`` is where the mapping is when it is one entry of a list (``("datasets", 0)``)."""
    known = kk.known_keys(dialect, section)
    refused = {p.key for p in doc.problems if p.detail == "refused-number"}
    strict = kk.is_strict(dialect, section)
    coerces = kk.coerces(dialect, section)
    name = _DIALECT_NAMES.get(dialect, dialect)
    where = f"a key of `{'.'.join(section)}` in {_article(name)}" if section else f"{_article(name)} key"
    versioned = _versioned_sources(doc, dialect, context, section) if at is None else None
    # a strict section with no per-release key data: its tables say what their own release refuses
    other = _other_release(doc, dialect, context) if strict and versioned is None else None
    own = kk.own_keys(dialect, section) if dialect == "llamafactory" else frozenset()
    for key, value in node.items():
        if not isinstance(key, str):
            continue
        path = (*(section if at is None else at), key)
        verdict = None
        if versioned is not None and key not in own:
            verdict = _versioned_verdict(versioned, key)
            if verdict is not None:
                if verdict["kind"] != "present":
                    item = {"location": _loc(doc, path), "key": key, "message": verdict["message"]}
                    if verdict["kind"] == "unknown":
                        item["message"] += _unknown_release_note(versioned, strict)
                        severity = "error" if strict and not _unknown_releases(versioned) else None
                        item.update(suggestion=verdict.get("suggestion"), severity=severity)
                    else:
                        item["severity"] = None
                        if not section and at is None:
                            item["replacement"] = verdict["replacement"]
                            _add_rename(item, dialect, verdict["package"], verdict["release"], node)
                    out[_OUT_KIND[verdict["kind"]]].append(item)
                    continue
                if key not in known:
                    continue  # accepted by the pinned release; no type data for it
        removal = kk.removed_key(dialect, key, section)
        if removal is not None and verdict is not None and _predates(versioned or [], removal):
            removal = None  # the project pins a release before the removal or deprecation: not for it yet
        if removal is not None and removal.package in _unknown_releases(versioned):
            removal = None  # a git commit of the package: whether it still has the key cannot be known
        if removal is not None:
            replacement = f"; use {removal.replacement}" if removal.replacement else ""
            verb = "is deprecated since" if removal.status == "deprecated" else "was removed in"
            item = {
                "location": _loc(doc, path),
                "key": key,
                "message": f"'{key}' {verb} {removal.package} {removal.version}{replacement}"
                + (f" ({removal.note})" if removal.note else "")
                + (
                    _current_note(removal.package) if dialect in _VERSIONED_DIALECTS and not versioned else ""
                ),
                "severity": "error" if removal.refused else None,
            }
            if not section and at is None and not removal.refused:
                item["replacement"] = removal.replacement
                _add_rename(item, dialect, removal.package, _current_release(removal.package), node)
            out["deprecated_keys" if removal.status == "deprecated" else "removed_keys"].append(item)
            continue
        if key not in known:
            if key.startswith("_") and not strict:
                continue  # "_comment": the JSON convention for a comment, ignored by design
            guess = None
            if budget[0] > 0:
                budget[0] -= 1
                guess = kk.suggest(dialect, key, section)
                if versioned is not None and guess is not None:
                    guess = _readable_guess(versioned, key, guess)
            if dialect == "training_args" and not section and guess is None:
                # HfArgumentParser files are read together with the script's own dataclasses
                # (ModelArguments, DataTrainingArguments...), which we cannot see: only a near miss
                # of a TrainingArguments key is judged.
                continue
            hint = f" (did you mean '{guess}'?)" if guess else ""
            consequence = "it refuses unknown keys" if strict else "the key is silently ignored"
            unsure = _unknown_releases(versioned)
            message = f"'{key}' is not {where}{_release_note(versioned)}{hint}"
            if unsure:
                message += _unknown_release_note(versioned, strict)
            elif other is not None:
                message += _other_release_note(dialect, other)
            else:
                message += f": {consequence}"
            out["unknown_keys"].append(
                {
                    "location": _loc(doc, path),
                    "key": key,
                    "suggestion": guess,
                    "message": message,
                    "severity": "error" if strict and not unsure and other is None else None,
                }
            )
            continue
        ft = kk.field_type(dialect, key, section)
        if ft is None or path in refused:
            continue  # a refused number (NaN, inf, too large) is already the reader's GA001
        removed_in = kk.removed_choice(dialect, key, value)
        if removed_in is not None:
            # a value an older release takes (`optim: adamw_hf`) is a removal for the judged release, not a
            # type error: the current choices know nothing of it
            dropped = _removed_choice_item(doc, path, key, value, removed_in, versioned)
            if dropped is not None:
                out["removed_keys"].append(dropped)
            continue
        problem = kk.check_type(ft, value, coerces=coerces) or _range_problem(dialect, path, value)
        if problem is None:
            continue
        if any(p.kind == "yaml11-scalar" and p.key == path for p in doc.problems):
            continue  # GA003 already says why this scalar is not what it looks like
        out["type_errors"].append(
            {
                "location": _loc(doc, path, value=True),
                "key": key,
                "message": f"{key}: {problem}{_quote_hint(doc, ft, value)}"
                + (_other_release_type_note(dialect, other) if other is not None else ""),
                "severity": "error" if other is None else "warning",
            }
        )


# --------------------------------------------------------------------------------------------------
# keys judged against the release the project pins (advisor.facts.versions)
# --------------------------------------------------------------------------------------------------

# The classes whose keys a dialect's top level takes, per package (versions.json class names). TRL
# recipes (TrlParser) take one TRL config plus ModelConfig and ScriptArguments: which one the script
# builds is not in the file, so the union of TRL's dataclasses is the fair reading.
_TRL_CLASSES = "*"
_VERSIONED: dict[tuple[str, tuple[str, ...]], tuple[tuple[str, tuple[str, ...] | str], ...]] = {
    ("training_args", ()): (("transformers", ("TrainingArguments",)),),
    ("trl", ()): (("transformers", ("TrainingArguments",)), ("trl", _TRL_CLASSES)),
    # LLaMA-Factory's TrainingArguments extends Seq2SeqTrainingArguments (llamafactory 0.9.5
    # hparams/training_args.py); unpinned, the newest transformers its requirement allows judges
    ("llamafactory", ()): (("transformers", ("Seq2SeqTrainingArguments",)),),
    # accelerate config files are ClusterConfig (accelerate commands/config/config_args.py)
    ("accelerate", ()): (("accelerate", ("ClusterConfig",)),),
    ("deepspeed", ("zero_optimization",)): (("deepspeed", ("DeepSpeedZeroConfig",)),),
}
_VERSIONED_DIALECTS = frozenset(d for d, _ in _VERSIONED)


def _versioned_sources(
    doc: Document, dialect: str, context: CheckContext, section: tuple[str, ...] = ()
) -> list[tuple[Any, tuple[str, ...]]] | None:
    """[(Target, classes)] when the project pins (or targets) a release of a package the dialect reads;
    None when nothing is pinned: then the current release's tables judge, as before."""
    spec = _VERSIONED.get((dialect, section))
    if spec is None:
        return None
    from advisor.facts import versions

    targets = versions.targets_for(doc.path, context.settings_near(doc.path), context)
    if dialect == "llamafactory" and not targets["transformers"].pinned:
        requirement = kk.dialect_info("llamafactory")["source"].get("transformers_requirement") or ""
        requirement = requirement.removeprefix("transformers")
        ceiling = requirement and versions.resolve_spec(
            "transformers", requirement, f"the newest that LLaMA-Factory's requirement {requirement} allows"
        )
        if ceiling:
            targets["transformers"] = ceiling
    out = []
    for package, classes in spec:
        target = targets.get(package)
        if target is None:
            return None
        # the one str value is _TRL_CLASSES ("*"): every class of the package
        out.append((target, versions.class_names(package) if isinstance(classes, str) else classes))
    if not any(t.pinned or not t.known for t, _ in out):
        return None
    return out


def _unknown_releases(sources: list[tuple[Any, tuple[str, ...]]] | None) -> dict[str, Any]:
    """{package: Target} of the judged packages whose release cannot be known (a git commit is pinned)."""
    return {t.package: t for t, _ in sources or () if not t.known}


def _unknown_release_note(sources: list[tuple[Any, tuple[str, ...]]] | None, strict: bool) -> str:
    """Why a key no shipped release has is still not known to be refused: the tree pinned may have it."""
    unsure = _unknown_releases(sources)
    if not unsure:
        return ""
    from advisor.facts import versions

    spans = []
    for package in unsure:
        shipped = versions.releases(package)
        spans.append(f"{package} {versions.minor(shipped[0])} to {versions.minor(shipped[-1])}")
    refused = "refused at start" if strict else "silently ignored"
    return (
        f": no release we have data for has it ({', '.join(spans)}), and which release the pinned tree is "
        f"cannot be known, so whether it reads the key is unknown (where it does not, the key is {refused})"
    )


def _release_tuple(text: str) -> tuple[int, ...] | None:
    parts = text.split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() and len(p) < 10 for p in parts) else None


def _predates(sources: list[tuple[Any, tuple[str, ...]]], removal: Any) -> bool:
    """Whether every pinned release of the removal's package is older than the release that removed or
    deprecated the key (transformers 4.57 pinned: a 5.23 deprecation is not its concern)."""
    since = _release_tuple(str(removal.version))
    pinned = [_release_tuple(t.release) for t, _ in sources if t.package == removal.package]
    return since is not None and bool(pinned) and all(r is not None and r < since for r in pinned)


def _removed_choice_item(
    doc: Document,
    path: KeyPath,
    key: str,
    value: Any,
    removed_in: str,
    versioned: list[tuple[Any, tuple[str, ...]]] | None,
) -> dict[str, Any] | None:
    """GA005's item for a value that transformers ``removed_in`` dropped from ``key``'s choices, or None when
    the pinned release predates the removal (or is a tree whose release cannot be known)."""
    pinned = [t for t, _ in versioned or () if t.package == "transformers"]
    if any(not t.known for t in pinned):
        return None
    since = _release_tuple(removed_in)
    if pinned and since is not None and all((_release_tuple(t.release) or since) < since for t in pinned):
        return None
    judged = f"; it is not a value of {pinned[0].label}" if pinned else _current_note("transformers")
    return {
        "location": _loc(doc, path, value=True),
        "key": key,
        "message": f"{key}: {value!r} was removed in transformers {removed_in}{judged}",
        "severity": None,
    }


def _versioned_verdict(sources: list[tuple[Any, tuple[str, ...]]], key: str) -> dict[str, Any] | None:
    """How the pinned releases read ``key``: present, deprecated, removed or unknown (None: no release
    we ship ever had it, so the current tables judge it, with its did-you-mean)."""
    from advisor.facts import versions

    found = [(t, versions.key_status(t.package, classes, key, t.index)) for t, classes in sources]
    if any(st.state == "present" for _, st in found):
        return {"kind": "present"}
    for state in ("deprecated", "removed", "new"):
        for target, st in found:
            if st.state != state:
                continue
            use = f"; use {st.replacement}" if st.replacement else ""
            judged = {"package": target.package, "release": target.release, "replacement": st.replacement}
            if state == "deprecated":
                message = f"'{key}' is deprecated in {target.label}{use}"
                return {"kind": "deprecated", "message": message, **judged}
            if state == "removed":
                message = (
                    f"'{key}' was removed in {target.package} {st.first} (last in {st.last}); "
                    f"it is not a key of {target.label}{use}"
                )
                return {"kind": "removed", "message": message, **judged}
            known = versions.keys_at(target.package, classes_of(sources, target), target.index)

            guess = close_matches(key, sorted(known), n=1, cutoff=0.8)
            hint = f" (did you mean '{guess[0]}'?)" if guess else ""
            message = f"'{key}' is not a key of {target.label}: it was added in {st.first}{hint}"
            return {"kind": "unknown", "message": message, "suggestion": guess[0] if guess else None}
    return None


def _add_rename(
    item: dict[str, Any], dialect: str, package: str | None, release: str | None, node: dict[str, Any]
) -> None:
    """`rename`: the replacement a fix may write in the key's place (advisor/facts/key_renames.py), or
    None; why not is added to the message when the reason is the file's (both keys set, say)."""
    from advisor.facts.key_renames import rename_for

    new, why = rename_for(dialect, package, release, item["key"], item.pop("replacement", None), node)
    item["rename"] = new
    if why:
        item["message"] += f"; {why}"


def _current_release(package: str | None) -> str | None:
    from advisor.facts import versions

    shipped = versions.releases(package) if package else []
    return shipped[-1] if shipped else None


def _other_release(doc: Document, dialect: str, context: CheckContext) -> Any | None:
    """The pinned release of the dialect's package (a Target) when the dialect's key tables were read from
    another minor release: what that release refuses is then not known from them. None when nothing is
    pinned (the current release, the tables', judges) or the pin is the tables' release."""
    source = kk.dialect_info(dialect).get("source") or {}
    package, version = source.get("package"), source.get("version")
    if not isinstance(package, str) or not isinstance(version, str):
        return None
    from advisor.facts import versions

    target = versions.targets_for(doc.path, context.settings_near(doc.path), context).get(package)
    if target is None or not target.pinned:
        return None
    if target.known and versions.minor(target.release) == versions.minor(version):
        return None
    return target


def _other_release_note(dialect: str, target: Any) -> str:
    source = kk.dialect_info(dialect)["source"]
    return (
        f": {source['package']} {source['version']} refuses unknown keys here; whether the pinned release"
        f" does is unknown, because the key tables of this section are of {source['version']} only"
        f" ({target.why})"
    )


def _other_release_type_note(dialect: str, target: Any) -> str:
    version = kk.dialect_info(dialect)["source"]["version"]
    return (
        f" for {kk.dialect_info(dialect)['source']['package']} {version}; whether the pinned release checks"
        f" the type is unknown, because the key tables of this section are of {version} only ({target.why})"
    )


def _release_note(sources: list[tuple[Any, tuple[str, ...]]] | None) -> str:
    if not sources:
        return ""
    return " of " + ", ".join(t.label for t, _ in sources)


def _readable_guess(sources: list[tuple[Any, tuple[str, ...]]], key: str, guess: str) -> str | None:
    """A did-you-mean the pinned releases can read: a key of the current tables that the pinned release
    lacks (``eval_strategy`` for transformers 4.40) gives way to the closest key the release has."""
    from advisor.facts import versions

    statuses = [versions.key_status(t.package, classes, guess, t.index) for t, classes in sources]
    if all(st.state == "never" for st in statuses) or any(st.state == "present" for st in statuses):
        return guess  # not a versioned key (a TRL recipe's extra), or readable

    readable: set[str] = set()
    for target, classes in sources:
        readable |= versions.keys_at(target.package, classes, target.index)
    match = close_matches(key, sorted(readable), n=1, cutoff=0.8)
    return match[0] if match else None


def classes_of(sources: list[tuple[Any, tuple[str, ...]]], target: Any) -> tuple[str, ...]:
    return next(classes for t, classes in sources if t is target)


def _current_note(package: str | None) -> str:
    """Which release a verdict from the current tables is for (nothing pinned)."""
    if package is None:
        return ""
    from advisor.facts import versions

    shipped = versions.releases(package)
    return f" (judged for {package} {shipped[-1]}, the current release: nothing pinned)" if shipped else ""


# Counts the consumer asserts are positive: DeepSpeed's _batch_assertion (deepspeed 0.19.8
# runtime/config.py lines 596-600) and, before it, floor division by the micro batch (line 621).
_POSITIVE = {
    ("deepspeed", ("train_batch_size",)),
    ("deepspeed", ("train_micro_batch_size_per_gpu",)),
    ("deepspeed", ("gradient_accumulation_steps",)),
}


def _range_problem(dialect: str, path: KeyPath, value: Any) -> str | None:
    if (dialect, path) not in _POSITIVE or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if value > 0:
        return None
    return f"{value} is not a count: DeepSpeed asserts it is greater than 0 and fails at start-up"


def _quote_hint(doc: Document, ft: kk.FieldType, value: Any) -> str:
    """For a number where only a string is taken (accelerate `gpu_ids: 0`): how to write it."""
    if ft.kinds != ("str",) or isinstance(value, bool) or not isinstance(value, int | float):
        return ""
    quote = '"' if doc.path.suffix.lower() == ".json" else "'"
    return f"; quote it: {quote}{value}{quote}"


_DIALECT_NAMES = {
    "training_args": "TrainingArguments",
    "trl": "TRL config",
    "llamafactory": "LLaMA-Factory",
    "llamafactory_v1": "LLaMA-Factory v1",
    "axolotl": "axolotl config",
    "accelerate": "accelerate config",
    "deepspeed": "DeepSpeed config",
}


def _article(name: str) -> str:
    return ("an " if name[0].lower() in "aeiou" else "a ") + name


# --------------------------------------------------------------------------------------------------
# TrainingArguments flags on a launch command line
# --------------------------------------------------------------------------------------------------

# transformers.hf_argparser.string_to_bool: what `--bf16 X` accepts (not on/off).
_HF_BOOL_WORDS = frozenset({"yes", "true", "t", "y", "1", "no", "false", "f", "n", "0"})


def _flags_not_training_arguments(launcher: str | None) -> bool:
    """Whether the launcher's run flags are read by no argparse built from TrainingArguments: a server's
    own options (vLLM), overrides of the launcher's own config (axolotl's `--key=value`)."""
    from advisor.sources import launchers

    spec = launchers.spec_of(launcher)
    return spec.serves or spec.flags_override_config


def _flag_problem(ft: kk.FieldType, text: str) -> str | None:
    """Why argparse (HfArgumentParser: string values go through the field's type) refuses ``text``."""
    if ft.kinds == ("bool",):
        if text.strip().lower() in _HF_BOOL_WORDS:
            return None
        return f"expected a boolean (true/false, yes/no, 1/0), got {text!r}"
    return kk.check_type(ft, text, coerces=True)


def _refused_flag(ft: kk.FieldType, text: str) -> str | None:
    """A number argparse converts but no setting takes: float() reads inf, nan and 1e400."""
    if not {"int", "float"} & set(ft.kinds):
        return None
    try:
        return refused_number(float(text))
    except ValueError:
        return None


def launch_flag_errors(doc: Document) -> list[dict[str, Any]]:
    """Values of TrainingArguments flags after the script (`train.py --per_device_train_batch_size=abc`)
    that the script's HfArgumentParser cannot convert: argparse exits at start-up, on the cluster."""
    script = doc.data
    commands = getattr(script, "commands", None) or []
    known = kk.known_keys("training_args")
    out: list[dict[str, Any]] = []
    for idx, cmd in enumerate(commands):
        if _flags_not_training_arguments(cmd.launcher):
            continue
        names = [k for k in cmd.script_args if k in known]
        if not names:
            continue  # a script with its own flags, none of them TrainingArguments'
        for key in names:
            word = cmd.script_args[key]
            if word.text is None or word.raw.startswith("-"):
                continue  # unknown statically, or a bare flag (argparse's own error, or a store_true)
            ft = kk.field_type("training_args", key)
            if ft is None:
                continue
            if " " in word.text and not {"list", "str", "any", "dict"} & set(ft.kinds):
                continue  # several words: argparse would complain about the extra ones, not the type
            refused = _refused_flag(ft, word.text)
            problem = _flag_problem(ft, word.text) if refused is None else None
            if problem is None and refused is None:
                continue
            path = ("commands", idx, "script_args", key)
            message = f"--{key} {word.text}: " + (
                refused
                or f"{problem}; the script's argument parser converts the flag with the field's type and "
                "exits at start-up"
            )
            out.append(
                {"location": _loc(doc, path, value=True), "key": key, "message": message, "severity": "error"}
            )
    return out
