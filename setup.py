"""Packaging glue: the wheel carries opkit's built-in specs and what is generated from them.

The checkout keeps ``specs/``, ``generated/`` and ``conformance/expectations/`` at its top level
(they are the project's sources and outputs, reviewed as such); a wheel puts them under
``opkit/_builtin/`` so that an installed opkit works from any folder. Only what commands read is
copied: the specs, the generated kernels and tests, and the expectation files. The generated docs
pages and the sweep reports stay in the checkout (the site is built from there).
"""

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

BUILTIN = ("specs", os.path.join("generated", "kernels"), os.path.join("generated", "tests"),
           os.path.join("conformance", "expectations"))
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".*", "*.tmp-*")


class BuildWithBuiltinSpecs(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads them from the checkout
        here = os.path.dirname(os.path.abspath(__file__))
        target = os.path.join(self.build_lib, "opkit", "_builtin")
        shutil.rmtree(target, ignore_errors=True)  # a spec removed since the last build must not linger
        for folder in BUILTIN:
            source = os.path.join(here, folder)
            if not os.path.isdir(source):
                raise SystemExit(f"setup.py: {folder}/ is missing; build from a checkout or an sdist of opkit")
            shutil.copytree(source, os.path.join(target, folder), ignore=SKIP, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildWithBuiltinSpecs})
