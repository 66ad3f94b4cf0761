"""The repository stands on its own: nothing cites the team's private digests, and every docs page and heading
that code or docs cite exists.

Citations are `docs/<page>.md` or `docs/<page>.md#<anchor>` anywhere in src/, tests/, benchmarks/, docs/ and the
README, and relative markdown links `[text](<page>.md#<anchor>)` in their markdown files. Anchors are GitHub's:
the heading's text lower-cased, everything but letters, digits, `_`, `-` and spaces dropped, spaces made `-`, and a
repeated heading suffixed `-1`, `-2`, ...
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
SCANNED = [ROOT / "src", ROOT / "tests", ROOT / "benchmarks", ROOT / "docs", ROOT / "README.md"]
SKIPPED_PARTS = {"__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache"}
# Citations of files that are not in the repository: the private protocol digests, the folder they live in, and
# their sections cited by number (the word, then "section 3" or "2.3"). Written so that this file does not match itself.
PRIVATE = re.compile(r"(?<![\w.-])spe[c]/|\.\./share[d]\b|\bspe[c] (?:sections?|s\.) ?\d|\bspe[c] \d+\.\d")
CITATION = re.compile(r"(?<![\w-])(docs/[\w-][\w./-]*?\.md)(?:#([\w-]+))?")
LINK = re.compile(r"\]\(([^()\s#]*\.md)?(?:#([^)\s]*))?\)")
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"", re.IGNORECASE)


def scanned_files() -> list[Path]:
    """Every text file under the scanned folders (build outputs and caches left out), sorted."""
    files: list[Path] = []
    for top in SCANNED:
        candidates = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in candidates:
            parts = set(path.relative_to(ROOT).parts)
            if parts & SKIPPED_PARTS or any(part.endswith(".egg-info") for part in parts):
                continue
            files.append(path)
    return files


@cache
def text_of(path: Path) -> str | None:
    """The file's text, or None for a binary file."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading's plain text (before de-duplication)."""
    kept = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return kept.replace(" ", "-")


def heading_texts(markdown: str) -> list[str]:
    """The plain text of every heading (code spans keep their content, emphasis and link syntax are dropped)."""
    tokens = MarkdownIt("commonmark").parse(markdown)
    texts = []
    for opening, inline in zip(tokens, tokens[1:], strict=False):
        if opening.type == "heading_open":
            texts.append("".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline")))
    return texts


def anchors(markdown: str) -> set[str]:
    """Every anchor a markdown page offers: its headings' (repeats numbered as GitHub does) and explicit <a id>."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for text in heading_texts(markdown):
        base = github_anchor(text)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found | set(HTML_ANCHOR.findall(markdown))


@cache
def anchors_of(page: Path) -> frozenset[str]:
    return frozenset(anchors(page.read_text(encoding="utf-8")))


def shown(path: Path) -> str:
    """A path as messages show it: relative to the repository when inside it."""
    return str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


def missing_target(page: Path, anchor: str | None) -> str | None:
    """Why a cited page (and heading) does not resolve, or None when it does."""
    if not page.is_file():
        return f"no file {shown(page)}"
    if anchor and anchor not in anchors_of(page):
        return f"{shown(page)} has no heading with anchor #{anchor}"
    return None


