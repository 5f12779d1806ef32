"""Launchers own their behaviour (issue 19 item 3): each launcher module counts its own processes
behind one protocol, and no module outside advisor/sources/launchers/ tells launchers apart by
comparing their names; they ask the launcher's spec (`spec_of(name).reads_accelerate_config`)."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import get_args

import pytest

from advisor.core.document import DocumentKind
from advisor.sources import launchers
from advisor.sources.known_keys import DIALECTS
from advisor.sources.pins import PACKAGES
from advisor.sources.project_imports import LIBRARIES
from tests.gate.conftest import cli

ADVISOR = Path(__file__).resolve().parents[2] / "advisor"
LAUNCHER_IDS = frozenset(launchers.LAUNCHERS)
# ids that name nothing else of the project (no document kind, dialect or package): as a key of a dict
# or a lookup they can only mean the launcher (`ALIASES["swift"]`, `{"torchrun": ...}`)
ONLY_LAUNCHER_IDS = LAUNCHER_IDS - set(get_args(DocumentKind)) - set(DIALECTS) - set(PACKAGES) - LIBRARIES
# ...but for these keys, each once: (file, key)
NOT_LAUNCHER_KEYS = {("advisor/pipeline/probe/envinfo.py", "python")}  # the interpreter's version

# Comparisons with a launcher id's spelling that are not about a launcher: the name of the thing
# compared (its last attribute or variable) says what it is.
NOT_LAUNCHER_SUBJECTS = {
    "dialect",  # a training config's dialect (axolotl, llamafactory, trl recipes): facts/keys.py
    "kind",  # a document's format (an accelerate YAML, a DeepSpeed JSON): sources/read.py
    "role",  # what a config reference names (the deepspeed config): discover.py
    "source",  # a Value's namespace (set by the accelerate config): provenance.py
    "package",  # a Python package of the script's imports (trl)
    "script_args",  # the run's own --deepspeed flag
}
# ...and those whose subject is an expression, each once: (file, the expression as ast.unparse writes it)
NOT_LAUNCHER_EXPRESSIONS = {
    ("advisor/plan/run_plan.py", "(node.module or '').split('.')[0]"),  # `from trl import ...` in the script
    ("advisor/plan/run_plan.py", "a.name.split('.')[0]"),  # `import trl`
    ("advisor/facts/run.py", "str(dist.value).lower()"),  # LLaMA-Factory's dist_config.name (deepspeed)
}


def _strings(node: ast.expr) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Set | ast.Tuple | ast.List):
        return {s for e in node.elts for s in _strings(e)}
    return set()


def _subject_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and node.attr == "value":  # `dialect.value`: a Value of the dialect
        return _subject_name(node.value)
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def _given(node: ast.expr | None) -> set[str]:
    """The strings an expression may evaluate to: a literal, either arm of `a if c else b`, `a or b`."""
    if isinstance(node, ast.IfExp):
        return _given(node.body) | _given(node.orelse)
    if isinstance(node, ast.BoolOp):
        return {s for v in node.values for s in _given(v)}
    return _strings(node) if node is not None else set()


def _for_launcher(name: str | None) -> bool:
    """A variable, attribute, keyword or function that holds or gives a launcher (`launcher`,
    `cmd.launcher`, `launcher_name`, `probe_launcher`)."""
    return name is not None and "launcher" in name.lower()


def _names_a_launcher(name: str) -> bool:
    """A name spelled as a launcher's id (launchers.TORCHRUN, an import of VLLM)."""
    return name.lower() in LAUNCHER_IDS


