"""mkdocs hooks: the repository's own README pages join the docs site, and links that leave docs/ follow them.

The pages in docs/ are written for GitHub, so they link out of docs/ (`../README.md`, `../benchmarks/README.md`)
and the README links into it (`docs/run.md`). Rather than rewrite them for mkdocs, the site includes the files in
`PAGES_FROM_REPO` as generated pages (the README is the site's home page) and rewrites every relative link by where
its target lies in the repository. A link to any other file outside docs/ is left as it is, so mkdocs reports it
and the strict build fails: include that file here or link to it another way.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

# Site page (path inside the site) -> the repository file it is built from.
PAGES_FROM_REPO = {"index.md": "README.md", "benchmarks.md": "benchmarks/README.md"}

_REPO = Path(__file__).resolve().parent.parent
_DOCS = "docs"
_LINK = re.compile(r"(\]\()([^)\s]+)")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


def on_files(files: Any, config: Any) -> Any:
    """Add the repository pages in PAGES_FROM_REPO to the site (the README as its index)."""
    from mkdocs.exceptions import PluginError
    from mkdocs.structure.files import File

    for site_path, repo_path in PAGES_FROM_REPO.items():
        if files.get_file_from_path(site_path) is not None:
            raise PluginError(f"docs/{site_path} exists, but the site builds {site_path} from {repo_path}: rename one")
        files.append(File.generated(config, site_path, abs_src_path=str(_REPO / repo_path)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Point each relative link at the page its target became in the site (docs/x.md -> x.md, README.md -> index)."""
    site_path = page.file.src_uri
    repo_path = PAGES_FROM_REPO.get(site_path, f"{_DOCS}/{site_path}")
    return _outside_fences(markdown, lambda text: _LINK.sub(lambda m: m[1] + _relink(m[2], site_path, repo_path), text))


def on_serve(server: Any, config: Any, builder: Any) -> Any:
    """`mkdocs serve` rebuilds when a repository page in PAGES_FROM_REPO changes, as for pages in docs/."""
    for repo_path in PAGES_FROM_REPO.values():
        server.watch(str(_REPO / repo_path))
    return server


def _relink(target: str, site_path: str, repo_path: str) -> str:
    """The link `target` written in `repo_path`, as seen from the site page `site_path` (unchanged if not a page)."""
    if target.startswith("#") or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
        return target  # an anchor on the same page, or a URL (http:, mailto:...)
    path, hash_, anchor = target.partition("#")
    in_repo = posixpath.normpath(posixpath.join(posixpath.dirname(repo_path), path))
    from_repo = {repo: site for site, repo in PAGES_FROM_REPO.items()}
    if in_repo in from_repo:
        in_site = from_repo[in_repo]
    elif in_repo.startswith(f"{_DOCS}/"):
        in_site = in_repo.removeprefix(f"{_DOCS}/")
    else:
        return target  # another file outside docs/: mkdocs reports it
    return posixpath.relpath(in_site, posixpath.dirname(site_path) or ".") + hash_ + anchor


def _outside_fences(markdown: str, rewrite: Any) -> str:
    """Apply `rewrite` to the text between fenced code blocks, leaving the blocks themselves as they are."""
    out, last = [], 0
    for fence in _FENCE.finditer(markdown):
        out += [rewrite(markdown[last : fence.start()]), fence[0]]
        last = fence.end()
    return "".join(out + [rewrite(markdown[last:])])
