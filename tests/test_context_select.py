"""Passage context by relevance: the sentences that match the query, within the budget, in
passage order, the title kept, and every cut recorded."""
from __future__ import annotations

import pytest

from workbench.methods.passages import clip, context_record, fit_passages, format_passages, passage_line
from workbench.methods import context_select as S
from workbench.knowledge.types import Hit

# the demo's passage whose head cut lost the answer ("...a double feature with Grave of the")
TOTORO = ("Directed by Hayao Miyazaki, My Neighbor Totoro is a Japanese animated fantasy film "
          "released in 1988. Two young sisters who move to the countryside with their father "
          "befriend Totoro, a large forest spirit who later became the studio's mascot. It was "
          "first shown in Japanese cinemas as a double feature with Grave of the Fireflies. "
          "Joe Hisaishi wrote the music, and Studio Ghibli handled the release.")
Q = "Which studio produced My Neighbor Totoro?"


def test_relevance_keeps_the_answer_sentence_that_the_head_cut_loses():
    head = S.select(TOTORO, Q, 320, "head")
    assert "Studio Ghibli" not in head.text and head.text == clip(TOTORO, 320)
    cut = S.select(TOTORO, Q, 320)
    assert "Studio Ghibli handled the release." in cut.text
    assert len(cut.text.removesuffix(S.TAIL)) <= 320
    # kept sentences stay in passage order, a gap is marked where one was left out
    kept = [s for s, k in cut.segments if k]
    assert [cut.text.find(s.split(". ")[0]) for s in kept] == \
        sorted(cut.text.find(s.split(". ")[0]) for s in kept)
    assert "double feature" not in cut.text and S.GAP in cut.text
    assert cut.text.index("released in 1988") < cut.text.index("Studio Ghibli")


def test_the_cut_is_recorded_sentence_by_sentence():
    cut = S.select(TOTORO, Q, 320)
    rec = cut.record()
    assert rec["mode"] == "relevance" and rec["budget"] == 320
    assert "".join(s for s, _ in rec["segments"]).replace(" ", "") == TOTORO.replace(" ", "")
    cut_text = " ".join(s for s, k in rec["segments"] if not k)
    assert "double feature with Grave of the Fireflies." in cut_text
    assert rec["cut_chars"] == len(cut_text) and rec["kept_chars"] + rec["cut_chars"] <= len(TOTORO)
    whole = S.select(TOTORO, Q, 4000).record()
    assert whole["cut_chars"] == 0 and whole["segments"] == []       # nothing cut, nothing kept twice


@pytest.mark.parametrize("budget", [60, 120, 200, 320])
def test_every_budget_is_kept_and_a_sentence_too_long_is_cut_at_a_word(budget):
    cut = S.select(TOTORO, "Who wrote the music?", budget)
    body = cut.text.removesuffix(S.TAIL)
    assert 0 < len(body) <= budget
    if budget >= 70:                  # the composer's sentence fits whole: it is the one kept
        assert "Joe Hisaishi wrote the music" in body


def test_no_matching_word_gives_the_head_at_sentence_boundaries_and_modes_are_checked():
    cut = S.select(TOTORO, "zzz qqq", 120)
    assert cut.text.startswith("Directed by Hayao Miyazaki") and S.GAP not in cut.text
    assert S.select(TOTORO, Q, 100, "whole").text == TOTORO
    with pytest.raises(ValueError, match="relevance, head, whole"):
        S.select(TOTORO, Q, 100, "tail")


def test_sentences_do_not_split_at_initials_or_abbreviations():
    assert S.sentences("Warner Bros. Pictures is in Burbank. J. R. R. Tolkien wrote it. "
                       "It sold 5 million copies!") == [
        "Warner Bros. Pictures is in Burbank.", "J. R. R. Tolkien wrote it.",
        "It sold 5 million copies!"]
    assert S.terms("The directors directed") == ["direct", "direct"]


def test_formatted_passages_keep_the_title_and_record_what_was_cut():
    hits = [Hit("p42", "My Neighbor Totoro", TOTORO, "bm25", 1.0, 1),
            Hit("p9", "Toei Company", "Toei Company is a Japanese film studio.", "bm25", 0.5, 2)]
    cuts = S.select_many([h.text for h in hits], Q, 320)
    text = format_passages(hits, 320, numbered=False, cuts=cuts)
    assert text.startswith("- My Neighbor Totoro: ") and "Studio Ghibli" in text
    assert "- Toei Company: Toei Company is a Japanese film studio." in text
    assert format_passages(hits, 320, numbered=False, context="relevance", queries=Q) == text
    rec = context_record(hits, cuts)
    assert rec["mode"] == "relevance" and rec["budget"] == 320 and rec["cut_chars"] > 0
    assert [p["id"] for p in rec["passages"]] == ["p42"]      # only cut passages are listed
    # the old callers' default is unchanged: the head cut
    assert format_passages(hits, 320, numbered=False).startswith(
        "- My Neighbor Totoro: " + clip(TOTORO, 320))


