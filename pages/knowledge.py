"""Knowledge: browse and search the active corpus; explore the knowledge graph."""
from __future__ import annotations

import streamlit as st

from workbench.ui import access
from workbench.ui import data as D
from workbench.ui import queries as Q
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
    src = kgview.source(kg)
    if src is None:
        st.info(f"Dataset {ds_name!r} has no knowledge graph. Build one with "
                f"`python -m workbench kg build {ds_name}` or pick a dataset with a KG.")
        st.stop()
    if hasattr(kg, "n_entities"):
        st.caption(f"{kg.n_entities:,} entities · {kg.n_triples:,} triples")
    c = st.columns([4, 2, 1, 1], vertical_alignment="bottom")
    q = c[0].text_input("Find an entity", key=f"{K}__ent",
                        placeholder="a name or alias, e.g. Christopher Nolan",
                        help="Case and accents do not matter; aliases and words in any order "
                             "match too.")
    hops = c[1].segmented_control("Depth (hops)", [1, 2, 3], default=1, key=f"{K}__hops",
                                  help="How far from the entity the network reaches.") or 1
    per_node = c[2].number_input("Per node", 3, 60, 12, key=f"{K}__per",
                                 help="Neighbours shown per entity; the rest sit behind "
                                      "'+N more'.")
    cap = c[3].number_input("Max nodes", 10, 400, 120, key=f"{K}__cap")

    kg_runs = []
    try:
        kg_methods = [n for n, m in D.method_classes().items() if getattr(m, "kind", "") == "kg"]
        for mname in kg_methods:
            kg_runs += Q.runs(W.store(), method=mname, dataset=ds_name, limit=50)
    except Exception as e:      # noqa: BLE001 - the explorer works without a store
        st.caption(f"Stored runs unavailable: {W.friendly(e)}")
    kg_runs.sort(key=lambda r: -(r["created_at"] or 0))
    run_opts = [""] + [r["run_id"] for r in kg_runs]   # None would read "Choose an option"
    info = {r["run_id"]: r for r in kg_runs}
    run_id = st.selectbox(
        "Highlight the paths of a run", run_opts, key=f"{K}__run",
        format_func=lambda rid: "(none)" if not rid else
        f"{info[rid]['method']} · {W.shorten(info[rid]['question'], 70)} · {rid}",
        help=f"FRAG's selected paths or CogGRAG's kept triples, from runs on {ds_name}.")
    paths = []
    if run_id:
        paths = kgview.run_paths(W.store().trace(run_id))
        if not paths:
            st.caption("This run stored no KG paths (it may have failed before retrieval).")

    matches = kgview.search_entities(src, q) if q.strip() else []
    if q.strip() and not matches:
        st.caption(f"No entity is named {q.strip()!r} (or has it as an alias).")
    seed = None
    if matches:
        pick = st.selectbox(
            "Entity", range(len(matches)), key=f"{K}__pick",
            format_func=lambda i: matches[i][1] + (f" (alias {matches[i][3]!r})"
                                                   if matches[i][3] else "")
            + f" · {matches[i][2]} links · {matches[i][0]}")
        seed = matches[pick][0]
    elif paths and not q.strip():
        seed = paths[0][0][0]           # the run's first path starts at its topic entity
    if seed is None:
        if not q.strip():
            st.info("Type an entity's name above, or pick a FRAG or CogGRAG run to see its "
                    "paths.")
        st.stop()

    state = ss.setdefault(f"{K}__state", {"seed": None, "centre": None, "selected": None,
                                          "expanded": []})
    if state["seed"] != seed:
        state.update(seed=seed, centre=seed, selected=seed, expanded=[])
    centre = state["centre"] if state["centre"] in src else seed
    data = kgview.neighbourhood(src, [centre], hops=int(hops), per_node=int(per_node),
                                cap=int(cap), expanded=state["expanded"],
                                selected=state["selected"], paths=paths)
    ss[f"{K}__view"] = data
    clicked, t = graph_component(data, key=f"{K}__graph", height=560,
                                 options=kgview.kg_options(), reset=state.get("moved", True))
    state["moved"] = False
    if clicked and t != ss.get(f"{K}__click_t"):
        ss[f"{K}__click_t"] = t
        real = data["ids"].get(clicked.split(":", 1)[-1])
        if real is not None:
            if clicked.startswith("more:"):
                state["expanded"].append(real)
            else:
                state["selected"] = real
            st.rerun()
    legend = ("★ the centre · click an entity to label its links · hover a link for its "
              "relations · '+N more' shows more neighbours")
    if paths:
        legend += (f" · orange: the run's paths ({len(paths)}; "
                   f"{data['path_nodes']} entities)")
    st.caption(legend + f" · {data['hidden_total']} neighbours hidden by the caps.")
    sel = state["selected"] if state["selected"] in src else centre
    b = st.columns([2, 2, 6])
    if b[0].button(f"Centre on {W.shorten(src.name(sel), 28)}", key=f"{K}__centre",
                   disabled=sel == centre):
        state.update(centre=sel, expanded=[], moved=True)
        st.rerun()
    if b[1].button("Reset the view", key=f"{K}__collapse"):
        state.update(centre=seed, selected=seed, expanded=[], moved=True)
        st.rerun()
    st.markdown(f"**{W.md_escape(src.name(sel))}**: its links in this view")
    st.dataframe(kgview.triples_rows(src, data, only=sel), hide_index=True, width="stretch")
    with st.expander("All triples shown"):
        st.dataframe(kgview.triples_rows(src, data), hide_index=True, width="stretch")
