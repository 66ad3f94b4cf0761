"""The docs site (mkdocs.yml): its nav lists every page in docs/, every `::: name` in the API reference names
something importable, and the hooks point links that leave docs/ at the pages they became. Fast checks without a
build; CI builds the site itself with `mkdocs build --strict` (.ci/run).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
DIRECTIVE = re.compile(r"^\s*:::\s+(\S+)", re.MULTILINE)


def load_hooks() -> Any:
    """scripts/mkdocs_hooks.py as a module (it imports mkdocs only inside the hooks, so no [docs] extra is needed)."""
    spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "scripts" / "mkdocs_hooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOKS = load_hooks()


class _ConfigLoader(yaml.SafeLoader):
    """Reads mkdocs.yml without running its `!!python/...` tags (the toc's slugify), which the checks do not need."""


_ConfigLoader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


def site_config() -> dict:
    return yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_ConfigLoader)


def nav_pages(nav: Any) -> list[str]:
    """Every page path the nav lists, in order (entries are `path`, `{title: path}` or `{title: [entries]}`)."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for entry in nav for page in nav_pages(entry)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in nav_pages(value)]
    raise AssertionError(f"mkdocs.yml: a nav entry is neither a page nor a section: {nav!r}")


def docs_pages(docs: Path) -> set[str]:
    """Every markdown page under docs/, as a path relative to it."""
    return {path.relative_to(docs).as_posix() for path in docs.rglob("*.md")}


def unlisted_pages(nav: Any, docs: Path) -> tuple[set[str], set[str]]:
    """(pages in docs/ the nav leaves out, nav entries that are neither a page in docs/ nor one the hooks add)."""
    listed = set(nav_pages(nav))
    present = docs_pages(docs)
    return present - listed, listed - present - set(HOOKS.PAGES_FROM_REPO)


def resolves(name: str) -> bool:
    """`name` is an importable module, or an attribute of one (`lifelong.core.Learner`)."""
    try:
        importlib.import_module(name)
        return True
    except ModuleNotFoundError:
        module, _, attribute = name.rpartition(".")
        return bool(module) and resolves(module) and hasattr(importlib.import_module(module), attribute)


def test_nav_lists_every_page_in_docs():
    missing, unknown = unlisted_pages(site_config()["nav"], DOCS)
    assert not missing, f"pages in docs/ that mkdocs.yml's nav does not list: {sorted(missing)}; add them to the nav"
    assert not unknown, f"nav entries with no page in docs/: {sorted(unknown)}"


def test_a_page_left_out_of_the_nav_is_caught(tmp_path):
    (tmp_path / "protocols").mkdir()
    for page in ("run.md", "protocols/README.md", "protocols/new.md"):
        (tmp_path / page).write_text("# page\n")
    nav = [{"Home": "index.md"}, {"Run": "run.md"}, {"Protocols": ["protocols/README.md", {"Gone": "gone.md"}]}]
    assert unlisted_pages(nav, tmp_path) == ({"protocols/new.md"}, {"gone.md"})


def test_pages_from_the_repository_exist():
    for site_path, repo_path in HOOKS.PAGES_FROM_REPO.items():
        assert (ROOT / repo_path).is_file(), f"the site builds {site_path} from {repo_path}, which does not exist"
        assert not (DOCS / site_path).exists(), f"docs/{site_path} clashes with the page built from {repo_path}"


def test_api_reference_directives_name_importable_modules():
    directives = {
        page.relative_to(DOCS).as_posix(): DIRECTIVE.findall(page.read_text(encoding="utf-8"))
        for page in sorted(DOCS.rglob("*.md"))
    }
    names = [name for found in directives.values() for name in found]
    assert "lifelong.api" in names, "the API reference must document lifelong.api, the public Python API"
    unresolved = [(page, name) for page, found in directives.items() for name in found if not resolves(name)]
    assert not unresolved, f"`::: name` directives that name nothing importable: {unresolved}"
    assert all(
        directives[page.relative_to(DOCS).as_posix()] for page in (DOCS / "api").glob("*.md") if page.stem != "README"
    )


def test_resolves_refuses_what_does_not_exist():
    assert resolves("lifelong.core.learner") and resolves("lifelong.core.Learner")
    assert not resolves("lifelong.no_such_module") and not resolves("lifelong.core.NoSuchName")


@pytest.mark.parametrize(
    ("target", "site_path", "repo_path", "expected"),
    [
        ("../README.md", "install.md", "docs/install.md", "index.md"),
        ("../../README.md#layout", "protocols/README.md", "docs/protocols/README.md", "../index.md#layout"),
        ("../benchmarks/README.md", "cog.md", "docs/cog.md", "benchmarks.md"),
        ("../run.md#what-is-counted", "protocols/nevis.md", "docs/protocols/nevis.md", "../run.md#what-is-counted"),
        ("docs/protocols/README.md", "index.md", "README.md", "protocols/README.md"),
        (
            "../docs/protocols/cog.md#linear-probe",
            "benchmarks.md",
            "benchmarks/README.md",
            "protocols/cog.md#linear-probe",
        ),
        ("../LICENSE", "install.md", "docs/install.md", "../LICENSE"),  # not in the site: left for mkdocs to report
        ("https://example.org/a.md", "install.md", "docs/install.md", "https://example.org/a.md"),
        ("#splits", "nevis.md", "docs/nevis.md", "#splits"),
    ],
)
def test_links_that_leave_docs_point_at_their_pages(target, site_path, repo_path, expected):
    assert HOOKS._relink(target, site_path, repo_path) == expected


def test_links_in_fenced_code_are_left_alone():
    page = SimpleNamespace(file=SimpleNamespace(src_uri="index.md"))
    markdown = "See [run](docs/run.md).\n\n```\n[run](docs/run.md)\n```\n\nAnd [cli](docs/cli.md).\n"
    expected = "See [run](run.md).\n\n```\n[run](docs/run.md)\n```\n\nAnd [cli](cli.md).\n"
    assert HOOKS.on_page_markdown(markdown, page, None, None) == expected
