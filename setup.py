"""pbem's build hook; the project itself is described in pyproject.toml.

The wheel's ``pbem`` package gets what the server reads besides its Python files:
``templates/`` and ``migrations/`` from the top of the repository, and every translation
catalog compiled to its ``.mo`` (without it German would silently be English). An
editable install (``make install``) compiles the catalogs in place and leaves the rest
where it is, which is where the server looks in a checkout.
"""

import runpy
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
SHARED = ("templates", "migrations")
TRANSLATIONS = HERE / "pbem" / "translations"
compile_stale = runpy.run_path(str(HERE / "pbem" / "catalogs.py"))["compile_stale"]


class BuildPy(build_py):
    """build_py, plus the shared folders and the compiled catalogs."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            compile_stale(TRANSLATIONS)
            return
        package = Path(self.build_lib) / "pbem"
        for name in SHARED:
            shutil.rmtree(package / name, ignore_errors=True)  # nothing stale from a build
            shutil.copytree(HERE / name, package / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        compile_stale(TRANSLATIONS, into=package / "translations")


setup(cmdclass={"build_py": BuildPy})
