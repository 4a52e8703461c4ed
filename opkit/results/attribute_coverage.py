"""The attribute-pair coverage of a run: per (backend, op, domain, version), which levels of the
attributes and which pairs of levels of two attributes a case ran with (the attribute-pair rows of
the differential suite, ``opkit.conformance.attribute_pairs``; the levels and rows are
``opkit.cases.covering``).

An item travels like a skipped item (a dict, streamed by -j pool processes and Dask workers and
returned with the records), marked by its one key ``attribute_coverage``; ``split_coverage``
takes the items out of a run's skipped list, and the report holds them as ``attribute_coverage``.
Small by design: counts, plus the pairs (and values) not reached with why.
"""

from __future__ import annotations

COVERAGE_KEY = "attribute_coverage"
MAX_MISSING = 40  # pairs (and values) not reached listed per item; the rest counted in missing_more

_COUNT = {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2,
          "description": "[reached, total]"}
_MISSING = {"type": "array", "items": {"type": "object", "required": ["what", "why"],
                                        "properties": {"what": {"type": "string"}, "why": {"type": "string"}}}}

COVERAGE_SCHEMA = {
    "description": "Attribute-pair coverage of the differential suite per backend and op version: the attributes' "
                   "levels (enumerated values, both values of a flag, the boundaries of a number, 'absent'), how "
                   "many levels and pairs of levels of two attributes a case ran with (any outcome but untested), "
                   "and the pairs and values not reached, with why. Absent when no op version has levels.",
    "type": "array", "items": {
        "type": "object",
        "required": ["backend", "op", "domain", "version", "attributes", "values", "pairs", "rows"],
        "properties": {
            "backend": {"type": "string"}, "op": {"type": "string"}, "domain": {"type": "string"},
            "version": {"type": "integer"},
            "attributes": {"type": "array", "items": {
                "type": "object", "required": ["name", "levels", "values_reached", "pairs", "pairs_reached"],
                "properties": {"name": {"type": "string"}, "levels": {"type": "array", "items": {"type": "string"}},
                               "values_reached": {"type": "integer"}, "pairs": {"type": "integer"},
                               "pairs_reached": {"type": "integer"}}}},
            "values": _COUNT, "pairs": _COUNT,
            "rows": {**_COUNT, "description": "[rows run, rows]: the covering array's rows that ran a case"},
            "failing_rows": {"type": "integer"},
            "duration_s": {"type": "number", "description": "wall time of the rows"},
            "left_out": {"type": "integer", "description": "pairs no row holds (the row cap)"},
            "missing_values": _MISSING, "missing_pairs": _MISSING,
            "missing_more": {"type": "integer", "description": "pairs and values not reached beyond those listed"},
        }}}


def coverage_item(entry: dict) -> dict:
    """The item a runner streams for one coverage entry."""
    return {COVERAGE_KEY: entry}


def is_coverage(item) -> bool:
    return isinstance(item, dict) and COVERAGE_KEY in item


def split_coverage(items: list[dict]) -> tuple[list[dict], list[dict]]:
    """(skipped items, coverage entries) of a run's non-record items."""
    skipped = [item for item in items if not is_coverage(item)]
    coverage = [item[COVERAGE_KEY] for item in items if is_coverage(item)]
    return skipped, coverage


def report_coverage(report: dict) -> dict[tuple, dict]:
    """(backend, domain, op, version) -> its coverage entry in ``report`` (the last one given)."""
    out = {}
    for entry in report.get(COVERAGE_KEY) or ():
        if isinstance(entry, dict):
            out[(entry.get("backend"), entry.get("domain"), entry.get("op"), entry.get("version"))] = entry
    return out


__all__ = ["COVERAGE_KEY", "COVERAGE_SCHEMA", "coverage_item", "is_coverage", "split_coverage", "report_coverage"]
