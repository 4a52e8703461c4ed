"""Names derived from op names: module and function names of generated files.

One rule for every layer: the spec loader checks that two ops do not meet on one module name, the
kernel registry finds a generated kernel module by it, and the emitters write it.
"""

from __future__ import annotations

import re


def snake(name: str) -> str:
    """Op name -> module/function name: 'GatherND' -> 'gather_nd', 'Trilu' -> 'trilu'."""
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return re.sub(r"\W", "_", s).lower()


def module_path(spec) -> str:
    """Where an op's generated kernel module lives, relative to the project root."""
    return f"generated/kernels/{spec.domain}/{snake(spec.name)}.py"


def function_name(spec, since: int) -> str:
    """The generated kernel function of one op version."""
    return f"{snake(spec.name)}_{since}"
