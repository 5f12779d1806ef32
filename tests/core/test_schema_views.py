"""Each input type is declared once, as a record (advisor.core.datacodec.validate checks input against it):
no check imports pydantic, not even one that fills an empty cache, and an empty settings file gives the
declared defaults."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO


def test_default_settings_equal_an_empty_settings_file(tmp_path) -> None:
    from advisor.sources.settings import Settings, parse_settings

    path = tmp_path / ".gpu-advise.toml"
    assert parse_settings("", path) == Settings(source=path)


def test_no_check_imports_pydantic_cached_or_not(tmp_path) -> None:
    code = (
        "import sys, json\n"
        "from pathlib import Path\n"
        "from advisor.pipeline.check import CheckOptions, run_check\n"
        "run_check([Path('fixtures/example')], CheckOptions())\n"
        "print(json.dumps(sorted(m for m in sys.modules)))\n"
    )
    for no_cache in ("1", None):  # an empty cache (rules, settings, machines validated) and a warm one
        env = {k: v for k, v in os.environ.items() if k != "GPU_ADVISE_NO_CACHE"}
        env["GPU_ADVISE_CACHE_DIR"] = str(tmp_path)
        if no_cache:
            env["GPU_ADVISE_NO_CACHE"] = no_cache
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True
        ).stdout
        loaded = json.loads(out.strip().splitlines()[-1])
        assert not [m for m in loaded if m.split(".")[0] in ("pydantic", "pydantic_core")]
        if no_cache:
            assert "advisor.engine.rule_schema" in loaded  # the rule files were validated, without pydantic
