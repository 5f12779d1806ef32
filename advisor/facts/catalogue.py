"""The fact catalogue: every namespace a rule can read and every fact in it, generated from the classes.

A namespace is declared once, as a class in the module that builds it (advisor/facts/declare.py); the
run's builders are listed in advisor/facts/registry.py, the namespaces other stages build in
advisor/facts/stage_namespaces.py. This module turns those classes into the plain declarations three
uses read:

- the engine checks every expression of every rule file against them when the rule loads
  (advisor/facts/references.py): an unknown name, a comparison of a string fact with a number, or a call
  of an unknown helper is refused with the rule file, its line and a did-you-mean;
- `gpu-advise facts` and docs/facts.md (tools/gen_fact_docs.py) list them;
- the rule caches are keyed by a digest of the declarations (`digest`).

Types: `int`, `float`, `number` (int or float), `bool`, `str`, `list`, `list[int]`, `list[str]`,
`list[dict]`, `dict`, `any`, unions with `|`. Every fact may also read as None (unset or unknown).
A list of mappings declares the keys of its elements (`items`): what `item.<key>` reads in a rule whose
`for_each` is that fact. Dynamic namespaces (training, accelerate, deepspeed) hold the keys of the files
they are read from: their names are the shipped key data (advisor/data/keys/*.json).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from advisor.core.records import field, record
from advisor.facts import stage_namespaces as stage
from advisor.facts.declare import FactNamespace, Scope
from advisor.facts.document import DocumentFacts
from advisor.facts.registry import BUILD_ORDER, FACT_BUILDERS, Builder


@record(frozen=True, slots=True)
class Fact:
    name: str
    type: str
    doc: str
    unit: str = ""
    items: tuple[str, ...] = ()  # keys of each element, for a list of mappings


@record(frozen=True, slots=True)
class NamespaceDecl:
    name: str
    doc: str
    builder: str  # "module:function" that provides it
    requires: tuple[str, ...] = ()  # namespaces the builder reads (besides the plan)
    facts: tuple[Fact, ...] = ()
    scope: Scope = "run"
    # key data files (advisor/data/keys/<name>.json) whose keys are this namespace's entries: a
    # dynamic namespace holds the settings of a file, one entry per key (nested mappings as children)
    keys_from: tuple[str, ...] = ()
    open: bool = False  # any entry name (environment variables, launcher flags): not checked
    extra_keys: tuple[str, ...] = ()  # entries of a dynamic namespace that no key file lists
    _index: dict[str, Fact] = field(default_factory=dict, compare=False, repr=False)

    @property
    def dynamic(self) -> bool:
        return bool(self.keys_from) or self.open

    def fact(self, name: str) -> Fact | None:
        if not self._index and self.facts:
            self._index.update((f.name, f) for f in self.facts)
        return self._index.get(name)


def _declaration(cls: type[FactNamespace], builder: Builder | None = None) -> NamespaceDecl:
    return NamespaceDecl(
        cls.namespace,
        cls.doc,
        builder.path if builder is not None else cls.builder,
        builder.requires if builder is not None else cls.requires,
        tuple(Fact(f.name, f.type, f.doc, f.unit, f.items) for f in cls.facts.values()),
        cls.scope,
        cls.keys_from,
        cls.open,
        cls.extra_keys,
    )


_BY_FUNCTION = {b.function: b for b in BUILD_ORDER}

# the order of `gpu-advise facts` and docs/facts.md: the plan's own, the run's builders, the rest
CLASSES: tuple[type[FactNamespace], ...] = (
    stage.TrainingKeys,
    stage.AccelerateKeys,
    stage.DeepSpeedKeys,
    stage.LaunchFlags,
    stage.EnvVars,
    stage.ModelFacts,
    *(_BY_FUNCTION[f].cls for f in FACT_BUILDERS),
    stage.SettingsFacts,
    stage.ThresholdsFacts,
    stage.MeasuredFacts,
    DocumentFacts,
    stage.SuppressionFacts,
    stage.PolicyFacts,
)

NAMESPACES: tuple[NamespaceDecl, ...] = tuple(
    _declaration(cls, next((b for b in BUILD_ORDER if b.cls is cls), None)) for cls in CLASSES
)


@cache
def by_name() -> dict[str, NamespaceDecl]:
    return {ns.name: ns for ns in NAMESPACES}


def namespaces(scope: Scope) -> dict[str, NamespaceDecl]:
    return {ns.name: ns for ns in NAMESPACES if ns.scope == scope}


def source_files() -> list[Path]:
    """The modules that declare the namespaces (and this one)."""
    modules = {cls.__module__ for cls in CLASSES} | {__name__, "advisor.facts.declare"}
    return sorted(Path(str(sys.modules[m].__file__)) for m in modules)


@cache
def digest() -> str:
    """What rules checked at load depend on: every declaration (namespace, scope, fact, type, unit, items,
    key data), not the builders' code. The rule caches are keyed by it rather than by the ~35 declaring
    modules' contents, which a cold start would otherwise hash on every run."""
    from advisor.core.cache import value_digest

    plain = [
        (
            ns.name,
            ns.scope,
            ns.requires,
            ns.keys_from,
            ns.open,
            ns.extra_keys,
            [(f.name, f.type, f.unit, f.items) for f in ns.facts],
        )
        for ns in NAMESPACES
    ]
    return value_digest(plain)


@cache
def _key_data(name: str) -> dict[str, Any]:
    # the package's folder, not importlib.resources: that imports tempfile, shutil and zipfile (~10 ms)
    from advisor import PACKAGE_DIR

    text = (PACKAGE_DIR / "data" / "keys" / f"{name}.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


@cache
def dynamic_keys(name: str) -> frozenset[str]:
    """The entry names of a dynamic namespace: every key of its key data files, current or removed, in any
    section, and each section's name (a nested mapping of the file is a child namespace)."""
    decl = by_name()[name]
    keys: set[str] = set(decl.extra_keys)
    for source in decl.keys_from:
        data = _key_data(source)
        for section, meta in data.get("sections", {}).items():
            keys.update(meta.get("keys", {}))
            if section:
                keys.add(section.split("/")[0])
        for table in data.get("removed", {}).values():
            keys.update(table)
    return frozenset(keys)


def all_facts() -> Iterator[tuple[NamespaceDecl, Fact]]:
    for ns in NAMESPACES:
        for f in ns.facts:
            yield ns, f
