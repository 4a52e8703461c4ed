"""JUnit XML of a conformance report, for CI systems (one testcase per case).

A pure function from the report's records to text. Each case is a ``<testcase>`` named by its
suite, example and type binding, in a class named by backend, domain and op version; what a CI
system should flag follows opkit's exit code: ``pass`` passes, ``xfail`` (an expectations entry
predicted it, with its reason), ``untested`` (opkit could not test it) and ``unconverted`` (the
converter in front of the runtime could not translate the model), never the runtime's fault, are
skipped, and every other outcome fails: wrong values, a refusal and an unexpected pass as a
``<failure>``, an error, a crash or a hang as an ``<error>``, each with the backend's message and
the repro bundle's path. Foreign text (backend messages) is data: ElementTree escapes it, and
characters XML 1.0 cannot hold (escape sequences, NUL) are written as ``\\xNN``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter

from ..results.causes import binding_text
from ..results.outcomes import CRASH, ERROR, PASS, TIMEOUT, UNCONVERTED, UNTESTED, XFAIL
from ..results.record import CaseRecord

ERRORS = (ERROR, CRASH, TIMEOUT)  # the runtime did not answer: JUnit's <error>
SKIPPED = (XFAIL, UNTESTED, UNCONVERTED)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
MESSAGE_LIMIT = 2000


def _text(value) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))


def _types(case: CaseRecord) -> str:
    return binding_text(case.types, ",")


def _name(case: CaseRecord) -> str:
    example = case.example if case.example and case.example != case.suite else ""
    return _text(f"{case.suite}{':' + example if example else ''}[{_types(case)}]")


def _classname(case: CaseRecord) -> str:
    return _text(f"{case.backend}.{case.domain}.{case.op}-{case.version}")


def _body(case: CaseRecord) -> str:
    lines = [case.message or ""]
    if case.minimal_example:
        lines.append(f"minimal case: {case.minimal_example}")
    if case.repro:
        lines.append(f"repro: python {case.repro}/repro.py")
    for opinion in case.second_opinion or ():
        lines.append(f"second opinion: {opinion.get('backend')} {opinion.get('verdict')}")
    return _text("\n".join(line for line in lines if line))


def junit_xml(cases: list[CaseRecord], name: str = "opkit test", duration: float = 0.0) -> str:
    """The JUnit XML text of ``cases`` (one ``<testsuite>`` per backend)."""
    root = ET.Element("testsuites", name=_text(name), time=f"{duration:.3f}")
    by_backend: dict[str, list[CaseRecord]] = {}
    for case in cases:
        by_backend.setdefault(case.backend, []).append(case)
    for backend, items in by_backend.items():
        counts = Counter("error" if c.outcome in ERRORS else "skipped" if c.outcome in SKIPPED
                         else "pass" if c.outcome == PASS else "failure" for c in items)
        suite = ET.SubElement(root, "testsuite", name=_text(backend), tests=str(len(items)),
                              failures=str(counts["failure"]), errors=str(counts["error"]),
                              skipped=str(counts["skipped"]),
                              time=f"{sum(c.duration_s or 0.0 for c in items):.3f}")
        for case in items:
            element = ET.SubElement(suite, "testcase", classname=_classname(case), name=_name(case),
                                    time=f"{case.duration_s or 0.0:.3f}")
            _verdict(element, case)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _verdict(element: ET.Element, case: CaseRecord) -> None:
    if case.outcome == PASS:
        return
    message = _text((case.message or case.outcome).splitlines()[0][:MESSAGE_LIMIT]) if case.message else case.outcome
    if case.outcome == XFAIL:
        reason = (case.expected or {}).get("reason", "") if isinstance(case.expected, dict) else ""
        ET.SubElement(element, "skipped", message=_text(f"expected failure: {reason}"[:MESSAGE_LIMIT]))
    elif case.outcome == UNTESTED:
        ET.SubElement(element, "skipped", message=_text(f"opkit could not test this case: {message}"))
    elif case.outcome == UNCONVERTED:
        converter = (case.details or {}).get("converter") or "the converter"
        ET.SubElement(element, "skipped", message=_text(f"{converter} could not translate the model (the converter's "
                                                        f"failure, not the runtime's): {message}"[:MESSAGE_LIMIT]))
    else:
        tag = "error" if case.outcome in ERRORS else "failure"
        ET.SubElement(element, tag, message=message, type=case.outcome).text = _body(case)
