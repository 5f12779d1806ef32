"""The LoRA settings of a run that the estimator reads: whether the script wraps the model with PEFT,
the target modules, rank and dropout (written, a script dataclass default, or a literal LoraConfig(...)
in the script), and modules_to_save (fully trained copies)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from advisor.core.document import Location
from advisor.core.provenance import Value
from advisor.facts.branches import called as _called
from advisor.facts.branches import decide as _decide
from advisor.facts.branches import indexed as _indexed
from advisor.facts.branches import script_default as _script_default
from advisor.facts.namespace_entries import truth, value_at, written
from advisor.sources.python_source import parsed

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

_MAX_SCRIPT_CHARS = 2_000_000


def _script_tree(doc: Any, needle: str) -> ast.Module | None:
    """The training script's tree when its text names `needle` (a cheap test before the tree is read)."""
    text = doc.text if doc is not None else None
    if not isinstance(text, str) or needle not in text or len(text) > _MAX_SCRIPT_CHARS:
        return None
    return parsed(text)


def script_wraps_peft(plan: RunPlan) -> bool:
    """The training script calls get_peft_model where the run takes it: outside any `if` (FastChat
    train_lora.py:165), or on a branch the run's flags decide is taken (artidoro/qlora qlora.py
    get_accelerate_model: `if not args.full_finetune: model = get_peft_model(model, config)`, full_finetune
    a dataclass field with default False). Read from the AST, never run."""
    return peft_wrap(plan)[0] is True


def peft_wrap(plan: RunPlan) -> tuple[bool | None, str | None]:
    """(whether the run wraps its model with get_peft_model, why it is unknown): True when one call is
    outside any conditional or on branches the run's flags take; False when the script has no call or every
    call sits on a branch not taken; None with the reason when a branch around a call is not decided by the
    run's known flags (a script variable, a flag with no known value)."""
    doc = plan.spec.script
    tree = _script_tree(doc, "get_peft_model(")
    if tree is None:
        return False, None
    name = getattr(getattr(doc, "path", None), "name", "the script")
    nodes, parents = _indexed(tree)
    calls = [n for n in nodes if isinstance(n, ast.Call) and _called(n) == "get_peft_model"]
    undecided: str | None = None
    for call in calls:
        taken, why = _call_taken(plan, call, parents, tree, name)
        if taken is True:
            return True, None
        if taken is None and undecided is None:
            undecided = why
    return (None, undecided) if undecided is not None else (False, None)


def not_read_script(plan: RunPlan) -> str | None:
    """Why the run's own training script says nothing here: the launch starts a .py file that was not read
    (not in the project, outside its boundary); None when it was read or the launch starts none."""
    cmd = plan.spec.command
    word = getattr(cmd, "script", None)
    text = getattr(word, "text", None)
    if plan.spec.script is not None or cmd is None or getattr(cmd, "subcommand", False):
        return None
    if not isinstance(text, str) or getattr(cmd, "module", False) or not text.endswith(".py"):
        return None
    return f"the training script {text} the launch starts was not read (not found in the project)"


def _call_taken(
    plan: RunPlan, call: ast.Call, parents: dict[ast.AST, ast.AST], tree: ast.Module, name: str
) -> tuple[bool | None, str | None]:
    """Whether the run reaches `call`: each `if`/conditional expression around it decided by the run's
    flags (a function body counts as run: the script calls its own functions)."""
    child: ast.AST = call
    node = parents.get(call)
    while node is not None:
        if isinstance(node, ast.If | ast.IfExp):
            in_body = child in node.body if isinstance(node, ast.If) else child is node.body
            in_test = child is node.test
            if not in_test:
                decided = _decide(plan, node.test, tree)
                test = ast.unparse(node.test)[:80]
                if decided is None:
                    return None, (
                        f"get_peft_model at {name}:{call.lineno} runs only when `{test}` is "
                        f"{in_body}, which the run's known flags do not decide"
                    )
                if decided != in_body:
                    return False, None
        elif isinstance(node, ast.While | ast.For | ast.AsyncFor | ast.Match) or (
            isinstance(node, ast.Try) and child not in node.body
        ):
            return None, f"get_peft_model at {name}:{call.lineno} is inside a {type(node).__name__}"
        child, node = node, parents.get(node)
    return True, None


