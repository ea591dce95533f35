"""Rendering without Streamlit: graph/mind-map data and HTML (pyvis / vis-network),
layouts, token heatmaps, what-if recomputation, inspector data, exports, figures."""
