"""The wheel's package list, found rather than listed, so a new package cannot be left out.

Everything else about the build is in pyproject.toml. The list is built here because
``[tool.setuptools.packages.find]`` finds folders under their own names, and the folder
``prompts/`` is installed as the package ``totem_prompts`` (pyproject's ``package-dir``).
A folder of Python without ``__init__.py`` is not found; tests/unit/test_packaging.py holds that
every one has it, and tests/doors/test_installed_wheel.py drives each door from the built wheel.
"""

from setuptools import find_packages, setup

DOORS_AND_ENGINE = ["totem_engine", "totem_lsp", "totem_cli", "totem_acp", "totem_mcp_server"]

setup(packages=[*find_packages(include=[f"{top}*" for top in DOORS_AND_ENGINE]), "totem_prompts"])