def lora_targets(plan: RunPlan) -> list[str] | None:
    t = plan.training
    v = script_lora(plan, "target_modules")
    if v is None:
        if truth(written(t, "lora_target_linear")):
            return ["all-linear"]
        v = written(t, "lora_target_modules", "lora_target", "target_modules")
    if v is None or not v.known or v.value is None:
        return None
    raw = v.value
    if isinstance(raw, str):
        parts = [p.strip() for p in raw.replace(" ", ",").split(",") if p.strip()]
    elif isinstance(raw, list):
        parts = [str(p).strip() for p in raw if str(p).strip()]
    else:
        return None
    if any(p.lower() in {"all", "all-linear", "all_linear"} for p in parts):
        return ["all-linear"]
    return parts or None


# LoraConfig's keywords the estimator reads (peft 0.17.1 tuners/lora/config.py LoraConfig: r,
# target_modules, lora_dropout)
_LORA_CONFIG_KEYS = frozenset({"r", "target_modules", "lora_dropout"})
# PEFT's own value of a keyword a LoraConfig(...) call leaves out (peft 0.17.1 tuners/lora/config.py:326
# `r: int = field(default=8)`, :347 `lora_dropout: float = field(default=0.0)`)
_PEFT_DEFAULTS: dict[str, Any] = {"r": 8, "lora_dropout": 0.0}
_LITERAL = "the script's LoraConfig"


def script_lora(plan: RunPlan, key: str) -> Value | None:
    """LoraConfig(key=...) in the training script (read from the AST, never run), where the script gives it
    a literal (`r=8`, `target_modules=["q_proj", "v_proj"]`, `lora_dropout=0.1`) or one of the run's
    known flags (`r=lora_args.lora_r`: the run's value of lora_r, written or its dataclass default), or
    leaves r/lora_dropout out (PEFT's own 8 / 0.0); None when the script builds no LoraConfig, gives the
    keyword otherwise, passes **kwargs or positional arguments, or its calls disagree. A literal string
    target_modules other than "all-linear" is an unknown Value (PEFT full-matches it as a regex)."""
    got = _script_lora_settings(plan)
    return got.get(key) if got is not None else None


def _script_lora_settings(plan: RunPlan) -> dict[str, Value] | None:
    doc = plan.spec.script
    tree = _script_tree(doc, "LoraConfig")
    if tree is None:
        return None
    path = getattr(doc, "path", None)
    nodes, _ = _indexed(tree)
    calls = [n for n in nodes if isinstance(n, ast.Call) and _called(n) == "LoraConfig"]
    if not calls:
        return None
    found: dict[str, list[Value | None]] = {}
    for node in calls:
        # LoraConfig(**kwargs) or positional arguments: what the call leaves out cannot be told
        opaque = bool(node.args) or any(kw.arg is None for kw in node.keywords)
        given = {kw.arg: kw.value for kw in node.keywords if kw.arg in _LORA_CONFIG_KEYS}
        for key in _LORA_CONFIG_KEYS:
            if key in given:
                v = _lora_argument(plan, given[key], path, nodes)
                literal_str = v is not None and v.note == _LITERAL and isinstance(v.value, str)
                if key == "target_modules" and v is not None and literal_str:
                    v = _regex_targets(v)
            elif key in _PEFT_DEFAULTS and not opaque:
                where = Location(path, node.lineno, node.col_offset + 1) if path is not None else None
                note = f"PEFT's default: the script's LoraConfig has no {key}="
                v = Value(_PEFT_DEFAULTS[key], where, "script", note=note)
            else:
                continue
            found.setdefault(key, []).append(v)
    out: dict[str, Value] = {}
    for key, values in found.items():
        # every call gives the key the same value (one LoraConfig, or one per branch that agree)
        first = values[0]
        if (
            len(values) == len(calls)
            and first is not None
            and all(v is not None and v.known == first.known and v.value == first.value for v in values)
        ):
            out[key] = first
    return out


def _regex_targets(v: Value) -> Value:
    """A literal string target_modules in the script's LoraConfig: "all-linear" is PEFT's wildcard, any other
    string a regex PEFT full-matches against each module's whole name (peft 0.17.1 tuners/tuners_utils.py
    :1255-1256 check_target_module_exists -> match_target_against_key), not a comma-separated list; the
    wildcard is compared lower-cased (:1320)."""
    if v.value.lower() == "all-linear":
        return v
    return Value(
        None,
        v.origin,
        "script",
        unknown=f"target_modules={v.value!r} in the script's LoraConfig is a regex PEFT full-matches",
    )


