"""Plotly figures and Vega-Lite specs built from numpy arrays and already-translated labels.

No Streamlit and no torch here (``tests/unit/test_layers.py`` checks). Every token that reaches a
figure goes through :func:`figures.labels.token_label` (escaped, spaces made visible) and sits at
an integer position (a categorical axis would merge two equal tokens).
"""
