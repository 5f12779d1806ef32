"""Which preference trainer a training script instantiates (read, never run), for the estimator's
reference model: TRL's DPOTrainer and KTOTrainer build a frozen copy of the policy unless PEFT is used or
the reference log-probabilities are precomputed (trl 0.19.1 trainer/dpo_trainer.py:321-327,
kto_trainer.py:470-476; trl 1.16.0 trainer/dpo_trainer.py:907-929); CPOTrainer and ORPOTrainer take no
ref_model at all (trl 0.19.1 trainer/cpo_trainer.py:74 and orpo_trainer.py:78 subclass Trainer with one
model; SimPO is CPOTrainer's loss_type="simpo"), nor does SimPO's own trainer (princeton-nlp/SimPO
scripts/simpo_trainer.py subclasses transformers' Trainer)."""

from __future__ import annotations

import ast

from advisor.core.records import record
from advisor.facts.script_ast.nodes import last_id
from advisor.sources.python_source import tree_nodes

# TRL's preference trainers (trl 0.19.1 trainer/__init__.py; CPO and ORPO under trl.experimental in 1.16)
LIBRARY_TRAINERS = {"DPOTrainer": "dpo", "KTOTrainer": "kto", "CPOTrainer": "cpo", "ORPOTrainer": "orpo"}
REFERENCE_FREE = frozenset({"cpo", "orpo", "simpo"})
# a trainer of the repository's own, by its name when its bases do not tell (SimPOTrainer(Trainer))
_BY_NAME = (("simpo", "simpo"), ("orpo", "orpo"), ("cpo", "cpo"), ("kto", "kto"), ("dpo", "dpo"))
_MAX_DEPTH = 8


@record(frozen=True, slots=True)
class PreferenceTrainer:
    kind: str  # dpo | kto | cpo | orpo | simpo
    name: str  # the class the script instantiates, e.g. "CPOTrainer", "SimPOTrainer"
    line: int
    col: int


def preference_trainer(tree: ast.Module) -> PreferenceTrainer | None:
    """The first preference trainer the script instantiates (`CPOTrainer(...)`, a subclass of DPOTrainer
    defined in the script, a trainer named SimPOTrainer), in source order; None when it instantiates none."""
    classes: dict[str, ast.ClassDef] = {}
    calls: list[ast.Call] = []
    for node in tree_nodes(tree):
        if isinstance(node, ast.ClassDef):
            classes.setdefault(node.name, node)
        elif isinstance(node, ast.Call):
            calls.append(node)
    found = []
    for call in calls:
        name = last_id(call.func)
        if not name or not name.endswith("Trainer"):
            continue
        kind = _kind(name, classes, 0)
        if kind is not None:
            found.append(PreferenceTrainer(kind, name, call.lineno, call.col_offset + 1))
    return min(found, key=lambda t: (t.line, t.col)) if found else None


def _kind(name: str, classes: dict[str, ast.ClassDef], depth: int) -> str | None:
    if name in LIBRARY_TRAINERS:
        return LIBRARY_TRAINERS[name]
    local = classes.get(name)
    if local is not None and depth < _MAX_DEPTH:
        for base in local.bases:
            base_name = last_id(base)
            if base_name and base_name != name:
                kind = _kind(base_name, classes, depth + 1)
                if kind is not None:
                    return kind
    low = name.lower()
    return next((kind for part, kind in _BY_NAME if part in low), None)