def launcher_name_comparisons(path: Path, source: str) -> list[str]:
    """The places in one module's source that tell launchers apart by name: `x == "torchrun"`, `x in
    {"accelerate", "trl"}`, `LAUNCHERS["vllm"]`, a constant spelled as a launcher (`launchers.TORCHRUN`,
    `from advisor.sources.launchers import VLLM`), and a launcher's id given as a launcher (`launcher =
    "torchrun"`, `launcher="python"`, `LaunchCommand("vllm", ...)`, `return "accelerate"` from a function
    named for a launcher, `Literal["torchrun", ...]`)."""
    where = path.relative_to(ADVISOR.parent).as_posix() if path.is_absolute() else path.as_posix()
    found: list[str] = []

    def hit(node: ast.AST) -> None:
        found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")  # type: ignore[attr-defined]

    tree = ast.parse(source)
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) and _for_launcher(function.name):
            for node in ast.walk(function):
                if isinstance(node, ast.Return) and _given(node.value) & LAUNCHER_IDS:
                    hit(node)
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            subject, keys = _subject_name(node.value), _strings(node.slice)
            registry = subject == "LAUNCHERS" and keys & LAUNCHER_IDS
            if registry or (keys & ONLY_LAUNCHER_IDS and not {(where, k) for k in keys} <= NOT_LAUNCHER_KEYS):
                hit(node)
            # a type of launcher ids (not one of document kinds or packages that share some spellings)
            if subject == "Literal" and keys and keys <= LAUNCHER_IDS:
                hit(node)
        elif isinstance(node, ast.Dict):
            keys = {s for k in node.keys if k is not None for s in _strings(k)}
            if {k for k in keys & ONLY_LAUNCHER_IDS if (where, k) not in NOT_LAUNCHER_KEYS}:
                hit(node)
        elif isinstance(node, ast.Attribute):
            if _subject_name(node.value) == "launchers" and _names_a_launcher(node.attr):
                hit(node)
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").startswith("advisor.sources.launchers") and any(
                _names_a_launcher(a.name) for a in node.names
            ):
                hit(node)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_for_launcher(_subject_name(t)) for t in targets) and _given(node.value) & LAUNCHER_IDS:
                hit(node)
        elif isinstance(node, ast.Call):
            given = [kw.value for kw in node.keywords if _for_launcher(kw.arg)]
            if _subject_name(node.func) == "LaunchCommand" and node.args:
                given.append(node.args[0])
            if any(_given(v) & LAUNCHER_IDS for v in given):
                hit(node)
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for i, operand in enumerate(operands):
                if not _strings(operand) & LAUNCHER_IDS:
                    continue
                for j, other in enumerate(operands):
                    if j == i or _strings(other):
                        continue
                    shown = ast.unparse(other)
                    if (
                        _subject_name(other) in NOT_LAUNCHER_SUBJECTS
                        or (where, shown) in NOT_LAUNCHER_EXPRESSIONS
                    ):
                        continue
                    hit(node)
    return found


def test_no_launcher_name_is_compared_outside_the_launchers() -> None:
    outside = [p for p in sorted(ADVISOR.rglob("*.py")) if "launchers" not in p.relative_to(ADVISOR).parts]
    found = [hit for p in outside for hit in launcher_name_comparisons(p, p.read_text(encoding="utf-8"))]
    assert not found, "ask the launcher's spec instead (advisor.sources.launchers.spec_of):\n" + "\n".join(
        found
    )


@pytest.mark.parametrize(
    "source",
    [
        'if plan.launch.launcher == "torchrun": pass',
        'if command.launcher in {"accelerate", "trl", "axolotl"}: pass',
        'ok = "deepspeed" != launcher',
        'flags = LAUNCHERS["vllm"].flags',
        "if cmd.launcher == launchers.AXOLOTL: pass",  # a constant spelled as the launcher
        "torch = chosen.text == launchers.TORCHRUN",
        "flags = LAUNCHERS[launchers.VLLM].flags",
        "from advisor.sources.launchers import PYTHON",
        'launcher = "python" if n in (None, 1) else "torchrun"',  # the id given as a launcher
        'spec.launcher = "torchrun"',
        'launcher: str = "accelerate"',
        'cmd = LaunchCommand("vllm", Span(1, 1))',
        'spec = ProbeSpec(run=r, launcher="torchrun")',
        'def probe_launcher(n):\n    return "python" if n == 1 else "torchrun"',
        'Launcher = Literal["torchrun", "accelerate", "python"]',
        'aliases = {**aliases, **TRAINING_ALIASES["swift"]}',  # a launcher's id as a key
        'KEYS = {"axolotl": "base_model", "swift": "model"}',
    ],
)
def test_the_scan_finds_a_launcher_name_comparison(source: str) -> None:
    assert launcher_name_comparisons(Path("advisor/facts/x.py"), source)


