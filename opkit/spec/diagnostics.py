"""Located diagnostics: ``PATH:LINE:COL: error: message (hint: ...)``."""

from __future__ import annotations

from dataclasses import dataclass

from .model import Location


@dataclass(frozen=True, slots=True)
class Diagnostic:
    location: Location
    message: str
    severity: str = "error"

    def __str__(self) -> str:
        return f"{self.location}: {self.severity}: {self.message}"


class SpecError(Exception):
    """Raised by ``load_*`` helpers that want one exception carrying every diagnostic."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(str(d) for d in self.diagnostics))
