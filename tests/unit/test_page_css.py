"""ui.page_css: formulas that may wrap only between their parts."""
from ui.page_css import formula_row


def test_a_row_of_formulas_may_break_between_them_and_nowhere_inside():
    assert formula_row("a=b", "c=d") == r"{a=b}\qquad\allowbreak {c=d}"


def test_a_left_side_ending_with_after_goes_on_on_the_next_line_without_the_wide_gap():
    assert formula_row("f(x)=", "x^2", "g=1", after="=") == r"{f(x)=}\;\allowbreak {x^2}\qquad\allowbreak {g=1}"
