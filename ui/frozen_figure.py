"""Plotly figures that are built once and then only read, made cheap to draw on every rerun.

``st.plotly_chart`` calls ``figure.to_dict()`` on every script run, and plotly answers with a deep
copy of the whole figure, template included (a few milliseconds per chart). A figure that comes out
of a process-wide cache is never changed again, so :func:`freeze` makes its ``to_dict`` compute
that dict once and hand back the same one afterwards.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go


class FrozenFigure(go.Figure):
    """A ``go.Figure`` whose ``to_dict()`` is computed on first use and then reused.

    Only for figures that are finished: a change made after the first ``to_dict()`` would not show.
    """

    def to_dict(self) -> dict:
        frozen = self.__dict__.get("_frozen_dict")
        if frozen is None:
            frozen = _plain_object_arrays(super().to_dict())
            self.__dict__["_frozen_dict"] = frozen
        return frozen


def _plain_object_arrays(value):
    """``value`` with every numpy object array (e.g. per-cell hover text) turned into nested lists.

    Plotly validates a numpy ``customdata`` far faster than nested lists, but serialises it far
    slower; a frozen dict is serialised on every rerun, so it keeps the lists.
    """
    if isinstance(value, dict):
        return {key: _plain_object_arrays(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain_object_arrays(item) for item in value]
    if isinstance(value, np.ndarray) and value.dtype == object:
        return value.tolist()
    return value


def freeze(fig: go.Figure) -> go.Figure:
    """Turn the finished ``fig`` into a :class:`FrozenFigure` (in place, no copy) and return it."""
    fig.__class__ = FrozenFigure
    fig.to_dict()
    return fig


def frozen_from_dict(spec: dict) -> FrozenFigure:
    """A frozen figure that draws as the plotly figure dict ``spec``, built without validating it
    (e.g. :func:`ui.figure_grid.combine`'s cells). For drawing only (``st.plotly_chart`` reads
    ``to_dict()``); its plotly attributes (``.data``, ``.layout``) are empty.
    """
    figure = FrozenFigure()
    figure.__dict__["_frozen_dict"] = spec
    return figure
