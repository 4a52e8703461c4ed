"""The exit codes of every opkit command: one definition, documented in the README and `--help`."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0            # success: nothing to report
    PROBLEMS = 1      # problems found: diagnostics, drift, conformance failures
    USAGE = 2         # usage error: unknown op or backend, bad option, missing optional package
    INTERRUPTED = 130  # like a shell's Ctrl-C; a partial report is still written
