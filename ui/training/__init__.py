"""The training page's Streamlit side: a run per browser session (:mod:`.session`), the page's
sections (:mod:`.panel`), its live Vega-Lite charts (:mod:`.charts`) and the sidebar's status line
(:mod:`.status`)."""
