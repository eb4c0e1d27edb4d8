"""What the pages show, computed: torch in, numpy / pandas / plain dataclasses out.

No Streamlit and no plotly here (``tests/unit/test_layers.py`` checks): every function can be
called from a test or a notebook. The UI caches results with :func:`ui.cache.computed`, so a
function here takes the checkpoint as its first argument when it runs a model and never keeps it.
"""
