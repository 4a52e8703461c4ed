"""Every subcommand of ``opkit``, one module each, listed in ``table.COMMANDS``; each exposes
``register(subparsers)``. What they share about the project is in ``common``."""
