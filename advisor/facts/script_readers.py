"""The fact-layer readers of a training script that the plan takes in (advisor.plan.run_plan.ScriptReaders):
the pipeline hands them to build_plan, so the plan layer imports no fact module.

Each looks at the script's text first: a script that names no config loader, or never names deepspeed, is
not analysed, and the reader's modules are not imported (start-up of every check: issue 18)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from advisor.facts.script_ast.results import DEEPSPEED_PACKAGE, MAX_SCRIPT_BYTES
from advisor.plan.run_plan import ScriptReaders

if TYPE_CHECKING:
    from advisor.core.document import Document
    from advisor.core.provenance import Value
    from advisor.plan.context import CheckContext
    from advisor.plan.run_plan import RunPlan

# what a script that loads a config itself must name (advisor.facts.script_ast.config_sections: PyYAML,
# ruamel.yaml, OmegaConf, json)
_LOADER_WORDS = re.compile(r"yaml|YAML|OmegaConf|json")


def may_load_itself(doc: Document, context: CheckContext) -> bool:
    """Whether a script the run hands `doc` to names a config loader at all: False means no script loads it
    in its own layout (advisor.facts.script_layout), so that module need not be imported or run."""
    if not doc.consumers or not isinstance(doc.data, dict):
        return False
    texts = [context.script_text(script, MAX_SCRIPT_BYTES) for script, _ in doc.consumers]
    return any(text and _LOADER_WORDS.search(text) for text in texts)


def _training_values(doc: Document, context: CheckContext) -> list[tuple[str, Value]]:
    if not may_load_itself(doc, context):
        return []
    from advisor.facts.script_layout import training_values

    return training_values(doc, context)


def _code_deepspeed(plan: RunPlan) -> object:
    script = plan.spec.script
    if script is None or not isinstance(script.text, str) or DEEPSPEED_PACKAGE not in script.text:
        return None
    from advisor.facts.deepspeed_code import fill_code_deepspeed

    fill_code_deepspeed(plan)
    return None


SCRIPT_READERS = ScriptReaders(training_values=_training_values, code_deepspeed=_code_deepspeed)
