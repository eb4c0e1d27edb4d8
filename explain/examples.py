"""The translation examples two pages open with one click (Attention's maps, Decoding's steps).

``REORDER``: per translation task, a sentence and its translation whose word order differs most
(English puts time and place last; Chinese puts the time after the subject and 在 + place before the
verb). The pronoun pair ("it" is the cat or the road) is :data:`explain.pronoun.SENTENCES`; in its
Chinese the referent is written right after :data:`REFERENT_AFTER`.
"""
from __future__ import annotations

from explain.pronoun import SENTENCES as PRONOUN_SENTENCES

REORDER: dict[str, tuple[str, str]] = {
    "en-zh": ("the cat ate two apples in the garden yesterday .", "猫昨天在花园里吃了两个苹果。"),
    "zh-en": ("猫昨天在花园里吃了两个苹果。", "the cat ate two apples in the garden yesterday ."),
}
TRANSLATIONS: tuple[str, ...] = tuple(REORDER)
REFERENT_AFTER = "因为"  # ...因为猫太累了。 / ...因为马路太宽了。

__all__ = ["PRONOUN_SENTENCES", "REFERENT_AFTER", "REORDER", "TRANSLATIONS"]
