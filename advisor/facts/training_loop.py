"""Which training loop runs the step, and whether it keeps the model's outputs alive through backward
(issue 21 section 2, phase accounting).

HF Trainer and the TRL trainers call `loss = self.compute_loss(model, inputs)`; compute_loss binds
`outputs = model(**inputs)` and returns only the loss (transformers 5.24 trainer.py:2172 and 2217, 4.44
trainer.py:3363 and 3388; TRL's SFTTrainer override too, trl 0.26 sft_trainer.py:1240), so the logits
are freed by the loss backward before the last checkpointed layer is recomputed. torchtune's recipes
`del logits` before `loss.backward()` ("free logits otherwise it peaks backward memory"). A loop of the
user's own that binds `output = model(...)` and calls `output.loss.backward()` holds `output.logits`
through backward and the optimizer step (Answer.AI fsdp_qlora train.py@05ed9f2a: `output = model(...)`,
`loss = output.loss`, `loss.backward()`, `optimizer.step()`, then `output = None`).

Nothing is executed: the script is parsed (advisor.sources.python_source.parsed).
"""

from __future__ import annotations

import ast
from typing import Any

from advisor.core.records import record
from advisor.plan.run_plan import RunPlan
from advisor.sources.launchers.spec import LauncherSpec
from advisor.sources.python_source import tree_nodes

__all__ = [
    "LoopOutputs",
    "custom_loop_outputs",
    "logits_kept_bytes",
    "loop_outputs",
    "own_trainer",
]


@record(frozen=True, slots=True)
class LoopOutputs:
    """kept: True when the loop holds the model outputs through backward, False when they are dropped
    before it, None unknown; source: why."""

    kept: bool | None
    source: str
    own: bool = False  # the script runs its own loop (calls backward itself), not a Trainer's


def _is_backward(call: ast.Call) -> bool:
    """`x.backward()`, `accelerator.backward(x)`, `scaler.scale(x).backward()`."""
    f = call.func
    return isinstance(f, ast.Attribute) and f.attr == "backward"


def _output_uses(node: ast.AST, name: str) -> bool:
    """`name.loss`, `name.logits`, `name["loss"]`, `name[0]` somewhere in node."""
    for n in ast.walk(node):
        named = isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == name
        if named and n.attr in ("loss", "logits"):  # type: ignore[attr-defined]
            return True
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == name:
            key = n.slice
            if isinstance(key, ast.Constant) and key.value in ("loss", "logits", 0):
                return True
    return False


def _released(body: ast.AST, name: str, after: int, before: int) -> bool:
    """`del name` or `name = None` between two lines."""
    for n in ast.walk(body):
        line = getattr(n, "lineno", 0)
        if not after < line < before:
            continue
        if isinstance(n, ast.Delete) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets):
            return True
        if (
            isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Constant)
            and n.value.value is None
            and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
        ):
            return True
    return False


def _scope_keeps(scope: ast.AST, backward_line: int) -> str | None:
    """The name of a model output bound in `scope` before `backward_line` and still bound at it."""
    for n in ast.walk(scope):
        if not (isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and len(n.targets) == 1):
            continue
        target = n.targets[0]
        if not isinstance(target, ast.Name) or n.lineno >= backward_line:
            continue
        name = target.id
        if _output_uses(scope, name) and not _released(scope, name, n.lineno, backward_line):
            return name
    return None


def _trainer_methods(tree: ast.Module) -> set[int]:
    """ids of the methods of classes derived from a *Trainer: their backward is the Trainer's loop."""
    out: set[int] = set()
    for cls in tree_nodes(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        bases = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in cls.bases]
        if any(str(b).endswith("Trainer") for b in bases):
            out.update(id(n) for n in ast.walk(cls) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))
    return out


def custom_loop_outputs(tree: ast.Module, script: str) -> LoopOutputs | None:
    """The script's own loop (a `.backward(` call outside a Trainer subclass), or None when it has none."""
    functions = ast.FunctionDef | ast.AsyncFunctionDef
    skip = _trainer_methods(tree)
    scopes: list[ast.AST] = [n for n in tree_nodes(tree) if isinstance(n, functions) and id(n) not in skip]
    scopes.append(tree)
    found = False
    for scope in scopes:
        body = scope.body if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef | ast.Module) else []
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and scope is tree:
                continue
            for n in ast.walk(stmt):
                if isinstance(n, ast.Call) and _is_backward(n):
                    found = True
                    name = _scope_keeps(scope, n.lineno)
                    if name is not None:
                        return LoopOutputs(
                            True,
                            f"{script}:{n.lineno} calls backward while `{name}` (the model output) is "
                            "still bound: its logits stay live through backward and the optimizer step",
                            own=True,
                        )
    if found:
        return LoopOutputs(False, f"{script}'s own loop frees the model output before backward", own=True)
    return None


def own_trainer(plan: RunPlan) -> LauncherSpec | None:
    """The launcher whose own parser and trainer run the step (`swift sft`, or ms-swift's route files started
    directly: advisor.plan.run_plan.own_defaults_owner), its LauncherSpec; None for any other run."""
    from advisor.plan.run_plan import own_defaults_owner

    return own_defaults_owner(plan.spec.command)


def loop_outputs(plan: RunPlan) -> LoopOutputs:
    """Whether the run's training loop keeps the model outputs alive through backward."""
    from advisor.sources.python_source import parsed

    doc = plan.spec.script
    if doc is not None and isinstance(doc.text, str):
        text = doc.text

        def read() -> Any:
            tree = parsed(text)
            return custom_loop_outputs(tree, doc.path.name) if tree is not None else None

        own = plan.context.derived("loop-outputs", doc.path, read)
        if own is not None:
            return own
        return LoopOutputs(
            False,
            f"{doc.path.name} calls no backward itself: a Trainer's compute_loss returns the loss only "
            "(transformers trainer.py:2172, 2217)",
        )
    trainer = own_trainer(plan)
    if trainer is not None and trainer.drops_outputs:
        return LoopOutputs(False, trainer.drops_outputs)
    dialect = plan.training.known_value("dialect") if plan.training is not None else None
    if dialect is not None and dialect.value in ("trl", "hf", "axolotl", "llamafactory"):
        return LoopOutputs(
            False,
            f"{dialect.value} trains through HF Trainer: compute_loss returns the loss only "
            "(transformers trainer.py:2172, 2217)",
        )
    return LoopOutputs(None, "the training loop is not known")


def logits_kept_bytes(plan: RunPlan, compute_bytes: int) -> int:
    """Bytes per logit element that `outputs.logits` holds: fp32 up to transformers 4.44 (the causal-LM
    forward upcasts: 4.44.2 models/llama/modeling_llama.py:1209 `logits = logits.float()`), the compute
    dtype from 4.45 (the loss function upcasts its own copy, loss/loss_utils.py ForCausalLMLoss)."""
    from advisor.facts import versions

    doc = plan.spec.script or plan.spec.training or plan.spec.root
    if doc is None or getattr(doc, "path", None) is None:
        return compute_bytes
    checked = plan.context
    target = versions.targets_for(doc.path, checked.settings_near(doc.path), checked).get("transformers")
    release = tuple(int(x) for x in target.release.split(".")[:2]) if target is not None else None
    if target is not None and target.pinned and release is not None and release <= (4, 44):
        return 4
    return compute_bytes
