"""Reference kernels: generated from the specs (generated/kernels/), loaded through ``registry``.

``KernelValidationError`` is what a generated kernel raises when its inputs or attributes break
a rule of the spec: it names the op, the version and the rule (a generated rule such as
``type:T`` / ``rank:input`` / ``attribute-domain:upper``, or a spec label such as ``C1``).
"""

from __future__ import annotations


class KernelValidationError(ValueError):
    """Inputs or attributes that the op version does not accept."""

    def __init__(self, op: str, version: int, rule: str, message: str):
        self.op, self.version, self.rule, self.message = op, version, rule, message
        super().__init__(f"{op}-{version} [{rule}]: {message}")

    def __reduce__(self):
        return (type(self), (self.op, self.version, self.rule, self.message))


__all__ = ["KernelValidationError"]
