"""Spec ``doc`` text on the docs pages is foreign text (imported from onnx / onnxruntime, or written
by whoever wrote a project's specs): it must not reach Sphinx as MyST that runs directives, reads
files or emits raw HTML (opkit/core/markdown.py: safe_markdown, safe_plain, safe_inline).

The checks parse what opkit writes with MyST's own markdown parser (markdown-it with MyST's
plugins) and look at the tokens it makes: no directive fence, no raw HTML but a few attribute-free
inline tags, no roles but safe ones, no targets, footnotes or links to local files. An end-to-end
test builds a project's site with ``opkit docs``.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jinja2.filters import do_indent

from opkit.emit import GenContext
from opkit.emit import docs_pages as dp
from opkit.emit import page_text
from opkit.core.markdown import SAFE_ROLES, good_destination, safe_inline, safe_markdown, safe_plain
from opkit.spec.model import (
    Attribute, Example, FormalParameter, Kernel, Lowering, OpSpec, OpVersion, Property, Rule, TensorValue, Tolerance,
    TypeConstraint, ValueDomain,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HOSTILE = {
    "include": "Before.\n\n```{include} /etc/passwd\n```\n\nAfter.",
    "literalinclude": "````{literalinclude} /etc/passwd\n````",
    "eval-rst": "```{eval-rst}\n.. include:: /etc/passwd\n\n.. raw:: html\n\n   <script>alert('rst')</script>\n```",
    "raw": "```{raw} html\n<script>alert('raw')</script>\n```",
    "tilde": "~~~{include} /etc/passwd\n~~~",
    "spaced": "```   {include} /etc/passwd\n```",
    "in list": "- item\n\n  ```{include} /etc/passwd\n  ```",
    "after bullet": "- ```{include} /etc/passwd\n  ```",
    "in quote": "> ```{include} /etc/passwd\n> ```",
    "indented 4": "text\n\n    ```{include} /etc/passwd\n    ```",
    "colon": ":::{include} /etc/passwd\n:::",
    "rst raw": ".. raw:: html\n\n   <script>alert('rst-text')</script>",
    "script": "Hello <script>alert(1)</script> world.",
    "script block": "<script>\nalert(1)\n</script>",
    "html block": "<div onclick=\"alert(1)\">x</div>\n<img src=x onerror=alert(1)>",
    "comment": "<!-- hidden -->\n<iframe src=\"https://evil.example\"></iframe>",
    "br then script": "<br>\n<script>alert(1)</script>",
    "tag attrs": "x <b onmouseover=alert(1)>y</b> <br onclick=alert(1)>",
    "autolink": "<file:///etc/passwd> <javascript:alert(1)>",
    "roles": "{download}`/etc/passwd` {eval-rst}`x` {raw-html}`<b>` {include}`/etc/passwd` {doc}`x`",
    "role spans": "{download}`a``b` {math}`` x ` <script>alert(1)</script> ``",
    "target": "(my-target)=\n\n# Heading",
    "substitution": "{{ ''.__class__.__mro__ }} and {{ env }}",
    "links": "[a](../../../../etc/passwd) [b](/etc/passwd) [c](path:/etc/passwd) "
             "[d](javascript:alert(1)) [e](&#46;&#46;/&#46;&#46;/etc/passwd) [f](%2e%2e/x.txt) "
             "[g](<../../etc/passwd>) [h](file:///etc/passwd)",
    "images": "![a](../../../../etc/passwd) ![b](/etc/passwd)",
    "definitions": "[ref]: ../../../../etc/passwd\n\nsee [ref] and [other]\n\n[other]:\n  /etc/passwd",
    "footnote": "text[^1]\n\n[^1]: ```{include} /etc/passwd",
    "code span break": "a `b\n- <script>alert(1)</script>`",
    "code span lines": "a `b\nc` <script>alert(1)</script> `d`",
    "escaped tick": "\\`<script>alert(1)</script>`",
    "link dest tick": "[x](`)<script>alert(1)</script>`",
    "table pipe": "| a | b |\n|---|---|\n| `x | <script>alert(1)</script>` |",
    "unclosed fence": "```\n<script>alert(1)</script>",
    "fence in item closes": "1. x\n    ```\n    <b>\n   ```\n   <script>alert(1)</script>",
    "fence dedent": " ```\n<script>\n ```\n<script>alert(1)</script>",
    "lazy": "- ```\n  ```\n  <script>alert(1)</script>",
    "tabs": "-\t```\n\t```\n\t<script>alert(1)</script>",
    "nul": "x\x00<script>alert(1)</script>\x00",
    "line separators": "x\u2028```{include} /etc/passwd\u2028```\x85<script>alert(1)</script>\x0c(t)=",
    "nbsp closer": "```\n```\xa0\n<script>alert(1)</script>",
}


# ------------------------------------------------------------------------------------------------
# MyST's view of a page


def _parser(deflist: bool):
    pytest.importorskip("myst_parser")
    from myst_parser.config.main import MdParserConfig
    from myst_parser.mdit_to_docutils.base import DocutilsRenderer
    from myst_parser.parsers.mdit import create_md_parser

    config = MdParserConfig(enable_extensions={"deflist"} if deflist else set())
    return create_md_parser(config, DocutilsRenderer)


_KEPT_TAG = re.compile(r"<(?:br ?/?|/?(?:i|b|em|strong|sub|sup))>")


def problems(markdown: str, deflist: bool = False, trusted_roles=(), trusted_directives=(),
             trusted_html=(), targets=False) -> list[str]:
    """What MyST would run or embed from ``markdown``: directive fences, raw HTML (but the few
    attribute-free inline tags), roles outside SAFE_ROLES, targets, footnotes, links and images
    to local files."""
    md = _parser(deflist)
    env: dict = {}
    found = []

    def walk(tokens):
        for t in tokens:
            if t.type == "fence":
                name = (t.info.strip().split() or [""])[0]
                if name.startswith("{") and name not in trusted_directives:
                    found.append(f"directive {t.info!r}")
            elif t.type == "html_block" and not t.content.strip().startswith(tuple(trusted_html) or ("\0",)):
                found.append(f"html block {t.content!r}")
            elif t.type == "html_inline" and not _KEPT_TAG.fullmatch(t.content) and t.content not in trusted_html:
                found.append(f"html {t.content!r}")
            elif t.type == "myst_target" and targets and t.content.startswith("l-onnx-"):
                pass
            elif t.type == "myst_role" and t.meta["name"] not in SAFE_ROLES | set(trusted_roles):
                found.append(f"role {t.meta['name']!r}")
            elif t.type in ("myst_target", "footnote_ref", "footnote_block", "substitution_block",
                            "substitution_inline"):
                found.append(t.type)
            elif t.type == "link_open" and not good_destination(t.attrGet("href") or ""):
                found.append(f"link {t.attrGet('href')!r}")
            elif t.type == "image" and not good_destination(t.attrGet("src") or ""):
                found.append(f"image {t.attrGet('src')!r}")
            if t.children:
                walk(t.children)

    walk(md.parse(markdown, env))
    for label, ref in (env.get("references") or {}).items():
        if not good_destination(ref.get("href", "")):
            found.append(f"reference {label!r} -> {ref.get('href')!r}")
    return found


SENTINEL = "```python\nTRUSTED = '<script>sentinel</script>'\n```"


def _contexts(doc: str):
    """The places a doc goes on an operator page: at top level, inside a list item, after text on a
    list item's line; each followed by a trusted code block that must stay a code block."""
    yield "top", f"# Op\n\n{safe_markdown(doc)}\n\n- **domain**: `x`\n\n{SENTINEL}\n"
    yield "item", f"* **alpha - FLOAT** (required):\n\n  {page_text._indent(safe_markdown(doc))}\n* **beta**\n\n{SENTINEL}\n"
    yield "plain", f"### Changes\n\n{safe_plain(doc)}\n\n{SENTINEL}\n"
    yield "plain item", f"- **low** to `x`: {page_text.plain(doc, inline=True)}\n\n{SENTINEL}\n"
    yield "continues", f"- **low** to `x`: {do_indent(page_text.plain(doc, continues=True), 2)}\n\n\n{SENTINEL}\n"
    yield "name", f"* **{page_text._text(doc)} - FLOAT** ({page_text._span(doc)}):\n\n#### {page_text._text(doc)}\n\n{SENTINEL}\n"
    cell = page_text.plain(doc, inline=True).replace("|", "\\|")
    yield "cell", f"| a | b |\n|---|---|\n| {cell} | {safe_inline(doc)} |\n\n{SENTINEL}\n"


