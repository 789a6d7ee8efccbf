"""Build hook: the wheel carries what hipocampo needs outside a checkout (issue 17 §4).

``supabase/migrations``, ``supabase/data``, ``supabase/schemas`` and the root ``config.toml``
(as ``config.default.toml``) are copied into ``hipocampo/_resources/`` of the built package; in a
checkout (editable install) hipocampo reads them where they are (``hipocampo.resources``).
Everything else is in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildWithResources(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "hipocampo" / "_resources"
        for name in ("migrations", "data", "schemas"):
            dst = target / name
            shutil.rmtree(dst, ignore_errors=True)
            dst.mkdir(parents=True)
            for f in sorted((ROOT / "supabase" / name).glob("*.sql")):
                shutil.copy2(f, dst / f.name)
        shutil.copy2(ROOT / "config.toml", target / "config.default.toml")


setup(cmdclass={"build_py": BuildWithResources})