def test_the_scan_leaves_formats_and_dialects_alone() -> None:
    source = (
        'a = t.dialect == "axolotl"\nb = doc.kind in ("accelerate", "deepspeed")\n'
        'c = v.source == "accelerate"\nd = dialect.value == "trl"\ne = targs["deepspeed"]\n'
        'f = Namespace("accelerate")\ng = cmd.launcher_args.get("launcher")\nh = launchers.spec_of(x).name\n'
        'i = Literal["bf16", "fp16"]\nkind = "deepspeed"\n'
        'def read_launch():\n    return "trl" if package else None'
    )
    assert launcher_name_comparisons(Path("advisor/facts/x.py"), source) == []


def test_every_registered_launcher_implements_the_protocol() -> None:
    assert len({m.SPEC.name for m in launchers.REGISTRY}) == len(launchers.REGISTRY)
    for module in launchers.REGISTRY:
        assert launchers.launcher(module.SPEC.name) is module
        assert callable(module.processes)
    assert launchers.spec_of(None) is launchers.NO_LAUNCHER
    assert launchers.spec_of("no-such-launcher") is launchers.NO_LAUNCHER


# Through the CLI: `gpu-advise plan` shows the count each launcher module gives, at the line that
# gives it. (launch line, other files, processes per node, nodes, world size)
CASES = {
    "torchrun": ("torchrun --nnodes 2 --nproc_per_node 4 train.py", {}, "4", "2", "8"),
    "torchrun-default": ("torchrun train.py", {}, "1", "1", "1"),
    "accelerate": ("accelerate launch --num_processes 8 --num_machines 2 train.py", {}, "4", "2", "8"),
    "accelerate-config": (
        "accelerate launch --config_file acc.yaml train.py",
        {"acc.yaml": "distributed_type: MULTI_GPU\nnum_processes: 6\nnum_machines: 3\n"},
        "2",
        "3",
        "6",
    ),
    "deepspeed": ("deepspeed --num_nodes 3 --num_gpus 2 train.py", {}, "2", "3", "6"),
    "deepspeed-hostfile": (
        "deepspeed --hostfile hosts train.py",
        {"hosts": "node1 slots=4\nnode2 slots=4\n"},
        "4",
        "2",
        "8",
    ),
    "llamafactory": (
        "NPROC_PER_NODE=4 NNODES=2 llamafactory-cli train cfg.yaml",
        {"cfg.yaml": "stage: sft\n"},
        "4",
        "2",
        "8",
    ),
    "swift": ("NPROC_PER_NODE=2 swift sft --model m", {}, "2", "1", "2"),
    "swift-default": ("swift sft --model m", {}, "1", "1", "1"),
    "trl": ("trl sft --num_processes 4 --model_name_or_path m", {}, "4", "1", "4"),
    "python": ("python plain.py", {"plain.py": "print(1)\n"}, "1", "1", "1"),
}


def _shown(out: str, key: str) -> str | None:
    m = re.search(rf"^\s*batch\.{key}\s+(\S+)", out, re.MULTILINE)
    return m.group(1) if m else None


@pytest.mark.parametrize("case", sorted(CASES))
def test_plan_shows_the_count_the_launcher_gives(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    line, files, per_node, nodes, world = CASES[case]
    (tmp_path / "train.py").write_text("from transformers import TrainingArguments\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "launch.sh").write_text(f"#!/bin/bash\n{line}\n")
    result = cli(["plan", "launch.sh"], tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    shown = (
        _shown(result.output, "processes_per_node"),
        _shown(result.output, "nodes"),
        _shown(result.output, "world_size"),
    )
    assert shown == (per_node, nodes, world), result.output


def test_a_server_launch_counts_no_training_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "serve.sh").write_text("#!/bin/bash\nvllm serve some/model --tensor-parallel-size 2\n")
    result = cli(["plan", "serve.sh"], tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    assert _shown(result.output, "world_size") == "?", result.output  # unknown
    assert "run.serving                        True" in result.output