def _check(doc: str, deflist: bool = False) -> None:
    for where, page in _contexts(doc):
        page = dp.tidy(page)  # as render_page does
        found = problems(page, deflist)
        assert not found, f"{where}: {found}\n{page}"
        md = _parser(deflist)
        fences = [t.content for t in md.parse(page) if t.type == "fence"]
        assert fences and fences[-1] == "TRUSTED = '<script>sentinel</script>'\n", f"{where}: the doc swallowed the page\n{page}"


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_doc_is_neutralised(name):
    _check(HOSTILE[name])
    _check(HOSTILE[name], deflist=True)


def test_the_unsafe_text_stays_readable():
    out = safe_markdown(HOSTILE["include"])
    assert "```text\n{include} /etc/passwd\n```" in out
    assert safe_markdown("a < b, x > y, a <= b") == "a < b, x > y, a <= b"
    assert safe_markdown("Tensor<T>") == "Tensor\\<T>"
    assert safe_markdown(HOSTILE["script"]) == "Hello \\<script>alert(1)\\</script> world."
    assert safe_markdown("`<T>` and\n\n```\n<script>\n```") == "`<T>` and\n\n```\n<script>\n```"
    assert safe_markdown("{math}`a_i < b` and {download}`x`") == "{math}`a_i < b` and \\{download}`x`"
    assert safe_markdown("[a](Broadcasting.md) [b](https://x.org/a.md#c) [c](#d)") == \
        "[a](Broadcasting.md) [b](https://x.org/a.md#c) [c](#d)"
    assert safe_markdown("see [a](../secret.txt)") == "see [a\\](../secret.txt)"
    assert safe_markdown("one<br>two\n<br>\nthree") == "one<br>two\n<br>\nthree"
    assert safe_inline("x | `y` <b>") == "x \\| \\`y\\` \\<b\\>"


