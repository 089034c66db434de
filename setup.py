"""Build hook: the folder ``models/`` installs as ``snapsim_models``; ``configs/`` ships too.

Everything else about the build is declared in ``pyproject.toml``; this file does two things that
a declaration cannot.

*The package list.* The PostgreSQL model lives in the top-level folder ``models/`` but is
installed under the import name ``snapsim_models``: a top-level ``models`` would be shadowed by
any ``models.py`` or ``models/`` in the user's working directory (which ``python -m``, ``python
-c`` and notebooks put first on ``sys.path``), and the ``snapsim.models`` entry point would then
load the user's module. ``[tool.setuptools.packages.find]`` cannot rename (it ignores
``package-dir``), so the packages are found here: every package under ``simulator/``, and every
package under ``models/`` renamed to ``snapsim_models``, with ``package_dir`` telling setuptools
where the renamed ones are. Both editable and non-editable installs honour the mapping. The
modules of ``models/`` import each other relatively, so they work under that name.

*The configuration.* ``configs/`` stays at the top of the repository, where people edit it, so it
cannot be package data of ``simulator`` by declaration alone: :class:`BuildPy` copies it into the
built package, where :func:`simulator.config.configs_dir` finds it in an installed
(non-editable) copy. An editable install builds nothing and reads the checkout's ``configs/``
directly. ``MANIFEST.in`` puts ``configs/`` into the source distribution, so a wheel built from it
carries the same files.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

CONFIGS = Path("configs")
INSTALLED_AS = Path("simulator", "_configs")
MODELS_FOLDER = "models"
MODELS_PACKAGE = "snapsim_models"
"""Import name of the folder ``models/`` once installed."""


def packages() -> list[str]:
    """``simulator``, and ``models`` as ``snapsim_models``, with their subpackages.

    A package is a folder holding modules (``models/shmem`` has no ``__init__.py``).
    """
    found = sorted({".".join(path.parent.parts)
                    for folder in ("simulator", MODELS_FOLDER)
                    for path in Path(folder).rglob("*.py")})
    return [MODELS_PACKAGE + name.removeprefix(MODELS_FOLDER)
            if name.split(".")[0] == MODELS_FOLDER else name
            for name in found]


class BuildPy(build_py):
    """``build_py`` that also copies ``configs/`` into the built ``simulator`` package."""

    def run(self) -> None:
        """Build the packages, then copy ``configs/`` unless this is an editable build."""
        super().run()
        if not self.editable_mode:
            self.copy_tree(str(CONFIGS), str(Path(self.build_lib) / INSTALLED_AS))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        """The built files, the copied configuration included."""
        copied = [
            str(Path(self.build_lib) / INSTALLED_AS / path.relative_to(CONFIGS))
            for path in sorted(CONFIGS.rglob("*"))
            if path.is_file()
        ]
        return [*super().get_outputs(include_bytecode), *copied]


setup(
    packages=packages(),
    package_dir={MODELS_PACKAGE: MODELS_FOLDER},
    cmdclass={"build_py": BuildPy},
)
