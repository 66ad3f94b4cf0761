"""Rendering the report's pages: one Jinja2 environment over the packaged templates, every value autoescaped.

Every page extends templates/base.html.j2 (the style sheet, inline, and the navigation between the index and the
systems' pages) and loads nothing from elsewhere, so the report folder can be moved or archived as is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from lifelong.core.files import atomic_write_bytes

INDEX_FILE = "index.html"


@dataclass
class Section:
    """One part of a page: a title, a line of text, figures (file, caption), notes and (regret) pairings."""

    title: str
    text: str
    figures: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    pairs: list[dict[str, str]] = field(default_factory=list)


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("lifelong.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    return env


def write_page(out: Path, name: str, template: str, nav: list[tuple[str, str]], **context: Any) -> Path:
    """Render `template` with `context` (and the navigation `nav`: (page, title) pairs) into out/name."""
    page = _environment().get_template(template).render(nav=nav, current=name, **context)
    path = out / name
    atomic_write_bytes(path, page.encode("utf-8"))
    return path