def test_markdown_onnx_uses_is_kept():
    text = ("Computes `y = x * 2`, see [broadcasting](Broadcasting.md).\n\n"
            "* **a**: one\n* **b**: two\n\n"
            "| x | y |\n|---|---|\n| `1` | 2 |\n\n"
            "```\nY = X <op> 2\n```\n\n"
            "    indented <code>\n\n"
            "*emphasis* and **strong**, a <br> break.")
    assert safe_markdown(text) == text


def test_committed_pages_carry_no_hostile_markup():
    """Every committed op page passes the same check as hostile docs (the template's own roles
    and labels aside)."""
    pytest.importorskip("myst_parser")
    folder = os.path.join(ROOT, "generated", "docs", "operators")
    for domain in sorted(os.listdir(folder)):
        path = os.path.join(folder, domain)
        if not os.path.isdir(path):
            continue
        for name in sorted(os.listdir(path)):
            page = open(os.path.join(path, name), encoding="utf-8").read()
            found = problems(page, **TEMPLATE)
            assert not found, f"{domain}/{name}: {found}"


#: what the page template itself writes ({doc} links to the scoreboard and findings pages, {opkit-bundle}
#: zips of committed repro bundles: the role checks its path is one, under docs/findings/)
TEMPLATE = {"trusted_roles": ("ref", "doc", "opkit-bundle"), "trusted_directives": ("{code-block}", "{warning}", "{toctree}"),
            "targets": True,
            "trusted_html": ("<!-- @generated by opkit from ", '<details class="opkit-snippet"><summary>', "</summary>",
                             "</details>")}


# ------------------------------------------------------------------------------------------------
# fuzz: lines made of the bits MyST reads differently


