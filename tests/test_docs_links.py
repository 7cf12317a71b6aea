"""Every relative link in the README and the docs pages points to a file that exists, and every
``page.md#anchor`` to a heading of that page (GitHub's heading anchors)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# [text](target) and ![alt](target), not inside inline code.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def github_anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation dropped, spaces as
    hyphens, a repeated heading numbered -1, -2, ..."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    in_code = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        text = line.lstrip("#").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def links(page: Path) -> list[str]:
    out, in_code = [], False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        if not in_code:
            out += LINK.findall(re.sub(r"`[^`]*`", "", line))
    return [t for t in out if not re.match(r"[a-z]+:", t)]  # http:, https:, mailto:


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_and_anchors_resolve(page):
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in github_anchors(dest):
            broken.append(f"{target} (no such heading)")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def test_the_anchor_rule_on_known_headings(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# A title\n## SAC walker_stand (256 x 256), 300k: fp32, `bf16`\n## A title\n"
                    "```\n# not a heading\n```\n")
    assert github_anchors(page) == {"a-title", "sac-walker_stand-256-x-256-300k-fp32-bf16",
                                    "a-title-1"}
