"""The pydantic models of advisor/schema and the frozen dataclasses they build stay in step, and a check whose
inputs are cached never imports pydantic."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from advisor import records
from advisor.schema import rules, to_view
from tests.conftest import REPO

PAIRS = [
    pytest.param(getattr(module, name), view, module.VIEWS, id=name)
    for module in (rules,)
    for name, view in module.VIEWS.items()
]


def _view_default(f: records.Field) -> object:
    return f.default_factory() if f.default_factory is not records.MISSING else f.default


@pytest.mark.parametrize(("model", "view", "views"), PAIRS)
def test_the_dataclass_has_the_models_fields_and_defaults(model, view, views) -> None:
    fields = {f.name: f for f in records.fields(view)}
    assert list(fields) == list(model.model_fields)
    for name, info in model.model_fields.items():
        f = fields[name]
        has_default = f.default is not records.MISSING or f.default_factory is not records.MISSING
        assert has_default == (not info.is_required()), name
        if has_default:
            assert _view_default(f) == to_view(info.get_default(call_default_factory=True), views), name


def test_default_settings_equal_an_empty_settings_file(tmp_path) -> None:
    from advisor.settings import Settings, parse_settings

    path = tmp_path / ".gpu-advise.toml"
    assert parse_settings("", path) == Settings(source=path)


def test_a_cached_check_never_imports_pydantic(tmp_path) -> None:
    code = (
        "import sys, json\n"
        "from pathlib import Path\n"
        "from advisor.check import CheckOptions, run_check\n"
        "run_check([Path('fixtures/example')], CheckOptions())\n"  # fills the cache
        "print(json.dumps(sorted(m for m in sys.modules)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "GPU_ADVISE_NO_CACHE"}
    env["GPU_ADVISE_CACHE_DIR"] = str(tmp_path)
    for run in range(2):
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True
        ).stdout
        if run == 0:  # the first run builds the cache, which validates with pydantic
            assert "pydantic" in json.loads(out.strip().splitlines()[-1])
    loaded = json.loads(out.strip().splitlines()[-1])
    assert not [m for m in loaded if m.split(".")[0] in ("pydantic", "pydantic_core")]
    assert "advisor.schema" not in loaded
