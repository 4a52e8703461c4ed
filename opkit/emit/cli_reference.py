"""The command reference (docs/commands.md) rendered from opkit's argparse parser.

A pure function of the parser, so the reference cannot drift from the code: docs/conf.py calls
``render_cli_reference(build_parser())`` while Sphinx reads docs/commands.md, replacing the marker
line ``% opkit:cli-reference``.
"""

from __future__ import annotations

import argparse
import re

_SPECIAL = re.compile(r"([\\*_<\[\]])")


def _text(text: str) -> str:
    """Help text is plain text: escape what markdown would read as HTML (``<domain>``), emphasis
    or links, outside backtick code spans; collapse whitespace."""
    parts = re.split(r"(`+[^`]*`+)", " ".join(text.split()))
    return "".join(p if i % 2 else _SPECIAL.sub(r"\\\1", p) for i, p in enumerate(parts))


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    for action in parser._actions:  # noqa: SLF001 - argparse has no public walk
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def _invocation(action: argparse.Action) -> str:
    if not action.option_strings:
        name = action.metavar or (
            "{" + ",".join(map(str, action.choices)) + "}" if action.choices else action.dest)
        if action.nargs in ("*", "?"):
            return f"[{name}]" + (" ..." if action.nargs == "*" else "")
        if action.nargs == "+":
            return f"{name} [{name} ...]"
        return str(name)
    flags = ", ".join(action.option_strings)
    if action.nargs == 0:
        return flags
    metavar = action.metavar or (
        "{" + ",".join(map(str, action.choices)) + "}" if action.choices else action.dest.upper())
    return f"{flags} {metavar}"


def _help(action: argparse.Action, parser: argparse.ArgumentParser) -> str:
    text = action.help or ""
    if text == argparse.SUPPRESS:
        return ""
    if "%(" in text:
        try:
            text = text % {**vars(action), "prog": parser.prog,
                           "default": action.default, "choices": ", ".join(map(str, action.choices or ()))}
        except (KeyError, TypeError, ValueError):
            pass
    extras = []
    if action.choices and action.option_strings and "{" not in _invocation(action):
        extras.append("choices: " + ", ".join(f"`{c}`" for c in action.choices))
    if (action.option_strings and action.default not in (None, False, argparse.SUPPRESS)
            and action.nargs != 0 and "default" not in text):
        extras.append(f"default: `{action.default}`")
    if getattr(action, "required", False) and action.option_strings:
        extras.append("required")
    text = _text(text)
    if extras:
        text = (text + " " if text else "") + "(" + "; ".join(extras) + ")"
    return text


def _options(parser: argparse.ArgumentParser) -> list[str]:
    lines = []
    for action in parser._actions:  # noqa: SLF001
        if isinstance(action, (argparse._SubParsersAction, argparse._HelpAction)):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        lines.append(f"- `{_invocation(action)}`: {_help(action, parser)}".rstrip(": ").rstrip())
    return lines


def _usage(parser: argparse.ArgumentParser) -> str:
    """The usage line at a fixed width, so the page does not depend on the terminal."""
    formatter = argparse.HelpFormatter(parser.prog, width=100)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)  # noqa: SLF001
    usage = formatter.format_help().strip()
    return usage[len("usage: "):] if usage.startswith("usage: ") else usage


def render_cli_reference(parser: argparse.ArgumentParser) -> str:
    """Markdown: the global usage and options, then one section per subcommand (sorted)."""
    out = ["```text", _usage(parser), "```", ""]
    if parser.description:
        out += [_text(parser.description), ""]
    options = _options(parser)
    if options:
        out += ["Global options (before the command):", ""] + options + [""]
    if parser.epilog:
        out += [_text(parser.epilog), ""]
    sub = _subparsers(parser)
    if sub is None:
        return "\n".join(out)
    helps = {a.dest: a.help for a in sub._choices_actions}  # noqa: SLF001
    for name in sorted(sub.choices):
        p = sub.choices[name]
        out += [f"(l-opkit-cmd-{name})=", "", f"## opkit {name}", ""]
        if helps.get(name):
            out += [f"*{_text(helps[name])}*", ""]
        out += ["```text", _usage(p), "```", ""]
        if p.description:
            out += [_text(p.description), ""]
        options = _options(p)
        if options:
            out += ["Arguments and options:", ""] + options + [""]
        if p.epilog:
            out += [_text(p.epilog), ""]
    return "\n".join(out).rstrip() + "\n"
