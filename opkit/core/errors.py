"""Errors every command shares. In a module of their own so that ``python -m opkit.cli`` (where
cli.py runs as ``__main__``) and the command modules raise and catch the same class."""


class UsageError(Exception):
    """A problem with how opkit was called: printed as one line, exit code 2."""
