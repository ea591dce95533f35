"""Every reference to a method spec section in the code and the docs ("spec crp-rag.md §7.1",
"(spec §7 gap 11)", "crag-benchmark.md §2.4-2.5, §5.6", "spec A3", ...) resolves to a page of
docs/specs/ with a heading of that number (and, where the reference names one, that gap, item or
A-item). A reference that names no page belongs to the page named earlier on its line, else to
the method of its file (by path), else to the one page its file names."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "docs" / "specs"
SCAN = ("workbench", "pages", "benchmarks", "scripts", "tests", "docs")
SUFFIXES = {".py", ".md", ".txt", ".toml", ".yaml", ".yml", ".json", ".html", ".js"}
SELF = Path(__file__).resolve()

# The one pattern for every form: an optional page ("spec crp-rag.md", "docs/specs/par-rag.md",
# "crag-benchmark.md"), then "§N[.N…]" with an optional range end, "gap N", "item N" or ", AN"; or the
# section-less forms "spec gap N" and "spec AN" (an A-item of FRAG's §7.1 or the CRAG study's §6.1).
REF = re.compile(
    r"(?:(?P<page>[A-Za-z][\w-]*)\.md[\s,]*)?"
    r"(?:§\s*(?P<sec>\d+(?:\.\d+)*)(?:\s*[-–]\s*(?P<end>\d+(?:\.\d+)*))?"
    r"(?:,?\s*gap\s+(?P<gap>\d+))?(?:,?\s*item\s+(?P<item>\d+))?(?:,\s*(?P<aitem2>A\d+)\b)?"
    r"|\bspec\s+(?:gap\s+(?P<xgap>\d+)|(?P<aitem>A\d+))\b)")

# A file's method, by its path (the first that matches wins).
BY_PATH = (("coggrag", "coggrag"), ("crp", "crp-rag"), ("par_rag", "par-rag"),
           ("par-rag", "par-rag"), ("frag", "frag"), ("crag", "crag-benchmark"))

# Files whose references are sample note texts for the code that strips spec pointers from what a
# reader sees (workbench/viz/names.py); they name no page, so any page with the section will do.
EXAMPLES = {"tests/test_waterfall.py", "workbench/viz/inspect.py"}

HEADING = re.compile(r"^(#{1,6})\s+(\d+(?:\.\d+)*)\.?(?=\s)", re.M)


def sections(page: str) -> dict[str, str]:
    """Section number -> its text (up to the next heading of the same or a higher level)."""
    text = (SPECS / f"{page}.md").read_text(encoding="utf-8")
    heads = [(m.start(), len(m.group(1)), m.group(2)) for m in HEADING.finditer(text)]
    any_head = [m.start() for m in re.finditer(r"^#{1,6}\s", text, re.M)]
    out = {}
    for start, level, num in heads:
        after = text.find("\n", start) + 1 or len(text)
        end = len(text)
        for m in re.finditer(r"^(#{1,6})\s", text[after:], re.M):
            if len(m.group(1)) <= level:
                end = after + m.start()
                break
        out[num] = text[start:end]
    assert any_head, page
    return out


def _missing(page: str, m: re.Match) -> str | None:
    """Why the reference ``m`` does not resolve in ``page``; None when it does."""
    if not (SPECS / f"{page}.md").is_file():
        return f"no page docs/specs/{page}.md"
    secs = sections(page)
    whole = (SPECS / f"{page}.md").read_text(encoding="utf-8")
    for num in filter(None, (m["sec"], m["end"])):
        if num not in secs:
            return f"docs/specs/{page}.md has no heading {num}"
    body = secs[m["sec"]] if m["sec"] else whole
    gap = m["gap"] or m["xgap"]
    if gap and not re.search(rf"\bgap\s+{gap}\b", body, re.I):
        return f"docs/specs/{page}.md §{m['sec'] or ''} has no gap {gap}"
    if m["item"] and not re.search(rf"^\s*{m['item']}\.\s", body, re.M):
        return f"docs/specs/{page}.md §{m['sec']} has no item {m['item']}"
    aitem = m["aitem"] or m["aitem2"]
    if aitem and not re.search(rf"\*\*{aitem}\b", whole):
        return f"docs/specs/{page}.md has no item {aitem}"
    return None


def check(text: str, rel: str) -> list[str]:
    """Problems with the spec references in ``text``, a file at ``rel`` (relative to the root)."""
    named = {m["page"] for m in REF.finditer(text) if m["page"]}
    by_path = next((page for key, page in BY_PATH if key in rel.lower()), None)
    bad = []
    for lineno, line in enumerate(text.splitlines(), 1):
        last = None
        for m in REF.finditer(line):
            page = m["page"] or last or by_path or (next(iter(named)) if len(named) == 1 else None)
            last = m["page"] or last
            where = f"{rel}:{lineno}: {m.group(0).strip()!r}"
            if page is None:
                if rel in EXAMPLES and any(_missing(p.stem, m) is None
                                           for p in SPECS.glob("*.md") if p.stem != "README"):
                    continue
                bad.append(f"{where}: names no spec page and its file has no method")
                continue
            why = _missing(page, m)
            if why:
                bad.append(f"{where}: {why}")
    return bad


def scanned() -> list[Path]:
    files = []
    for top in SCAN:
        for p in sorted((ROOT / top).rglob("*")):
            if (p.is_file() and p.suffix in SUFFIXES and p.resolve() != SELF
                    and not {"__pycache__", ".venv", "node_modules"} & set(p.parts)):
                files.append(p)
    return files


def references() -> list[tuple[str, str]]:
    out = []
    for p in scanned():
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        out += [(p.relative_to(ROOT).as_posix(), m.group(0)) for m in REF.finditer(text)]
    return out


def test_every_spec_reference_resolves():
    refs = references()
    assert len(refs) >= 60, f"the pattern found only {len(refs)} references"
    assert {"crp-rag", "par-rag", "frag", "coggrag", "crag-benchmark"} <= {
        p.stem for p in SPECS.glob("*.md")}
    bad = []
    for p in scanned():
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        bad += check(text, p.relative_to(ROOT).as_posix())
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("text, rel, expect", [
    ("see spec crp-rag.md §7.1 for the cache", "workbench/llm/x.py", None),
    ("(spec §7 gap 11)", "workbench/methods/crp_rag/method.py", None),
    ("crag-benchmark.md §2.4-2.5, §5.6", "workbench/eval/knobs.py", None),
    ("docs/specs/coggrag.md §7.2 item 3", "workbench/knowledge/d.py", None),
    ("(spec A3)", "workbench/methods/frag/kg.py", None),
    ("spec crp-rag.md §9.9", "workbench/llm/x.py", "no heading 9.9"),
    ("spec crp-rag.md §3.4-3.99", "workbench/llm/x.py", "no heading 3.99"),
    ("spec nosuch.md §1", "workbench/llm/x.py", "no page"),
    ("(spec §7 gap 99)", "workbench/methods/crp_rag/method.py", "no gap 99"),
    ("spec coggrag.md §7.2 item 42", "workbench/x.py", "no item 42"),
    ("(spec A99)", "workbench/methods/frag/method.py", "no item A99"),
    ("(spec frag.md §3.4, A99)", "workbench/x.py", "no item A99"),
    ("(coggrag.md §7.2, item 9)", "workbench/x.py", "no item 9"),
    ("spec §3.4", "workbench/eval/unrelated.py", "names no spec page"),
])
def test_check_on_strings(text, rel, expect):
    bad = check(text, rel)
    if expect is None:
        assert bad == []
    else:
        assert len(bad) == 1 and expect in bad[0], bad