def private_citations(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line that cites the private digests."""
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if PRIVATE.search(line)]


def docs_citations(text: str) -> list[tuple[int, str, str | None]]:
    """(line number, page path relative to the repository, anchor or None) of every `docs/...md[#...]` citation."""
    return [
        (n, match.group(1), match.group(2))
        for n, line in enumerate(text.splitlines(), 1)
        for match in CITATION.finditer(line)
    ]


def markdown_links(markdown: str) -> list[tuple[int, str | None, str | None]]:
    """(line number, relative .md target or None for the same page, anchor or None) of every relative link."""
    links = []
    for n, line in enumerate(markdown.splitlines(), 1):
        for match in LINK.finditer(line):
            target, anchor = match.group(1), match.group(2)
            if (target is None and anchor is None) or (target and "://" in target):
                continue
            links.append((n, target, anchor or None))
    return links


def where(path: Path, line: int) -> str:
    return f"{shown(path)}:{line}"


FILES = [(path, text) for path in scanned_files() if (text := text_of(path)) is not None]
MARKDOWN = [(path, text) for path, text in FILES if path.suffix == ".md"]
CITATIONS = [(path, line, page, anchor) for path, text in FILES for line, page, anchor in docs_citations(text)]


def test_nothing_cites_the_private_digests():
    """No file in src/, tests/, benchmarks/, docs/ or the README points at files a clone does not have."""
    found = [f"{where(path, n)}: {line}" for path, text in FILES for n, line in private_citations(text)]
    assert not found, "cite docs/ instead (docs/protocols/README.md lists the protocol pages):\n" + "\n".join(found)


def test_every_cited_docs_page_and_heading_exists():
    """`docs/<page>.md#<anchor>` in code, tests, benchmarks and docs names a page and a heading that exist."""
    broken = [
        f"{where(path, line)}: {page}{'#' + anchor if anchor else ''}: {why}"
        for path, line, page, anchor in CITATIONS
        if (why := missing_target(ROOT / page, anchor))
    ]
    assert not broken, "\n".join(broken)


def test_every_markdown_link_reaches_its_heading():
    """Relative links between the markdown pages (and to their own headings) resolve, anchors included."""
    broken = [
        f"{where(path, line)}: ({target or ''}{'#' + anchor if anchor else ''}): {why}"
        for path, text in MARKDOWN
        for line, target, anchor in markdown_links(text)
        if (why := missing_target((path.parent / target).resolve() if target else path, anchor))
    ]
    assert not broken, "\n".join(broken)


def test_the_scans_find_what_they_should():
    """The scans see the protocol citations: a broken pattern would make the tests above pass vacuously."""
    anchored = [c for c in CITATIONS if c[3] and c[2].startswith("docs/protocols/")]
    cited_from_code = {path.relative_to(ROOT).parts[0] for path, *_ in anchored}
    assert len(anchored) >= 50 and {"src", "tests", "benchmarks"} <= cited_from_code, anchored[:5]
    assert any(path.name == "nevis.md" and target for path, text in MARKDOWN for _, target, _ in markdown_links(text))
    assert {"README.md", "nevis.md", "clear.md", "cog.md", "facts.md", "sort-and-search.md"} <= {
        path.name for path in (ROOT / "docs" / "protocols").glob("*.md")
    }


def test_the_checks_catch_a_stale_citation(tmp_path):
    """Each check on known input: a private citation, a missing heading, a repeated heading, a dead link."""
    digest = "spe" + "c/nevis22.md"  # split, so that this file does not cite it
    assert private_citations(f"see {digest} section 3\nsuites/spec.py\n") == [(1, f"see {digest} section 3")]
    assert private_citations("../share" + "d/x.md") and not private_citations("RunSpec/x, encoders/specs.py")
    assert private_citations("(spe" + "c section 5 splits)") and private_citations("by sum (spe" + "c 2.3)")
    assert not private_citations("an encoder spec (a model name), `spec: str`")
    assert docs_citations("x (docs/protocols/nevis.md#splits), docs/run.md.") == [
        (1, "docs/protocols/nevis.md", "splits"),
        (1, "docs/run.md", None),
    ]
    assert not docs_citations("mkdocs/x.md")
    page = tmp_path / "page.md"
    page.write_text(
        "# Nevis'22 protocol: error against compute\n\n## The offline miniature: `nevis-mini`\n\n"
        "## Notes\n\n## Notes\n\n```\n# not a heading\n```\n\nBatch size *B* & co.\n-----\n"
    )
    assert anchors_of(page) == {
        "nevis22-protocol-error-against-compute",
        "the-offline-miniature-nevis-mini",
        "notes",
        "notes-1",
        "batch-size-b--co",
    }
    assert missing_target(page, "notes-1") is None
    assert missing_target(page, "not-a-heading") == f"{page} has no heading with anchor #not-a-heading"
    assert missing_target(tmp_path / "gone.md", None).startswith("no file")
    assert markdown_links("[a](nevis.md#splits) [b](#notes) [c](https://x.org/a.md#y) [d](../README.md)") == [
        (1, "nevis.md", "splits"),
        (1, None, "notes"),
        (1, "../README.md", None),
    ]


@pytest.mark.parametrize("page", sorted((ROOT / "docs" / "protocols").glob("*.md")), ids=lambda p: p.name)
def test_protocol_pages_have_unique_headings(page):
    """A protocol page's anchors are cited from code: two headings of the same text would make one unreachable
    under the anchor a reader expects."""
    texts = [github_anchor(text) for text in heading_texts(page.read_text(encoding="utf-8"))]
    repeated = sorted({text for text in texts if texts.count(text) > 1})
    assert not repeated, f"{page.relative_to(ROOT)}: repeated headings {repeated}"
