"""Ship the rule catalog (rules/*.yaml, at the top of the checkout) inside the wheel as advisor/_rules, and
what start-up would otherwise decode on a fresh machine as advisor/_prebuilt.json, with its literal twin
advisor/_prebuilt.py (the same document as a Python literal, generated from that JSON text: faster to load).

Everything else is configured in pyproject.toml. In a source checkout the engine reads rules/ directly
(through the runtime cache); an installed wheel has no checkout, so the files travel with the package.
The prebuilt file holds the compiled rule catalog, the GPU catalog and the built-in machines, each keyed
by the content of the files it was built from (advisor/core/cache.py `prebuilt`): a CI runner starts with an
empty cache, and this makes its first check as fast as a warm one. Building it needs PyYAML
(pyproject.toml's build requirement); without it the wheel is built without it and works as before.
"""

import os
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _prebuilt_document() -> tuple[str, str]:
    """The prebuilt entries' JSON text, computed by the package's own builders from the checkout's files,
    and the source of the literal module generated from that text."""
    os.environ["GPU_ADVISE_NO_CACHE"] = "1"  # built from the files, never from a cache entry
    os.environ["GPU_ADVISE_NO_PREBUILT"] = "1"  # nor from an older prebuilt file in the tree
    sys.path.insert(0, str(HERE))
    try:
        from advisor.core.cache import prebuilt_document, prebuilt_module_source
        from advisor.engine.rule_engine import prebuilt_rules
        from advisor.sources.gpu_catalog import prebuilt_gpus
        from advisor.sources.hardware import prebuilt_machines

        text = prebuilt_document(
            {"rules": prebuilt_rules(HERE / "rules"), "gpus": prebuilt_gpus(), **prebuilt_machines()}
        )
        return text, prebuilt_module_source(text)
    finally:
        sys.path.remove(str(HERE))
        for name in ("GPU_ADVISE_NO_CACHE", "GPU_ADVISE_NO_PREBUILT"):
            os.environ.pop(name, None)


class BuildPyWithRules(build_py):
    def run(self) -> None:
        super().run()
        package = Path(self.build_lib) / "advisor"
        target = package / "_rules"
        target.mkdir(parents=True, exist_ok=True)
        for rule in sorted(HERE.joinpath("rules").glob("*.yaml")):
            shutil.copy2(rule, target / rule.name)
        try:
            text, module = _prebuilt_document()
        except ImportError as exc:  # a build environment without PyYAML
            print(f"gpu-advise: no prebuilt catalog ({exc}); start-up decodes it", file=sys.stderr)
            return
        (package / "_prebuilt.json").write_text(text, encoding="utf-8")
        (package / "_prebuilt.py").write_text(module, encoding="utf-8")


setup(cmdclass={"build_py": BuildPyWithRules})