def _lora_argument(plan: RunPlan, node: Any, path: Any, nodes: list[Any]) -> Value | None:
    """A LoraConfig keyword's value: a literal; a name or attribute the run has as a flag; else a plain
    name the script assigns once, a literal (`target_modules = ["q_proj", "v_proj"]`)."""
    if isinstance(node, ast.Attribute | ast.Name):
        flag = node.attr if isinstance(node, ast.Attribute) else node.id
        v = written(plan.training, flag)
        if v is None and isinstance(node, ast.Attribute) and nodes and isinstance(nodes[0], ast.Module):
            # `r=args.rank`: a field of the script's own dataclass or argparse that the run does not
            # write and the estimator's key list does not carry: its default
            v = _script_default(plan, nodes[0], flag)
        if v is not None:
            return v if v.known else None
        if not isinstance(node, ast.Name):
            return None
        bound = [
            n.value
            for n in nodes
            if isinstance(n, ast.Assign | ast.AnnAssign | ast.AugAssign)
            and any(
                isinstance(t, ast.Name) and t.id == node.id
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            )
        ]
        if len(bound) != 1 or bound[0] is None or isinstance(bound[0], ast.Name | ast.Attribute):
            return None
        node = bound[0]
    try:
        raw = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    ok = type(raw) in (int, float, str) or (
        isinstance(raw, list | tuple) and raw and all(isinstance(p, str) for p in raw)
    )
    if not ok:
        return None
    where = Location(path, node.lineno, node.col_offset + 1) if path is not None else None
    value = list(raw) if isinstance(raw, tuple) else raw
    return Value(value, where, "script", note=_LITERAL)


def _names(raw: Any) -> list[str] | None:
    if isinstance(raw, str):
        return [p.strip() for p in raw.replace(" ", ",").split(",") if p.strip()] or None
    if isinstance(raw, list | tuple) and all(isinstance(p, str) for p in raw):
        return [p.strip() for p in raw if p.strip()] or None
    return None


def modules_to_save(plan: RunPlan, a: list[str]) -> list[str] | None:
    """PEFT's modules_to_save as the run writes it: axolotl `lora_modules_to_save` (a list; axolotl 0.19.0
    utils/schemas/peft.py), `modules_to_save`, LLaMA-Factory `additional_target` (a comma-separated string
    split into LoraConfig(modules_to_save=...) by model/adapter.py), else the script's
    LoraConfig(modules_to_save=...) (Qwen finetune.py:331-342)."""
    v = written(plan.training, "lora_modules_to_save", "modules_to_save", "additional_target")
    if v is not None and v.known:
        return _names(v.value)
    return _script_modules_to_save(plan, a)


def _script_modules_to_save(plan: RunPlan, a: list[str]) -> list[str] | None:
    """LoraConfig(modules_to_save=...) in the training script, read from the AST (never run): a list of
    strings, or a name assigned such a list; with several LoraConfig calls, only when they all agree. A
    name assigned its list on one branch of an `if` (Qwen @2df8e8a finetune.py:331-335 `if lora_args.q_lora
    or is_chat_model: modules_to_save = None else: [...]`) counts only when the run's known flags decide
    the condition; otherwise it is unknown: stated, not counted."""
    doc = plan.spec.script
    tree = _script_tree(doc, "modules_to_save")
    if tree is None:
        return None
    nodes, parents = _indexed(tree)
    calls = [n for n in nodes if isinstance(n, ast.Call) and _called(n) == "LoraConfig"]
    if not any(kw.arg == "modules_to_save" for c in calls for kw in c.keywords):
        return None
    name = getattr(getattr(doc, "path", None), "name", "script")
    got: list[tuple[list[str] | None, str | None]] = []  # (names, why unknown) per call
    for call in calls:
        arg = next((kw.value for kw in call.keywords if kw.arg == "modules_to_save"), None)
        if arg is None:
            opaque = bool(call.args) or any(kw.arg is None for kw in call.keywords)
            got.append((None, "a LoraConfig(**...) call" if opaque else None))
        else:
            got.append(_call_modules_to_save(plan, arg, call, nodes, parents, name, a))
    if any(why for _, why in got):
        why = next(w for _, w in got if w)
        a.append(f"modules_to_save unknown: {why}, not counted")
        return None
    first = got[0][0]
    if any(names != first for names, _ in got):
        a.append(f"modules_to_save: the script's {len(calls)} LoraConfig calls disagree: not counted")
        return None
    return first


