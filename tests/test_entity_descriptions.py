from workbench.datasets.base import Passage
from workbench.knowledge.descriptions import EntityDescriptions


def test_lookup_gives_the_lead_sentence_of_the_article_titled_with_the_name():
    calls = []

    def passages():
        calls.append(1)
        return [Passage("a", "Mercury (planet)", "Mercury is the smallest planet. It is hot."),
                Passage("b", "Mercury", "Mercury is a chemical element. Symbol Hg."),
                Passage("c", "Venus (planet)", "Venus is the second planet."),
                Passage("d", "Empty", ""),
                Passage("e", "", "No title here.")]
    d = EntityDescriptions(passages)
    assert not calls                                   # built on first lookup only
    assert d.lookup("mercury") == ("b", "Mercury is a chemical element.")   # exact title wins
    assert d.lookup("Mercury (planet)") == ("a", "Mercury is the smallest planet.")
    assert d.lookup("  VENUS ") == ("c", "Venus is the second planet.")     # parenthesis dropped
    assert d.lookup("Empty") is None and d.lookup("Mars") is None
    assert len(calls) == 1 and len(d) == 4


def test_a_loaded_kg_describes_its_entities_from_the_dataset_passages():
    from workbench.datasets import load_dataset
    ds = load_dataset("demo")
    kg = ds.kg()
    titled = [p for p in ds.passages if p.title and p.text]
    assert kg is not None and kg.descriptions is not None and titled
    p = titled[0]
    assert kg.descriptions.lookup(p.title)[0] in {q.id for q in titled if q.title == p.title}
