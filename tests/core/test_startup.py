"""The check path stays light: it never imports torch, transformers, accelerate or peft."""

from __future__ import annotations

import json
import subprocess
import sys

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