def test_the_inspector_greys_cut_text_and_escapes_every_passage():
    evil = ("<script>alert(1)</script> is a film. " * 3) + "Studio Ghibli made <b>it</b>."
    hit = Hit("p1", "<img src=x onerror=alert(1)>", evil, "bm25", 1.0, 1)
    rec = context_record([hit], S.select_many([evil], "Which studio made it?", 60,
                                                titles=[hit.title]))
    html = S.cut_html(rec)
    assert "<script>" not in html and "<img" not in html and "&lt;script&gt;" in html
    assert html.count('style="color:#9a9a9a"') >= 1 and "Studio Ghibli made &lt;b&gt;it" in html
    kept = html.split('<span style="color:#9a9a9a"')[0]
    assert "alert" not in kept.split("</b>: ", 1)[1]     # what was cut is only in grey
    assert S.cut_html(None) == "" and S.cut_html({"passages": []}) == ""


def _inspect_retrieval_script():
    from tests.test_methods_text_baselines import P, ScriptedBackend, _totoro
    from workbench.ui.inspector import inspector
    tr = _totoro("standard-rag", ScriptedBackend().add(P.RAG_TAG, "Studio Ghibli"))
    rid = next(n for n in tr.nodes if tr.nodes[n].kind == "retrieval")
    inspector(tr, rid, key="ins")


def test_the_inspector_shows_the_passages_as_the_prompt_read_them():
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_function(_inspect_retrieval_script, default_timeout=30)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Passages as the prompt read them" in m.value and "relevance" in m.value
               for m in at.markdown)
    html = [h for h in at.get("html")]
    assert html and "double feature" in html[0].proto.body and "#9a9a9a" in html[0].proto.body


def test_fit_passages_cuts_by_relevance_then_drops_the_lowest_ranked_and_notes_it():
    hits = [Hit("p42", "My Neighbor Totoro", TOTORO, "bm25", 2.0, 1),
            Hit("p7", "Toei Company", "Toei Company is a Japanese film studio. " * 8, "bm25", 1.0, 2)]
    words = lambda t: len(t.split())                    # noqa: E731
    text, kept, note = fit_passages(words, hits, 200, 45, context="relevance", queries=Q,
                                      numbered=True)
    assert [h.id for h in kept] == ["p42"] and "Studio Ghibli" in text
    assert note["mode"] == "relevance" and note["budget"] == 200 and note["k_effective"] == 1
    assert [p["id"] for p in note["passages"]] == ["p42"]
    whole = fit_passages(words, hits, 0, 10_000, context="relevance", queries=Q)[2]
    assert whole["mode"] == "whole" and whole["cut_chars"] == 0
    assert "Studio Ghibli" in passage_line(hits[0], 200, "relevance", Q)
    assert "Studio Ghibli" not in passage_line(hits[0], 200)        # head: the old cut


def test_a_year_question_keeps_the_sentence_with_a_year_and_long_lists_are_cut_at_commas():
    spirited = ("Spirited Away is a 2001 Japanese animated fantasy film directed by Hayao "
                "Miyazaki. A ten-year-old girl named Chihiro wanders into a world of spirits and "
                "must work in a bathhouse run by the witch Yubaba to rescue her parents, who have "
                "been turned into pigs. It was a Studio Ghibli release with music by Joe "
                "Hisaishi. The Golden Bear that year was shared with Bloody Sunday.")
    cut = S.select(spirited, "In what year was Spirited Away released?", 150,
                   title="Spirited Away")
    assert "a 2001 Japanese" in cut.text and "ten-year-old" not in cut.text
    ghibli = ("Studio Ghibli is a Japanese animation studio founded in 1985. Among the films "
              "it produced or released are Castle in the Sky (1986), Grave of the Fireflies "
              "(1988), Kiki's Delivery Service (1989), Porco Rosso (1992), Princess Mononoke "
              "(1997), My Neighbor Totoro (1988), Spirited Away (2001), Howl's Moving Castle "
              "(2004), Ponyo (2008) and Arrietty (2010).")
    cut = S.select(ghibli, Q, 200, title="Studio Ghibli")
    assert "produced or released" in cut.text and "My Neighbor Totoro (1988)" in cut.text
    assert len(cut.text.removesuffix(S.TAIL)) <= 200 and "Arrietty" not in cut.text