def _literal_names(node: ast.AST | None) -> list[str] | None:
    if isinstance(node, ast.List | ast.Tuple) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [str(e.value) for e in node.elts if isinstance(e, ast.Constant)] or None
    return None


def _call_modules_to_save(
    plan: RunPlan,
    arg: ast.expr,
    call: ast.Call,
    nodes: list[ast.AST],
    parents: dict[ast.AST, ast.AST],
    name: str,
    a: list[str],
) -> tuple[list[str] | None, str | None]:
    """One LoraConfig call's modules_to_save=: (the names or None for none, why it is unknown)."""
    direct = _literal_names(arg)
    if direct is not None:
        a.append(f"modules_to_save {direct} from the script's LoraConfig ({name}:{arg.lineno})")
        return direct, None
    if isinstance(arg, ast.Constant) and arg.value is None:
        return None, None
    if not isinstance(arg, ast.Name):
        return None, f"modules_to_save={ast.unparse(arg)[:60]} at {name}:{arg.lineno}"
    lists = [
        n
        for n in nodes
        if isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == arg.id for t in n.targets)
        and _literal_names(n.value) is not None
    ]
    if len(lists) > 1:
        return None, f"the script assigns {arg.id} more than one list"
    if not lists:
        return None, None
    bound = lists[0]
    names = _literal_names(bound.value)
    # the conditionals around the list's assignment that are not also around the call
    around_call: set[ast.AST] = set()
    node: ast.AST | None = call
    while node is not None:
        around_call.add(node)
        node = parents.get(node)
    child: ast.AST = bound
    node = parents.get(bound)
    taken: list[str] = []
    while node is not None and node not in around_call:
        if isinstance(node, ast.If):
            decided = _decide(plan, node.test)
            test = ast.unparse(node.test)[:80]
            in_body = child in node.body
            if decided is None:
                where = f"{name}:{bound.lineno}"
                return None, f"{where} assigns {arg.id} its list only on one branch of `if {test}`"
            if decided != in_body:
                where = f"{name}:{node.lineno}"
                a.append(f"modules_to_save: none, the script's `if {test}` at {where} is {decided}")
                return None, None
            taken.append(f"`if {test}` is {decided}")
        elif isinstance(node, ast.Try | ast.While | ast.For | ast.AsyncFor | ast.Match):
            return None, f"{name}:{bound.lineno} assigns {arg.id} its list inside a {type(node).__name__}"
        child, node = node, parents.get(node)
    a.append(
        f"modules_to_save {names} from the script's LoraConfig ({name}:{bound.lineno})"
        + (f", the run's flags decide: {', '.join(taken)}" if taken else "")
    )
    return names, None


# PEFT's config classes other than LoraConfig (peft 0.21.2 tuners/<method>/config.py), by name
_OTHER_PEFT = {
    "AdaLoraConfig": "AdaLoRA",
    "IA3Config": "IA3",
    "PromptTuningConfig": "prompt tuning",
    "PromptEncoderConfig": "P-tuning",
    "PrefixTuningConfig": "prefix tuning",
    "LoHaConfig": "LoHa",
    "LoKrConfig": "LoKr",
    "OFTConfig": "OFT",
    "BOFTConfig": "BOFT",
    "VeraConfig": "VeRA",
    "FourierFTConfig": "FourierFT",
    "HRAConfig": "HRA",
    "LNTuningConfig": "LN tuning",
    "AdaptionPromptConfig": "adaption prompt",
    "VBLoRAConfig": "VB-LoRA",
    "BoneConfig": "Bone",
    "MissConfig": "MiSS",
    "XLoraConfig": "X-LoRA",
    "RandLoraConfig": "RandLora",
    "ShiraConfig": "SHiRA",
    "C3AConfig": "C3A",
    "CPTConfig": "CPT",
    "PolyConfig": "Poly",
    "MultitaskPromptTuningConfig": "multitask prompt tuning",
    "TrainableTokensConfig": "trainable tokens",
}
# Why a method's memory is not the LoRA model's: read from its layer's forward
_NOT_MODELLED_WHY = {
    "LoHa": "it builds each targeted Linear's whole delta weight (out x in) from its Hadamard factors in "
    "every forward and F.linear keeps it for backward (peft 0.21.2 tuners/loha/layer.py:266-274)",
    "LoKr": "it builds each targeted Linear's whole delta weight from its Kronecker factors in every forward "
    "(peft 0.21.2 tuners/lokr/layer.py:256, 336)",
    "OFT": "it multiplies each targeted weight by an orthogonal matrix built in every forward "
    "(peft 0.21.2 tuners/oft/layer.py)",
    "BOFT": "it multiplies each targeted weight by butterfly orthogonal factors built in every forward "
    "(peft 0.21.2 tuners/boft/layer.py)",
}
# PEFT's IA3 targets when IA3Config names none (peft 0.21.2 utils/constants.py:197-235)
IA3_DEFAULT_TARGETS = {
    "llama": ["k_proj", "v_proj", "down_proj"],
    "mistral": ["k_proj", "v_proj", "down_proj"],
    "mixtral": ["k_proj", "v_proj", "w2"],
    "gemma": ["q_proj", "v_proj", "down_proj"],
    "gemma2": ["q_proj", "v_proj", "down_proj"],
    "gemma3_text": ["q_proj", "v_proj", "down_proj"],
    "qwen2": ["q_proj", "v_proj", "down_proj"],
    "qwen3": ["q_proj", "v_proj", "down_proj"],
    "phi": ["q_proj", "v_proj", "fc2"],
    "gpt2": ["c_attn", "mlp.c_proj"],
    "opt": ["q_proj", "k_proj", "fc2"],
    "gpt_neox": ["query_key_value", "dense_4h_to_h"],
}


