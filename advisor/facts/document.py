"""Facts about one file on its own: what reading it found."""

from __future__ import annotations

from typing import Any

from advisor.core.document import SURPRISE_KINDS, Document, KeyPath, Location, SourceProblem, pointer
from advisor.core.provenance import Value
from advisor.facts.declare import FactNamespace, fact
from advisor.plan.context import CheckContext
from advisor.sources import known_keys as kk


class DocumentFacts(
    FactNamespace,
    name="document",
    doc="One file on its own: what reading it found (document-scoped rules).",
    scope="document",
    builder="advisor.facts.document:document_facts",
):
    kind = fact(str, "what the file is (training_args, accelerate, deepspeed, launch, ...)")
    dialect = fact(str, "whose keys it holds (hf, trl, axolotl, llamafactory, ...)")
    path = fact(str, "the file's path")
    problems = fact(
        list[dict],
        (
            "what the reader found, by kind (sources/document.py PROBLEM_KINDS); YAML 1.1 surprises "
            "only where they matter to the file's consumer"
        ),
        items=("detail", "kind", "location", "message", "severity"),
    )
    unknown_keys = fact(
        list[dict],
        "keys the consumer does not know",
        items=("key", "location", "message", "severity", "suggestion"),
    )
    removed_keys = fact(
        list[dict],
        "keys the consumer's pinned version removed; rename: the key a fix may write instead",
        items=("key", "location", "message", "rename", "severity"),
    )
    deprecated_keys = fact(
        list[dict],
        "keys the consumer's pinned version deprecates; rename: the key a fix may write instead",
        items=("key", "location", "message", "rename", "severity", "suggestion"),
    )
    dropped_flags = fact(
        list[dict],
        "launch flags the training script does not read",
        items=("key", "location", "message", "severity", "suggestion"),
    )
    type_errors = fact(
        list[dict], "values of the wrong type for their key", items=("key", "location", "message", "severity")
    )


# Dialects whose tool reads the YAML with OmegaConf.load (LLaMA-Factory's read_args): OmegaConf's
# loader adds a float resolver, so 1e-5 is a float there even though the values then go through
# HfArgumentParser.parse_dict without conversion.
YAML12_FLOAT_DIALECTS = frozenset({"llamafactory", "llamafactory_v1"})


def _section_of(dialect: str, path: KeyPath) -> tuple[str, ...]:
    """The longest described section that holds ``path`` (``()``, the top level, at least)."""
    described = kk.sections(dialect)
    for n in range(len(path) - 1, 0, -1):
        prefix = path[:n]
        if all(isinstance(p, str) for p in prefix) and prefix in described:
            return prefix  # type: ignore[return-value]
    return ()


def number_string_matters(doc: Document, path: KeyPath) -> bool:
    """Whether a number-looking string (1e-5) at ``path`` reaches the consumer as a string.

    Only where the consumer does not convert it: HfArgumentParser files (parse_yaml_file) and
    accelerate configs. axolotl (pydantic lax mode) and TRL recipes (argparse defaults go through the
    field's type) convert it; LLaMA-Factory's OmegaConf loader reads it as a float; for a file whose
    consumer we do not know (a Hydra hparams.yaml, say) nothing is judged.
    """
    from advisor.facts.keys import dialect_of

    dialect = dialect_of(doc)
    if dialect is None or dialect in YAML12_FLOAT_DIALECTS:
        return False
    return not kk.coerces(dialect, _section_of(dialect, path))


def yaml11_surprises(doc: Document, context: CheckContext) -> list[SourceProblem]:
    """The reader's YAML 1.1 surprises that matter to the file's consumer."""
    if not any(p.kind in SURPRISE_KINDS for p in doc.problems):
        return []  # nothing the loaders read differently (most files): no consumer script is analysed
    from advisor.facts.script_layout import layout_of, loader_surprises
    from advisor.facts.script_readers import may_load_itself

    if doc.kind == "unknown" or (may_load_itself(doc, context) and layout_of(doc, context) is not None):
        # the training script loads it itself (advisor.facts.script_layout): as that script's loader reads
        # it; else, with no known consumer, whether 'yes' or '1e-5' surprises it cannot be judged
        return loader_surprises(doc, context)
    return [
        p
        for p in doc.problems
        if p.kind in SURPRISE_KINDS and (p.detail != "number-string" or number_string_matters(doc, p.key))
    ]


def reported_problems(doc: Document, context: CheckContext) -> list[SourceProblem]:
    """Every problem the reader found, YAML 1.1 surprises only where they matter to the consumer."""
    surprises = {id(p) for p in yaml11_surprises(doc, context)}
    return [p for p in doc.problems if p.kind not in SURPRISE_KINDS or id(p) in surprises]


def problem_items(doc: Document, context: CheckContext) -> list[dict[str, Any]]:
    """`document.problems`: rule files choose the kinds they report (GA001, GA003)."""
    return [
        {
            "kind": p.kind,
            "detail": p.detail,
            "location": Location(doc.path, p.span.line, p.span.col, pointer(p.key) or None),
            "message": p.message,
            "severity": p.severity,
        }
        for p in reported_problems(doc, context)
    ]


def document_facts(doc: Document, context: CheckContext | None = None) -> DocumentFacts:
    """The facts of one document under the check's ``context``; without one (a test, a library user: no
    check under way) a standalone context for the document's project (CheckContext.standalone)."""
    context = context or CheckContext.standalone(doc.path)
    ns = DocumentFacts()
    ns.kind = Value(doc.kind, None, "derived")
    ns.dialect = Value(doc.dialect, None, "derived")
    ns.path = Value(str(doc.path), None, "derived")
    ns.problems = Value(problem_items(doc, context), None, "derived")
    from advisor.facts.keys import key_items

    for name, items in key_items(doc, context).items():
        ns.set(name, Value(items, None, "derived"))
    return ns
