"""Every relative link and image in README.md and docs/ resolves to a file of the repository
(and a link's #anchor to a heading of the file it names), and the README stays a short guide."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Screenshots the README's tour shows that are not in the repository yet, relative to the
# repository root. A link listed here is skipped, and only it; empty the set once they exist.
PENDING: set[str] = set()

README_MAX_LINES = 220

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _prose(text: str) -> str:
    """The text without fenced blocks and code spans, whose brackets are not links."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def links(path: Path) -> list[str]:
    return LINK.findall(_prose(path.read_text(encoding="utf-8")))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)       # a link's text only
    text = re.sub(r"[^\w\- ]", "", text.lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for h in HEADING.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
        s = slug(h)
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def problems(path: Path) -> list[str]:
    bad = []
    for target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):      # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(ROOT)}: ({target})"
        try:
            rel = dest.relative_to(ROOT).as_posix()
        except ValueError:
            bad.append(f"{where} points outside the repository")
            continue
        if rel in PENDING:
            continue
        if not dest.is_file():
            bad.append(f"{where}: no file {rel}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{where}: no heading #{anchor} in {rel}")
    return bad


def test_every_relative_link_and_image_resolves():
    files = doc_files()
    assert len(files) > 1, "docs/ holds no Markdown files"
    bad = [p for f in files for p in problems(f)]
    assert not bad, "broken links:\n" + "\n".join(bad)


def test_pending_images_are_still_linked_and_still_missing():
    """A PENDING entry that is no longer linked, or whose file now exists, is stale."""
    linked = {(f.parent / t.partition("#")[0]).resolve().relative_to(ROOT).as_posix()
              for f in doc_files() for t in links(f)
              if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I) and t.partition("#")[0]}
    assert PENDING <= linked, f"not linked any more: {sorted(PENDING - linked)}"
    made = sorted(p for p in PENDING if (ROOT / p).is_file())
    assert not made, f"these exist now; take them out of PENDING: {made}"


def test_readme_stays_a_short_guide():
    n = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines; move detail into docs/"


@pytest.mark.parametrize("heading,anchor", [
    ("Metric profiles and `score`", "metric-profiles-and-score"),
    ("Run 3, an H200", "run-3-an-h200"),
    ("Is it the retriever?", "is-it-the-retriever"),
    ("Failure triage: where in the graph did it go wrong",
     "failure-triage-where-in-the-graph-did-it-go-wrong"),
])
def test_anchor_slugs_follow_github(heading, anchor):
    assert slug(heading) == anchor


def test_a_broken_link_and_a_missing_anchor_are_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "a.md").write_text("# Top\n\n[ok](b.md#there) [gone](c.md) [nope](b.md#nowhere)\n"
                                   "`[not a link](x.md)`\n\n```\n[neither](y.md)\n```\n")
    (tmp_path / "b.md").write_text("## There\n")
    got = problems(tmp_path / "a.md")
    assert got == ["a.md: (c.md): no file c.md", "a.md: (b.md#nowhere): no heading #nowhere in b.md"]
