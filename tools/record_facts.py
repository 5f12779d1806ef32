"""Record what the fact builders set, to check the declarations of the fact namespace classes.

Every set is checked against its class already (advisor/facts/declare.py: an undeclared fact raises),
so what this finds is mostly the other way: declared facts that no run sets.

Runs every fixture project, every corpus folder (../shared/corpus, when present) and every rule example
through the pipeline, records each `Namespace.set` with the type of its value (and the keys of list
items), and prints what the catalogue does not declare and what no run set:

    python3 tools/record_facts.py            # undeclared facts and item keys, then never-set facts
    python3 tools/record_facts.py --json     # everything recorded, as JSON
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _type(value: object) -> str:
    name = type(value).__name__
    if isinstance(value, list | tuple) and value:
        return f"list[{','.join(sorted({type(v).__name__ for v in value}))}]"
    return name


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from advisor.core.provenance import Namespace, Value
    from advisor.engine.rule_engine import load_catalog
    from advisor.facts.catalogue import by_name
    from advisor.pipeline.check import CheckOptions, run_check

    types: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    items: dict[str, set[str]] = defaultdict(set)
    original = Namespace.set

    def record(self: Namespace, key: str, value: Value | Namespace) -> None:
        ns = self._name
        if isinstance(value, Namespace):
            types[ns][key].add("namespace")
        elif value.known and value.value is not None:
            types[ns][key].add(_type(value.value))
            if isinstance(value.value, list):
                items[f"{ns}.{key}"].update(k for v in value.value if isinstance(v, dict) for k in v)
        original(self, key, value)

    Namespace.set = record  # type: ignore[method-assign]
    folders = [p.parent for p in sorted((ROOT / "fixtures").rglob("expect.yaml"))]
    corpus = ROOT.parent / "shared" / "corpus"
    if corpus.is_dir():
        folders += [p for p in sorted(corpus.iterdir()) if p.is_dir()]
    with tempfile.TemporaryDirectory() as tmp:
        for rule in load_catalog():
            for i, ex in enumerate(rule.spec.examples):
                folder = Path(tmp) / f"{rule.code}-{i}"
                for name, text in ex.files.items():
                    (folder / name).parent.mkdir(parents=True, exist_ok=True)
                    (folder / name).write_text(text, encoding="utf-8")
                if ex.settings:
                    (folder / ".gpu-advise.toml").write_text(ex.settings, encoding="utf-8")
                folders.append(folder)
        here = Path.cwd()
        for folder in folders:
            os.chdir(folder)
            try:
                for hardware in (None, "4xH100-NVL"):
                    run_check([Path(".")], CheckOptions(hardware=hardware))
            except Exception as exc:  # a broken project is the check's business, not this tool's
                print(f"{folder}: {type(exc).__name__}: {exc}", file=sys.stderr)
            finally:
                os.chdir(here)
    if "--json" in argv:
        data = {ns: {k: sorted(v) for k, v in keys.items()} for ns, keys in types.items()}
        print(json.dumps({"types": data, "items": {k: sorted(v) for k, v in items.items()}}, indent=1))
        return 0
    declared = by_name()
    for ns, keys in sorted(types.items()):
        decl = declared.get(ns.split(".")[0])
        if decl is None:
            print(f"undeclared namespace {ns}")
            continue
        if decl.dynamic:
            continue
        for key, seen in sorted(keys.items()):
            fact = decl.fact(key)
            if fact is None:
                print(f"undeclared {ns}.{key}: {', '.join(sorted(seen))}")
            elif fact.items and (extra := sorted(items.get(f"{ns}.{key}", set()) - set(fact.items))):
                print(f"undeclared item keys of {ns}.{key}: {', '.join(extra)}")
    for decl in declared.values():
        # settings and thresholds are the settings' dataclasses, read as mappings: nothing sets them
        if not decl.dynamic and decl.scope == "run" and decl.builder != "advisor.facts:run_names":
            unset = [f.name for f in decl.facts if f.name not in types.get(decl.name, {})]
            if unset:
                print(f"never set in these runs: {decl.name}.{{{', '.join(unset)}}}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