def peft_method(plan: RunPlan, model_type: str, a: list[str]) -> tuple[dict[str, Any], str | None]:
    """The PEFT method a LoRA-wrapped run really trains, as the estimator's LoRA inputs it maps onto:
    ({lora_r, lora_targets, lora_dropout} to use instead of LoraConfig's, why it has no estimate). ({}, None)
    for plain LoRA. The script's PEFT config calls count where the run's flags reach them (an undecided
    branch: no estimate, with the reason); DoRA from LoraConfig(use_dora=True), LLaMA-Factory `use_dora`
    or axolotl `peft_use_dora`."""
    doc = plan.spec.script
    tree = _script_tree(doc, "Config(")
    kinds: dict[str, ast.Call] = {}
    if tree is not None:
        name = getattr(getattr(doc, "path", None), "name", "the script")
        nodes, parents = _indexed(tree)
        undecided: list[str] = []
        for call in (n for n in nodes if isinstance(n, ast.Call)):
            called = _called(call)
            if called != "LoraConfig" and called not in _OTHER_PEFT:
                continue
            taken, why = _call_taken(plan, call, parents, tree, name)
            if taken is False:
                continue
            kinds.setdefault(called, call)  # on the run's path, or on a branch the flags do not decide
            if taken is None and why:
                undecided.append(f"{called} at {name}:{call.lineno}: {why}")
        others = [k for k in kinds if k != "LoraConfig"]
        if len(kinds) > 1 and undecided:
            return {}, f"which PEFT method the run trains is unknown: {undecided[0]}"
        if len(kinds) > 1:
            return (
                {},
                f"the script builds {' and '.join(sorted(kinds))} on the run's path: which one it trains "
                "is unknown",
            )
        if others:
            return _other_method(plan, others[0], kinds[others[0]], model_type, name, nodes, a)
    dora = _dora(plan, kinds.get("LoraConfig"), tree)
    if dora is not None:
        a.append(
            f"DoRA ({dora}): counted as LoRA; not counted, a lower bound: the magnitude vector (d_out per "
            "targeted Linear) and, per targeted Linear, the base output and the scaled LoRA output DoRA "
            "keeps for "
            "the magnitude's gradient, 2 x d_out values per token (peft 0.21.2 tuners/lora/dora.py:163-165), "
            "plus one dense weight-norm temporary per Linear (dora.py:143-152)"
        )
    return {}, None


def _dora(plan: RunPlan, call: ast.Call | None, tree: ast.Module | None) -> str | None:
    v = written(plan.training, "use_dora", "peft_use_dora")
    if v is not None and truth(v):
        return f"{v.origin.file.name}:{v.origin.line}" if v.origin else "use_dora"
    kw = next((k.value for k in call.keywords if k.arg == "use_dora"), None) if call is not None else None
    if kw is None:
        return None
    got = _decide(plan, kw, tree) if not isinstance(kw, ast.Constant) else bool(kw.value)
    return f"LoraConfig(use_dora=...) at line {kw.lineno}" if got else None


