"""The training page's Streamlit side (its layout is ``app_pages/training.py``): the settings derived from
their one declaration on ``model.training.TrainingConfig`` (:mod:`.settings`), a run per browser session
(:mod:`.session`), what the buttons do (:mod:`.actions`), the suggested experiments (:mod:`.experiments`),
the compare list (:mod:`.compare`), the live Vega-Lite charts (:mod:`.charts`) and the sidebar's status
line (:mod:`.status`)."""
