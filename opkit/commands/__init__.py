"""Subcommands that live in their own modules; each exposes ``register(subparsers)``."""