_BITS = ["```", "````", "~~~", "~~~~", "```{include} /etc/passwd", "``", "`", " ", "  ", "    ", "\t", "\xa0",
         "- ", "* ", "+ ", "1. ", "10) ", "> ", ": ", "~ ", "[", "]", "](", "(", ")", "]: ", "'", '"',
         "../../etc/passwd", "https://x.org", "x.md", "%2e%2e/", "&#46;", "&#96;", "<", ">", "<script>",
         "</script>", "<br>", "<br/>", "<b>", "<i>", "</i>", "<T>", "<!--", "-->", "<?", "<!X", "<pre>",
         "<div>", "{download}", "{math}", "{", "}", "{{", "|", "\\", "(t)=", ":::", "#", "![", "[^1]",
         "[^1]: ", "a", "b ", ":", "%", "---", "===", "***", "___", "+++", "\u2028", "\x85", "\x0c", "\r"]
_LINE = st.lists(st.sampled_from(_BITS), max_size=8).map("".join)
_DOC = st.lists(_LINE, min_size=1, max_size=8).map("\n".join)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(_DOC)
def test_fuzz_no_directive_html_or_local_link(doc):
    _check(doc)


# ------------------------------------------------------------------------------------------------
# the page emitter


def _hostile_spec(doc: str) -> OpSpec:
    t = TypeConstraint("T", ("tensor(float)",), doc)
    x = FormalParameter("X", "T", doc)
    y = FormalParameter("Y", "T", doc)
    v1 = OpVersion(1, doc=doc, inputs=(x,), outputs=(y,), type_constraints=(t,),
                   attributes=(Attribute("alpha", "float", doc, default=1.0),), changes=doc,
                   rules=(Rule("C1", "X.ndim >= 1", doc),),
                   properties=(Property("p", "equal(op(X), op(X))", "numeric", doc),),
                   lowerings=(Lowering("low", "ai.onnx::Identity-1", "return X", doc),),
                   examples=(Example("ex", doc, (), (("X", TensorValue("float", (1,), (1.0,))),),
                                     (("Y", TensorValue("float", (1,), (1.0,))),)),))
    return OpSpec("Hostile", "my.ops", (v1,), source=(("hand-written", "test"),), doc=doc)


def _hostile_names(text: str) -> OpSpec:
    """Names and short values are free text in a spec too (only op and domain names are checked)."""
    t = TypeConstraint(text, ("tensor(float)",), "d")
    x = FormalParameter(text, text, "d")
    v1 = OpVersion(1, doc="d", inputs=(x,), outputs=(FormalParameter("Y", text, "d"),), type_constraints=(t,),
                   attributes=(Attribute(text, "string", "d", default=text, domain=ValueDomain(values=(text,))),),
                   rules=(Rule(text, text, "d"),), properties=(Property(text, text, text, "d"),),
                   lowerings=(Lowering(text, text, "return X", "d"),), kernel=Kernel(template=text, params=((text, text),)),
                   tolerances=(Tolerance(text, 0.0, 0.0),),
                   examples=(Example(text, "d", ((text, text),), ((text, TensorValue("string", (1,), (text,))),),
                                     (("Y", TensorValue("string", (1,), (text,))),)),))
    return OpSpec("Hostile", "my.ops", (v1,), source=((text, text),), doc="d")


@pytest.mark.parametrize("imported", [False, True])
def test_rendered_page_runs_nothing_from_docs(imported):
    ctx = GenContext((), ROOT)
    for name, doc in sorted(HOSTILE.items()):
        spec = _hostile_spec(doc)
        if imported:
            spec = OpSpec(spec.name, spec.domain, spec.versions, source=(("onnx", "1.23.2"),), doc=doc)
        # a committed report's text is foreign too: the runtime's name, its message, a bundle path
        report = {"_path": "conformance/reports/evil.json",
                  "target": {"backends": [{"name": "evil<script>", "version": "1"}]},
                  "cases": [{"backend": "evil<script>", "suite": "differential", "op": "Hostile", "domain": "my.ops",
                             "version": 1, "types": {"T": "tensor(float)"}, "example": "differential",
                             "outcome": "error", "message": doc, "repro": "../../etc/passwd"}]}
        page = dp.render_page(ctx, spec, [report])
        found = problems(page, **TEMPLATE)
        assert not found, f"{name}: {found}"
        targets = re.findall(r"^\((.*)\)=$", page, re.M)
        assert all(t.startswith("l-onnx-") for t in targets), (name, targets)
        assert page.rstrip().endswith("</details>") or "### Conformance" in page


