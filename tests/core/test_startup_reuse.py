"""What start-up reuses instead of redoing (issue 18 item 11), and that reusing it never shows stale results.

- the settings file of a check is decoded once per process, keyed by its text (advisor/sources/settings.py);
- the installed package's rule files are hashed once and their digests kept in the cache under each file's
  size, mtime, ctime and inode (advisor/core/cache.py content_stamps);
- escape_text skips its large pattern for printable ASCII (advisor/core/escape.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from advisor.core.escape import escape_text
from tests.conftest import REPO
from tests.core.test_wheel import installed  # noqa: F401  (the module's fixture: the wheel, unpacked)

ARGS = "output_dir: out\ndataloader_num_workers: 0\ndataloader_prefetch_factor: 2\n"  # GA203 at 3:29


def test_settings_edited_between_two_checks_of_one_process_are_read_again(tmp_path: Path) -> None:
    """Two checks in one process (main called twice), the settings file edited between them: the second
    check obeys the new file, and each check asks the cache for the settings once (it asked five times)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / ".git").mkdir()
    (project / "args.yaml").write_text(ARGS, encoding="utf-8")
    settings = project / ".gpu-advise.toml"
    settings.write_text("hardware = '4xH100-NVL'\n", encoding="utf-8")
    code = (
        "import io, json, sys, contextlib\n"
        "from pathlib import Path\n"
        "from advisor.core import cache\n"
        "asked = []\n"
        "real = cache.cached\n"
        "def counted(name, *a, **k):\n"
        "    asked.append(name)\n"
        "    return real(name, *a, **k)\n"
        "cache.cached = counted\n"
        "from advisor.cli import main\n"
        "def check():\n"
        "    sys.argv = ['gpu-advise', 'check', '--format', 'json', 'args.yaml']\n"
        "    out = io.StringIO()\n"
        "    with contextlib.redirect_stdout(out):\n"
        "        try:\n            main()\n        except SystemExit:\n            pass\n"
        "    return sorted(f['rule'] for f in json.loads(out.getvalue())['findings'])\n"
        "first = check()\n"
        "first_asked = asked.count('settings')\n"
        "Path('.gpu-advise.toml').write_text(\"hardware = '4xH100-NVL'\\nignore = ['GA203']\\n\")\n"
        "print(json.dumps([first, first_asked, check()]))\n"
    )
    env = {**os.environ, "GPU_ADVISE_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(REPO)}
    env.pop("GPU_ADVISE_NO_CACHE", None)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=project, env=env, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]
    first, asked, second = json.loads(out.stdout.strip().splitlines()[-1])
    assert "GA203" in first
    assert asked == 1
    assert "GA203" not in second


def _check(site: Path, cwd: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PYTHONPATH": f"{site}:{sysconfig.get_paths()['purelib']}",
        "HF_HUB_OFFLINE": "1",
        "GPU_ADVISE_CACHE_DIR": str(cache),
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        [sys.executable, "-S", "-m", "advisor", "check", "--format", "json", "."],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def _severity(result: subprocess.CompletedProcess[str], rule: str) -> set[str]:
    assert result.returncode in (0, 1), result.stderr[-2000:]
    return {f["severity"] for f in json.loads(result.stdout)["findings"] if f["rule"] == rule}


def test_a_rule_file_edited_in_place_is_read_again_despite_the_kept_digests(
    installed: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The digests are reused while a file's size, mtime, ctime and inode stay: an edit that keeps the size
    and puts the mtime back (as `cp -p` or an unpacker can) still changes the ctime, and the check then
    compiles the edited rule instead of taking the prebuilt one."""
    import shutil

    project = tmp_path / "example"
    shutil.copytree(REPO / "fixtures" / "example", project)
    cache = tmp_path / "cache"
    rules = installed / "advisor" / "_rules"
    # files changed in the last two seconds are hashed and not kept (the racy case): let them settle
    newest = max(max(p.stat().st_mtime, p.stat().st_ctime) for p in rules.glob("*.yaml"))
    time.sleep(max(0.0, newest + 2.2 - time.time()))
    assert _severity(_check(installed, project, cache), "GA302") == {"warning"}
    assert list((cache / "gpu-advise").glob("digests-*.json")), "the rule files' digests were not kept"
    assert _severity(_check(installed, project, cache), "GA302") == {"warning"}  # from the kept digests

    rule = next(rules.glob("GA302-*.yaml"))
    original = rule.read_bytes()
    before = rule.stat()
    edited = original.replace(b"severity: warning", b"severity: info   ", 1)
    assert edited != original and len(edited) == len(original)
    try:
        rule.write_bytes(edited)
        os.utime(rule, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert rule.stat().st_size == before.st_size and rule.stat().st_mtime_ns == before.st_mtime_ns
        # past the racy window, so that only the changed ctime can tell the kept digest is stale
        time.sleep(max(0.0, rule.stat().st_ctime + 2.2 - time.time()))
        assert _severity(_check(installed, project, cache), "GA302") == {"info"}
    finally:
        rule.write_bytes(original)


def test_printable_ascii_is_never_escaped_and_every_other_ascii_character_is() -> None:
    """The fast path of escape_text (printable ASCII needs no pattern) agrees with the pattern."""
    for code in range(0x80):
        ch = chr(code)
        shown = escape_text(f"a{ch}b")
        if 0x20 <= code <= 0x7E:
            assert shown == f"a{ch}b", hex(code)
        else:
            assert ch not in shown and shown.startswith("a\\") and shown.endswith("b"), hex(code)
    assert escape_text("a\nb", keep_newlines=True) == "a\nb"
    assert escape_text("a\x1b\u202e\nb", keep_newlines=True) == "a\\x1b\\u202e\nb"
    assert escape_text("::error file=x::owned") == "\\x3a:error file=x::owned"  # the workflow guard still
