"""The installed wheel works without the checkout: the rule catalog and data ship inside it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # build from a clean copy: an in-tree build reuses build/ and may ship files of an older tree
    source = out / "src"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".git", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", "tests"
        ),
    )
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(source),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if build.returncode != 0:
        pytest.fail(f"pip wheel failed: {build.stderr[-2000:]}")
    wheel = next(out.glob("gpu_advise-*.whl"))
    target = out / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(target)
    return target


def _run(site: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # -S: no site processing, so the editable install of the checkout (a .pth finder) is not
    # loaded; third-party packages come from site-packages on PYTHONPATH, the package from the wheel.
    env = {
        "PYTHONPATH": f"{site}:{sysconfig.get_paths()['purelib']}",
        "HF_HUB_OFFLINE": "1",
        "GPU_ADVISE_NO_CACHE": "1",
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        [sys.executable, "-S", "-m", "advisor", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_wheel_ships_every_rule_and_data_file(installed: Path) -> None:
    shipped = sorted(p.name for p in (installed / "advisor" / "_rules").glob("*.yaml"))
    assert shipped == sorted(p.name for p in (REPO / "rules").glob("*.yaml"))
    assert (installed / "advisor" / "data" / "gpus.yaml").is_file()
    assert list((installed / "advisor" / "data" / "keys").glob("*.json"))
    assert list((installed / "advisor" / "data" / "machines").glob("*.yaml"))


def test_installed_wheel_checks_the_example_outside_the_checkout(installed: Path, tmp_path: Path) -> None:
    project = tmp_path / "example"
    shutil.copytree(REPO / "fixtures" / "example", project)
    result = _run(installed, ["check", ".", "--format", "json"], project)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert {"GA101"} <= {f["rule"] for f in report["findings"]}
    listed = _run(installed, ["rules"], project)
    assert listed.returncode == 0 and "GA203" in listed.stdout
    module = _run(installed, ["hardware", "show", "4xH100-NVL"], project)
    assert module.returncode == 0, module.stderr


def test_installed_wheel_starts_from_the_prebuilt_catalog(installed: Path, tmp_path: Path) -> None:
    """Issue 18 item 11: the build decodes the rule catalog, the GPU catalog and the built-in machines
    into advisor/_prebuilt.json, so a fresh runner (no cache: GPU_ADVISE_NO_CACHE=1 here) loads them
    without validating a rule file or a descriptor: pydantic and the rule schema are never imported."""
    assert (installed / "advisor" / "_prebuilt.json").is_file()
    # its literal twin (advisor/core/cache.py PREBUILT_MODULE) is the same document, so they never drift
    dump = "import json, advisor._prebuilt as m; print(json.dumps(m.DOCUMENT))"
    literal = _python(installed, dump, tmp_path)
    assert literal.returncode == 0, literal.stderr
    json_text = (installed / "advisor" / "_prebuilt.json").read_text(encoding="utf-8")
    assert json.loads(literal.stdout) == json.loads(json_text)
    probe = (
        "import sys\n"
        "from advisor.engine.rule_engine import load_catalog\n"
        "from advisor.sources.gpu_catalog import resolve_gpu\n"
        "from advisor.sources.hardware import load_hardware\n"
        "rules = load_catalog()\n"
        "machine = load_hardware('4xH100-NVL')\n"
        "print(len(rules), rules[0].path.parent.name, machine.gpu.id, resolve_gpu('H100 SXM').id)\n"
        "schemas = ('pydantic', 'advisor.sources.schema', 'advisor.engine.rule_schema')\n"
        "print(sorted(m for m in sys.modules if m.startswith(schemas)))\n"
    )
    result = _python(installed, probe, tmp_path)
    assert result.returncode == 0, result.stderr
    counts, modules = result.stdout.splitlines()
    assert counts == f"{len(list((REPO / 'rules').glob('*.yaml')))} _rules H100-NVL H100-SXM"
    assert modules == "[]"
    # the literal is what a start-up reads: without the JSON file the catalog is still the prebuilt one
    moved = installed / "advisor" / "_prebuilt.json.moved"
    (installed / "advisor" / "_prebuilt.json").rename(moved)
    try:
        from_literal = _python(installed, probe, tmp_path)
    finally:
        moved.rename(installed / "advisor" / "_prebuilt.json")
    assert from_literal.returncode == 0, from_literal.stderr
    assert from_literal.stdout.splitlines() == [counts, "[]"]
    # the files changed since the build: the prebuilt entry is not used, the rule file is read
    rule = next((installed / "advisor" / "_rules").glob("GA203-*.yaml"))
    original = rule.read_text(encoding="utf-8")
    try:
        rule.write_text(original.replace("severity: error", "severity: info", 1), encoding="utf-8")
        stale = _python(installed, probe, tmp_path)
        assert stale.returncode == 0, stale.stderr
        assert "advisor.engine.rule_schema" in stale.stdout.splitlines()[1]
    finally:
        rule.write_text(original, encoding="utf-8")


def _python(site: Path, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PYTHONPATH": f"{site}:{sysconfig.get_paths()['purelib']}",
        "HF_HUB_OFFLINE": "1",
        "GPU_ADVISE_NO_CACHE": "1",
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
