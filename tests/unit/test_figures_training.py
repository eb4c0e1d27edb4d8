"""The training page's Vega-Lite specs and data tables (figures.training): small tables, specs that
never depend on the data (so a live chart updates in place), tokens labelled one by one."""
from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pytest

from figures import training as fig


def test_bucket_means_keep_short_series_and_shrink_long_ones():
    steps, values = fig.bucket_means([1.0, 2.0, 3.0])
    assert steps.tolist() == [1, 2, 3] and values.tolist() == [1.0, 2.0, 3.0]
    long = np.arange(1, 10_001, dtype=float)
    steps, values = fig.bucket_means(long, limit=100)
    assert len(steps) == 100 and steps[-1] == 10_000
    assert values.mean() == pytest.approx(long.mean())


def test_sampled_steps_cover_the_run_and_keep_the_warmup():
    steps = fig.sampled_steps(3000, [400, 5000])
    assert steps[0] == 1 and steps[-1] == 3000 and 400 in steps and 5000 not in steps
    assert len(steps) <= fig.MAX_POINTS + 1 and np.all(np.diff(steps) > 0)


def test_curve_and_peak_tables():
    curve = fig.curve_table([("a", [1, 2], [0.1, 0.2]), ("b", [1], [0.3])])
    assert curve.to_pydict() == {"step": [1, 2, 1], "lr": [0.1, 0.2, 0.3], "series": ["a", "a", "b"]}
    assert fig.curve_table([]).num_rows == 0
    peak = fig.peak_table([("a", 400, 0.00884)])
    assert peak.to_pydict() == {"step": [400], "lr": [0.00884], "series": ["a"], "label": ["0.00884"]}


def test_run_series_become_small_tables():
    table = fig.series_table([("this", [4.0] * 5000), ("before", [1.0, 2.0])], "loss")
    assert table.column_names == ["step", "loss", "series"]
    assert table.num_rows == fig.MAX_POINTS + 2
    assert table.column("step").to_pylist()[fig.MAX_POINTS - 1] == 5000
    evals = fig.eval_table([("this", [(10, 0.5), (20, 1.0)])])
    assert evals.to_pydict() == {"step": [10, 20], "accuracy": [0.5, 1.0], "series": ["this", "this"]}
    assert fig.series_table([], "loss").num_rows == 0


def test_attention_spec_labels_every_position_even_repeated_tokens():
    src, tgt = ["l", "l", " ", '"', "\x07"], ["<bos>", "l"]
    spec = fig.attention_spec(src, tgt, dataset="w", title="t", x_title="x", y_title="y", weight_title="w",
                              show_scale=True)
    expr = spec["encoding"]["x"]["axis"]["labelExpr"]
    labels = json.loads(expr[: expr.index("[datum.value]")])
    assert labels == ["l", "l", "␣", '"', "\\x07"] and spec["encoding"]["x"]["scale"]["domain"] == [0, 1, 2, 3, 4]
    table = fig.attention_table(np.full((2, 4), 0.25))
    assert table.num_rows == 8 and math.isclose(sum(table.column("weight").to_pylist()), 2.0)
    assert spec["transform"][0]["calculate"] == '["<bos>", "l"][datum.row]'  # the tooltip's token
    assert fig.attention_height(2) == 200 and fig.attention_height(12) == 320  # sized to the sentence


def test_learning_rates_are_written_in_plain_decimals():
    """Issue #35 item 20: the rate axis read 7.0e-4, its tooltip 6.988e-4; d3's "r" writes 0.0007."""
    import json

    spec = json.dumps(fig.lr_spec(x_title="step", y_title="lr", series=["a"], live=False))
    formats = [f for f in (fig.LR_FORMAT, fig.LR_TOOLTIP_FORMAT) if f in spec]
    assert formats == [fig.LR_FORMAT, fig.LR_TOOLTIP_FORMAT] and not any("e" in f for f in formats)
    assert '"format": ".1e"' not in spec and '"format": ".3e"' not in spec
    assert json.loads(spec)["layer"][0]["encoding"]["x"]["axis"]["format"] == ",d"  # steps: 100, not 1e+2


def test_live_specs_do_not_depend_on_the_data():
    """The in-place update needs the same spec every second: only the datasets may change."""
    kw = dict(x_title="step", y_title="lr", series=["this run"], live=True, x_domain=(0, 100))
    assert fig.lr_spec(**kw) == fig.lr_spec(**kw)
    assert "datasets" not in fig.lr_spec(**kw)
    spec = fig.line_spec("loss", "loss", x_title="step", y_title="loss", series=["this run"])
    one = fig.with_datasets(spec, loss=fig.series_table([("this run", [3.0, 2.0])], "loss"))
    two = fig.with_datasets(spec, loss=fig.series_table([("this run", [3.0, 2.0, 1.0])], "loss"))
    assert {k: v for k, v in one.items() if k != "datasets"} == {k: v for k, v in two.items() if k != "datasets"}
    assert isinstance(two["datasets"]["loss"], pa.Table) and "datasets" not in spec  # the spec itself is untouched


def test_the_loss_floor_is_a_labelled_rule_over_the_curves():
    spec = fig.with_floor(fig.line_spec("loss", "loss", x_title="s", y_title="l", series=["a"]), "floor", "loss")
    marks = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in spec["layer"]]
    assert marks == ["line", "rule", "text"]
    assert fig.point_table(loss=1.5, label="floor").to_pydict() == {"loss": [1.5], "label": ["floor"]}
