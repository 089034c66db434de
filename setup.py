"""Build hook: the wheel carries the top-level ``configs/`` as ``simulator/_configs``.

Everything else about the build is declared in ``pyproject.toml``. ``configs/`` stays at the top
of the repository, where people edit it, so it cannot be package data of ``simulator`` by
declaration alone: this copies it into the built package, where
:func:`simulator.config.configs_dir` finds it in an installed (non-editable) copy. An editable
install builds nothing and reads the checkout's ``configs/`` directly. ``MANIFEST.in`` puts
``configs/`` into the source distribution, so a wheel built from it carries the same files.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

CONFIGS = Path("configs")
INSTALLED_AS = Path("simulator", "_configs")


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


setup(cmdclass={"build_py": BuildPy})
