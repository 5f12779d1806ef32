"""Ship the rule catalog (rules/*.yaml, at the top of the checkout) inside the wheel as advisor/_rules.

Everything else is configured in pyproject.toml. In a source checkout the engine reads rules/
directly; an installed wheel has no checkout, so the files travel with the package.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithRules(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "advisor" / "_rules"
        target.mkdir(parents=True, exist_ok=True)
        for rule in sorted(Path(__file__).parent.joinpath("rules").glob("*.yaml")):
            shutil.copy2(rule, target / rule.name)


setup(cmdclass={"build_py": BuildPyWithRules})
