"""Streamlit helpers shared by the pages: the model loader, live runs in a background
thread, the interactive graph component, the inspector and what-if widgets.
Pages stay thin: they lay these out; rendering logic lives in workbench.viz."""
