"""The name opkit is installed by.

The package index's ``opkit`` belongs to an unrelated project, so opkit is distributed as
``opkit-onnx`` (the import name and the command stay ``opkit``). Every hint that tells a user what
to install names it through ``pip_install``, so the two cannot drift apart.
"""

from __future__ import annotations

DISTRIBUTION = "opkit-onnx"


def pip_install(*extras: str) -> str:
    """The command that installs opkit with ``extras`` (``pip install 'opkit-onnx[ort]'``)."""
    return f"pip install '{DISTRIBUTION}[{','.join(extras)}]'" if extras else f"pip install {DISTRIBUTION}"
