"""HTML to text, chunking, tokenisation, hashing."""
from __future__ import annotations

from workbench.knowledge.text import (chunk_text, corpus_hash, html_title, html_to_text,
                                      normalize_name, tokenize)


def test_html_to_text_keeps_visible_text_only():
    html = """<!doctype html><html><head><title>T &amp; Co</title>
    <style>p { color: red }</style><script>var x = "<p>not text</p>";</script></head>
    <body><nav>Home | About</nav><h1>Office&nbsp;2019</h1><p>It is available in
    <b>27</b> languages.</p><div>Second<br>line</div><table><tr><td>a</td><td>b</td></tr>
    </table><footer>(c) 2024</footer><p onclick="alert(1)">Click&lt;me&gt;</p></body></html>"""
    text = html_to_text(html)
    assert "not text" not in text and "color" not in text and "Home" not in text
    assert "(c) 2024" not in text
    assert "Office 2019" in text
    assert "It is available in 27 languages." in text
    assert "Second\nline" in text
    assert "a | b" in text
    assert "Click<me>" in text
    assert html_title(html) == "T & Co"


def test_html_to_text_survives_bad_markup():
    assert html_to_text("<p>unclosed <b>bold <script>x") == "unclosed bold"
    assert html_to_text("") == ""


def test_chunking_bounds_and_overlap():
    sents = [f"Sentence number {i} has exactly seven words." for i in range(60)]
    chunks = chunk_text(" ".join(sents), max_words=50, overlap_words=14)
    assert len(chunks) > 5
    assert all(len(c.split()) <= 50 for c in chunks)
    for a, b in zip(chunks, chunks[1:]):
        assert a.split(".")[-2].strip() in b          # the last sentence is carried over
    # a single huge sentence is cut by words
    long = " ".join(f"w{i}" for i in range(1000))
    parts = chunk_text(long, max_words=100, overlap_words=0)
    assert len(parts) == 10 and all(len(p.split()) == 100 for p in parts)
    assert chunk_text("short", max_words=100) == ["short"]


def test_tokenize_and_names():
    assert tokenize("Who directed the Alû film?") == ["directed", "alu", "film"]
    assert normalize_name("  Lilu (mythology) ") == "lilu mythology"
    assert normalize_name("U.S.") == "u s"


def test_corpus_hash_is_order_and_boundary_sensitive():
    a = corpus_hash([("1", "t", "ab"), ("2", "t", "c")])
    assert a == corpus_hash([("1", "t", "ab"), ("2", "t", "c")])
    assert a != corpus_hash([("2", "t", "c"), ("1", "t", "ab")])
    assert a != corpus_hash([("1", "t", "a"), ("2", "t", "bc")])
