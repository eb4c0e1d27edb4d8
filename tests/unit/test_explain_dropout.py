"""Dropout on one update (explain.dropout): the model's own Dropout, its mask, its rescale and its expectation."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from explain.dropout import DRAWS, TABLE_COLUMNS, through_dropout
from model.layers import Dropout, dropout_generator

UPDATE = np.array([0.5, -1.0, 2.0, 0.0, 3.0, -0.25, 1.5, -2.0])


def test_kept_numbers_are_rescaled_by_one_over_one_minus_p_and_dropped_ones_are_zero():
    view = through_dropout(UPDATE, 0.5, seed=7)
    assert set(np.unique(view.kept)) <= {0.0, 1.0} and 0 < view.dropped < len(UPDATE)
    np.testing.assert_allclose(view.train, UPDATE * view.kept * 2.0)
    assert view.scale == 2.0
    assert view.kept[3] in (0.0, 1.0)  # a zero in the update has a mask value of its own


def test_the_mask_is_the_models_own_dropout_with_the_same_generator():
    view = through_dropout(UPDATE, 0.3, seed=11, draws=1)
    layer = Dropout(0.3).train()
    with dropout_generator(torch.Generator().manual_seed(11)), torch.no_grad():
        ones = layer(torch.ones(1, len(UPDATE), dtype=torch.float64))[0]
    np.testing.assert_allclose(view.kept, (ones > 0).double().numpy())
    assert through_dropout(UPDATE, 0.3, seed=11).kept.tolist() == view.kept.tolist()  # the first of many draws


def test_the_average_of_many_masks_is_the_update_and_the_share_dropped_is_p():
    view = through_dropout(np.ones(200), 0.2, seed=0)
    # E[dropout(y)] = y: each number's mean over 2000 draws is within 5 standard errors of 1
    standard_error = np.sqrt(0.2 / 0.8 / DRAWS)
    assert view.average_gap < 5 * standard_error
    assert abs(view.dropped / 200 - 0.2) < 0.1  # one draw of 200 Bernoulli(0.2)


def test_p_zero_changes_nothing_and_p_one_is_refused():
    view = through_dropout(UPDATE, 0.0, seed=3)
    np.testing.assert_array_equal(view.train, UPDATE)
    assert view.dropped == 0 and view.average_gap == 0
    with pytest.raises(ValueError):
        through_dropout(UPDATE, 1.0, seed=0)


def test_the_table_lists_every_dimension():
    table = through_dropout(UPDATE, 0.5, seed=1).table()
    assert list(table.columns) == TABLE_COLUMNS and len(table) == len(UPDATE)
    assert set(table["kept"]) <= {0, 1}
