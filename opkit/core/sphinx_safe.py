"""A Sphinx extension for sites built from spec text: docutils may not read local files.

opkit.core.markdown already renders spec text without directives; this is the second layer, so that a
directive that slipped through (``include``, ``literalinclude``, ``csv-table :file:``, ``raw
:file:``) still cannot copy a file of the building machine into the site. Used by opkit's own site
(docs/conf.py) and by the sites ``opkit docs`` builds for projects.
"""


def _no_file_insertion(app) -> None:
    app.env.settings["file_insertion_enabled"] = False


def setup(app):
    app.connect("builder-inited", _no_file_insertion)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
