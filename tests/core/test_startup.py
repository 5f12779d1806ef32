"""The check path stays light: it never imports torch, transformers, accelerate or peft."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests.conftest import REPO

HEAVY = ("torch", "transformers", "accelerate", "peft", "deepspeed", "huggingface_hub", "numpy")


def test_check_never_imports_heavy_libraries() -> None:
    code = (
        "import sys, json\n"
        "from typer.testing import CliRunner\n"
        "from advisor.cli import app\n"
        "r = CliRunner().invoke(app, ['check', 'fixtures/example', '--format', 'json'])\n"
        "assert r.exit_code in (0, 1), r.output\n"
        "json.loads(r.stdout)\n"
        "print(json.dumps(sorted(m for m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    modules = set(json.loads(out.stdout.strip().splitlines()[-1]))
    loaded = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert not loaded, loaded


def _modules_after(args: list[str]) -> tuple[int, set[str]]:
    code = (
        "import sys, json\n"
        f"sys.argv = ['gpu-advise', *{args!r}]\n"
        "from advisor.cli import main\n"
        "try:\n    main()\n    rc = 0\nexcept SystemExit as exc:\n    rc = exc.code\n"
        "print('\\nMODULES ' + json.dumps([rc, sorted(sys.modules)]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    rc, modules = json.loads(out.stdout.rpartition("\nMODULES ")[2])
    return rc, set(modules)


def test_check_runs_without_typer_and_other_commands_with_it() -> None:
    """The console script's check parses its usual options itself: typer (and click) stay unimported;
    anything else still goes through the typer app."""
    rc, modules = _modules_after(["check", "--format", "json", "--fail-on", "error", "fixtures/example"])
    assert rc == 1
    assert not [m for m in modules if m.split(".")[0] in ("typer", "click", "rich")]
    rc, modules = _modules_after(["check", "--diff", "fixtures/example"])  # not in the fast path
    assert rc in (0, 1) and "typer" in modules
    rc, modules = _modules_after(["check", "--format", "nope", "fixtures/example"])
    assert rc == 2 and "typer" in modules  # typer's usage error names the choices


def test_a_clean_check_leaves_costly_stdlib_modules_unimported() -> None:
    """What benchmarks/check_speed.py found in the hook's start-up: dataclasses (with inspect, dis and
    tokenize, ~4.5 ms: the package's records do without it), hashlib (OpenSSL, ~3 ms: fingerprints only),
    difflib (did-you-mean only), tempfile (with shutil, random, bz2 and lzma, ~8 ms: the safe writer makes
    its own temporaries); typer and pydantic were kept off this path before."""
    rc, modules = _modules_after(["check", "--exit-zero", "fixtures/example"])
    assert rc == 0
    assert not sorted(
        modules & {"dataclasses", "inspect", "hashlib", "_hashlib", "difflib", "typer", "pydantic"}
    )


def test_a_cold_check_writes_its_cache_without_tempfile(tmp_path: Path) -> None:
    """tempfile brings shutil, random, bz2 and lzma (~8 ms); importlib.resources brings tempfile and
    zipfile. A first check (an empty cache: it compiles the rules and writes its entries) needs neither:
    the safe writer makes its own temporaries. Run as `python -S`, as benchmarks/check_speed.py runs it,
    since this environment's .pth files import tempfile before any code of ours."""
    code = (
        "import sys, json\n"
        "sys.argv = ['gpu-advise', 'check', '--exit-zero', 'fixtures/example']\n"
        "from advisor.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('\\nMODULES ' + json.dumps(sorted(sys.modules)))\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), sysconfig.get_paths()["purelib"]]),
        "GPU_ADVISE_CACHE_DIR": str(tmp_path / "cache"),
    }
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )
    modules = set(json.loads(out.stdout.rpartition("\nMODULES ")[2]))
    assert any((tmp_path / "cache").rglob("rules-*.json"))  # it did write its entries
    assert not sorted(modules & {"tempfile", "shutil", "random", "bz2", "lzma", "zipfile", "importlib.util"})


def test_a_check_without_readme_or_method_keys_skips_their_readers() -> None:
    """The README launch reader (fence parser, shell-block reader, README run rules) and the method modules
    (LLaVA, BAdam, unfrozen_parameters, LLaMA-Factory freeze-tuning) load only when the project has a README
    command or a run writes their keys: fixtures/example has neither; a cold start pays for each module."""
    rc, modules = _modules_after(["check", "--exit-zero", "fixtures/example"])
    assert rc == 0
    lazy = {
        "advisor.sources.markdown",
        "advisor.sources.readme_launch",
        "advisor.plan.readme_runs",
        "advisor.estimate.memory.vision",
        "advisor.facts.llava",
        "advisor.facts.badam",
        "advisor.facts.unfrozen_params",
        "advisor.facts.freeze_tuning",
        "advisor.facts.layer_parts",
    }
    assert not sorted(modules & lazy)


def test_a_readme_command_still_loads_the_readme_reader(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("from transformers import Trainer\nTrainer().train()\n")
    (tmp_path / "README.md").write_text("# demo\n\n```bash\ntorchrun --nproc_per_node=4 train.py\n```\n")
    rc, modules = _modules_after(["check", "--exit-zero", str(tmp_path)])
    assert rc == 0
    assert {"advisor.sources.readme_launch", "advisor.plan.readme_runs"} <= modules