def _other_method(
    plan: RunPlan, config: str, call: ast.Call, model_type: str, name: str, nodes: list[Any], a: list[str]
) -> tuple[dict[str, Any], str | None]:
    method = _OTHER_PEFT[config]
    where = f"{config} at {name}:{call.lineno}"
    path = getattr(plan.spec.script, "path", None)
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    opaque = bool(call.args) or any(k.arg is None for k in call.keywords)

    def literal(key: str) -> Any:
        v = _lora_argument(plan, kw[key], path, nodes) if key in kw else None
        return v.value if v is not None and v.known else None

    if method == "AdaLoRA":
        # AdaLoraConfig(init_r=12) (adalora/config.py:60); AdaLoraLayer.update_layer: lora_A r x in, lora_E
        # r x 1, lora_B out x r (adalora/layer.py:69-73): LoRA's shapes at rank init_r, plus r per Linear
        r = literal("init_r") if "init_r" in kw else (None if opaque else 12)
        if not isinstance(r, int):
            return {}, f"AdaLoRA ({where}): its init_r is not known statically"
        out: dict[str, Any] = {"lora_r": r}
        targets = literal("target_modules")
        if isinstance(targets, list):
            out["lora_targets"] = targets
        dropout = literal("lora_dropout")
        out["lora_dropout"] = float(dropout) if isinstance(dropout, int | float) else 0.0
        a.append(
            f"AdaLoRA ({where}): counted as LoRA of rank init_r {r} (adalora/layer.py:69-73); not counted, a "
            "lower bound: the RankAllocator's three fp32 copies of every adapter parameter (ipt, "
            "exp_avg_ipt, exp_avg_unc: adalora/layer.py:414-416)"
        )
        return out, None
    if method == "IA3":
        targets = literal("target_modules")
        if not isinstance(targets, list):
            targets = None if opaque or "target_modules" in kw else IA3_DEFAULT_TARGETS.get(model_type)
        if targets is None:
            return {}, f"IA3 ({where}): its target modules are not known statically"
        a.append(
            f"IA3 ({where}): one learned vector per targeted Linear (ia3/layer.py:56-66) counted as a rank-1 "
            f"adapter on {', '.join(targets)} (d_in + d_out per Linear) and its saved input as a LoRA's: an "
            "upper bound by a few MB"
        )
        return {"lora_r": 1, "lora_targets": list(targets), "lora_dropout": 0.0}, None
    if method in {"prompt tuning", "P-tuning", "prefix tuning"}:
        n = literal("num_virtual_tokens")
        shown = f"{n} virtual tokens" if isinstance(n, int) else "its virtual tokens"
        a.append(
            f"{method} ({where}): the base model frozen, the gradient carried back through every layer to "
            "the "
            f"virtual tokens; not counted, a lower bound: {shown} (num_virtual_tokens x hidden trainable "
            "values, x 2 x layers for prefix tuning: prefix_tuning/model.py) and the longer sequences they "
            "make"
        )
        return {"lora_targets": [], "lora_r": 1, "lora_dropout": 0.0}, None
    why = _NOT_MODELLED_WHY.get(method, "its trainable parameters and activations are not modelled")
    return {}, f"PEFT {method} ({where}) is not modelled: {why}"


def lone_file_lora_key(plan: RunPlan) -> str | None:
    """Why a lone file's method is unknown, or None: it sets a LoRA key (`lora_rank`, Firefly's
    CustomizedArguments) or a key to "lora"/"qlora" (its `train_mode`) that no library dataclass of the
    file's dialect has: the script's own, so its code decides whether adapters are trained (Firefly's
    train_args JSON are read by train.py, launched only from the README). A launch whose script is not
    found (DeepSpeed-Chat's `deepspeed main.py --lora_dim 128`) is not a lone file: judged as before."""
    from advisor.sources import known_keys as kk

    if plan.spec.script is not None or plan.spec.command is not None:
        return None
    t = plan.training
    dialect = value_at(t, "dialect")
    table = {"hf": "training_args", "trl": "trl"}.get(str(dialect.value)) if dialect is not None else None
    if table is None:
        return None
    known = kk.known_keys(table)
    for key, v in t.items():
        if not isinstance(v, Value) or v.source == "default" or key in known:
            continue
        if "lora" in key.lower() or (
            isinstance(v.value, str) and v.value.strip().lower() in ("lora", "qlora")
        ):
            shown = key if "lora" in key.lower() else f"{key}: {v.value}"  # Firefly's `train_mode: qlora`
            return (
                f"the file sets {shown}, a key of the script that reads it (no TrainingArguments or TRL "
                "field), and no launch names that script"
            )
    return None