def test_names_from_specs_run_nothing():
    ctx = GenContext((), ROOT)
    for text in ("x<script>alert(1)</script>", "a`{download}`/etc/passwd`", "[a](../../../etc/passwd)",
                 "{eval-rst}`x` ```{include} /etc/passwd", "(t)= | <img src=x onerror=alert(1)>"):
        spec = _hostile_names(text)
        v1 = spec.versions[0]
        v2 = dataclasses.replace(v1, since=2, attributes=v1.attributes + (Attribute(text + "2", "int", "d", default=1),))
        spec = OpSpec(spec.name, spec.domain, (v1, v2), source=spec.source, doc=spec.doc)  # a diff between them
        pages = dp.render_pages(ctx, spec)
        assert "Differences from" in dp.render_page(ctx, spec)
        for path, page in pages.items():
            found = problems(page, **TEMPLATE)
            assert not found, f"{text}: {found}"
            assert "\n" not in path and ".." not in path.split("/")[-1]
        # the older version's page is named from the op name's safe characters only
        toctree = dp.render_page(ctx, spec).split("```{toctree}", 1)[1].split("```", 1)[0]
        assert all(re.fullmatch(r"[A-Za-z0-9_.-]*", line) for line in toctree.splitlines()[2:]), toctree


# ------------------------------------------------------------------------------------------------
# end to end: a project's site


def _opkit(*args, cwd):
    return subprocess.run([sys.executable, "-m", "opkit", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def test_project_site_does_not_leak_files_or_run_scripts(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_parser")
    pytest.importorskip("furo")
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT-42\n")
    project = tmp_path / "proj"
    done = _opkit("init", str(project), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    spec = project / "specs" / "my.ops" / "ScaledTanh.yaml"
    text = spec.read_text()
    rel = os.path.relpath(secret, project / "generated" / "docs" / "operators" / "my.ops")
    doc = "\n".join([
        "Hostile doc.",
        "",
        f"```{{include}} {rel}",
        "```",
        "",
        f"```{{literalinclude}} {rel}",
        "```",
        "",
        "```{eval-rst}",
        f".. include:: {rel}",
        "",
        ".. raw:: html",
        "",
        "   <script>alert('rst')</script>",
        "```",
        "",
        "```{raw} html",
        "<script>alert('raw')</script>",
        "```",
        "",
        "Inline <script>alert('inline')</script> and <img src=x onerror=alert('img')>.",
        "",
        f"{{download}}`{rel}` and [a link]({rel}) and ![an image]({rel})",
        "",
        "(evil-target)=",
    ])
    import yaml

    data = yaml.safe_load(text)
    data["doc"] = doc
    spec.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    done = _opkit("docs", "-q", cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    site = project / "build" / "docs"
    pages = {p: p.read_text(errors="replace") for p in site.rglob("*") if p.is_file()
             and p.suffix in (".html", ".txt", ".js", ".json", ".md")}
    assert any("Hostile doc." in t for t in pages.values()), "the doc is not on the site"
    for path, content in pages.items():
        assert "TOP-SECRET-CONTENT-42" not in content, f"{path} holds the included file"
        assert "<script>alert(" not in content, f"{path} holds a live <script> from the doc"
        assert not re.search(r"<img[^>]*onerror", content), f"{path} holds a live <img onerror> from the doc"
    copied = [p for p in site.rglob("secret*")]
    assert not copied, copied
    page = next(t for t in pages.values() if "Hostile doc." in t)
    assert "&lt;script&gt;alert(&#39;inline&#39;)&lt;/script&gt;" in page or \
        "&lt;script&gt;alert('inline')&lt;/script&gt;" in page  # shown as text
