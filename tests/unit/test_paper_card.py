"""explain/paper_card.py: the paper's base model beside this app's (#31, "the paper's numbers")."""
from __future__ import annotations

import pytest
import torch

from explain.paper_card import PAPER_BASE, of_checkpoint, of_planned_run, rows, written
from model.training import ADAM_BETAS, ADAM_EPS, TrainingRun, TrainingConfig
from ui import models


def test_the_papers_column_is_the_base_model_of_table_3_and_section_5():
    assert PAPER_BASE == {"n_layers": 6, "d_model": 512, "n_heads": 8, "d_k": 64, "d_ff": 2048, "dropout": 0.1,
                          "label_smoothing": 0.1, "warmup": 4000, "adam_betas": (0.9, 0.98), "adam_eps": 1e-9}
    assert PAPER_BASE["d_k"] == PAPER_BASE["d_model"] // PAPER_BASE["n_heads"]


@pytest.mark.parametrize("value, text", [(2048, "2,048"), (0.1, "0.1"), (0.0, "0"), (1e-9, "1e-9"), (None, "–"),
                                         ((0.9, 0.98), "(0.9, 0.98)"), (4000, "4,000")])
def test_values_are_written_as_a_class_reads_them(value, text):
    assert written(value) == text


def test_a_shipped_model_is_read_from_its_weights_and_its_saved_training_settings():
    ckpt = models.get_model("en-zh")
    mine = of_checkpoint(ckpt)
    config = ckpt.model.config
    assert (mine["n_layers"], mine["d_model"], mine["n_heads"], mine["d_ff"]) == (config.n_layers, config.d_model,
                                                                                 config.n_heads, config.d_ff)
    assert mine["d_k"] == config.d_model // config.n_heads
    assert (mine["dropout"], mine["label_smoothing"], mine["warmup"]) == (0.0, 0.1, 100)  # as it was trained
    same = {name for name, _, _, equal in rows(mine) if equal}
    assert same == {"label_smoothing", "adam_betas", "adam_eps"}


def test_a_planned_run_is_what_the_engine_would_train():
    mine = of_planned_run("tiny", dropout=0.25, label_smoothing=0.2, warmup=300)
    run = TrainingRun(TrainingConfig(preset="tiny", dropout=0.25, label_smoothing=0.2, warmup=300, max_steps=1),
                      device="cpu")
    config = run.model_config
    assert (mine["n_layers"], mine["d_model"], mine["n_heads"], mine["d_ff"]) == (config.n_layers, config.d_model,
                                                                                 config.n_heads, config.d_ff)
    assert mine["dropout"] == run.config.dropout == config.dropout == 0.25  # the page's dropout is the run's
    group = run.optimizer.param_groups[0]
    assert tuple(group["betas"]) == ADAM_BETAS == mine["adam_betas"] and group["eps"] == ADAM_EPS == mine["adam_eps"]
    assert (mine["label_smoothing"], mine["warmup"]) == (0.2, 300)
