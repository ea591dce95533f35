"""Knowledge: browse and search the active corpus; explore the knowledge graph."""
from __future__ import annotations

import streamlit as st

from workbench.ui import access
from workbench.ui import data as D
from workbench.ui import widgets as W
from workbench.ui.component import graph as graph_component
from workbench.viz import kgview

K = "kn"
ss = st.session_state
settings = W.setup_page()
st.title("Knowledge")

names = D.dataset_names(settings.dataset)
ds_name = st.selectbox("Dataset", names, index=names.index(settings.dataset)
                       if settings.dataset in names else 0, key=f"{K}__ds",
                       help="Browsing only; the active dataset is set in Settings.")
try:
    with st.spinner("Loading the dataset…"):
        ds = D.get_dataset(ds_name)
except D.DatasetError as e:
    W.error(str(e))
    st.stop()
except Exception as e:      # noqa: BLE001 - readable, never a traceback
    W.error(f"Dataset {ds_name!r} could not be read: {W.friendly(e)}")
    st.stop()

t_pass, t_kg = st.tabs(["Passages", "Knowledge graph"])

with t_pass:
    passages = D.passages(ds)
    if not passages:
        st.info(f"Dataset {ds_name!r} has no passages.")
    else:
        c = st.columns([5, 2, 1])
        query = c[0].text_input("Search the corpus", key=f"{K}__q",
                                placeholder="same retrievers the methods use")
        kinds = ["bm25", "dense", "hybrid"]
        kind = c[1].selectbox("Retriever", kinds, index=kinds.index(settings.retriever)
                              if settings.retriever in kinds else 0, key=f"{K}__kind")
        k = c[2].number_input("k", 1, 50, int(settings.k), key=f"{K}__k")
        # A search with an index not built yet builds it (minutes and a cache file for a
        # large corpus, dense or hybrid): the host's in shared mode.
        if query.strip() and not D.index_built(ds, kind) and \
                not access.host_only(f"Building the {kind} index"):
            st.caption(f"The {kind} index of this dataset is not built yet.")
        elif query.strip():
            try:
                with st.spinner(f"Searching with {kind} (the first search builds the index)…"):
                    hits = ds.retriever(kind).search(query.strip(), int(k))
                st.dataframe([{"rank": h.rank, "score": round(float(h.score), 4),
                               "retriever": h.retriever, "title": h.title, "text": h.text,
                               "id": h.id} for h in hits], hide_index=True, width="stretch",
                             column_config={"text": st.column_config.TextColumn(width="large")})
                if not hits:
                    st.caption("No hits.")
            except Exception as e:      # noqa: BLE001 - e.g. dense weights missing
                W.error(f"The {kind} retriever is unavailable: {W.friendly(e)}")
        st.caption(f"{len(passages)} passages")
        per = 50
        pages_n = max(1, (len(passages) + per - 1) // per)
        page = st.number_input("Page", 1, pages_n, 1, key=f"{K}__page") if pages_n > 1 else 1
        chunk = passages[(page - 1) * per: page * per]
        st.dataframe([{"id": p.id, "title": p.title, "text": p.text} for p in chunk],
                     hide_index=True, width="stretch", height=320,
                     column_config={"text": st.column_config.TextColumn(width="large")})

with t_kg:
    try:
        kg = ds.kg() if hasattr(ds, "kg") else None
    except Exception as e:      # noqa: BLE001
        kg = None
        W.error(f"The knowledge graph could not be loaded: {W.friendly(e)}")
    g = kgview.as_networkx(kg)
    if g is None:
        st.info(f"Dataset {ds_name!r} has no knowledge graph. Build one with "
                f"`python -m workbench kg build {ds_name}` or pick a dataset with a KG.")
    else:
        st.caption(f"{g.number_of_nodes()} entities · {g.number_of_edges()} edges")
        c = st.columns([4, 1, 1, 1])
        q = c[0].text_input("Entity search", key=f"{K}__ent")
        hops = c[1].radio("Hops", [1, 2], horizontal=True, key=f"{K}__hops")
        per_node = c[2].number_input("Per node", 3, 100, 12, key=f"{K}__per")
        cap = c[3].number_input("Cap", 10, 500, 120, key=f"{K}__cap")
        matches = kgview.search_entities(g, q) if q.strip() else []
        if q.strip() and not matches:
            st.caption("No entity matches.")
        if matches:
            pick = st.selectbox("Entity", range(len(matches)), key=f"{K}__pick",
                                format_func=lambda i: f"{matches[i][1]} (degree {matches[i][2]})")
            seed = matches[pick][0]
            state = ss.setdefault(f"{K}__expand", {"seed": None, "expanded": [], "collapsed": []})
            if state["seed"] != seed:
                state.update(seed=seed, expanded=[], collapsed=[])
            data = kgview.neighbourhood(g, [seed], hops=int(hops), per_node=int(per_node),
                                        cap=int(cap), expanded=state["expanded"],
                                        collapsed=state["collapsed"])
            ss[f"{K}__view"] = data
            clicked, t = graph_component(data, key=f"{K}__graph", height=520,
                                         options=kgview.kg_options())
            if clicked and t != ss.get(f"{K}__click_t"):
                ss[f"{K}__click_t"] = t
                real = data["ids"].get(clicked.split(":", 1)[-1])
                if real is not None:
                    if clicked.startswith("more:") or real not in state["expanded"]:
                        state["expanded"].append(real)
                        if real in state["collapsed"]:
                            state["collapsed"].remove(real)
                    else:
                        state["expanded"].remove(real)
                    st.rerun()
            st.caption("Click an entity to expand or collapse it; '+N more' shows the rest. "
                       f"{data['hidden_total']} neighbours hidden by the caps.")
            if st.button("Collapse all", key=f"{K}__collapse"):
                state.update(expanded=[], collapsed=[])
                st.rerun()
            with st.expander("Triples shown"):
                st.dataframe([{"from": data["ids"].get(e["from"]), "relation": e["tip"]["text"],
                               "to": data["ids"].get(e["to"])} for e in data["edges"]
                              if e["to"] in data["ids"]], hide_index=True, width="stretch")
