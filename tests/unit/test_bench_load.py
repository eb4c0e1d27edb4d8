"""The benchmark client writes a Streamlit-bound slider into its URL as a browser does."""
from streamlit.proto.Slider_pb2 import Slider
from streamlit.proto.WidgetStates_pb2 import WidgetState

from bench.load import browser_query


def slider_state(value: float) -> WidgetState:
    state = WidgetState(id="w")
    state.double_array_value.data.extend([value])
    return state


def test_a_bound_slider_replaces_its_value_and_keeps_the_others():
    bound = Slider(query_param_key="dec_step", default=[1])
    assert browser_query("lang=en&dec_step=2&dec_head=3", bound, slider_state(5)) == "lang=en&dec_head=3&dec_step=5"


def test_a_bound_slider_at_its_default_leaves_the_url():
    bound = Slider(query_param_key="dec_step", default=[1])
    assert browser_query("lang=en&dec_step=2", bound, slider_state(1)) == "lang=en"


def test_an_unbound_slider_leaves_the_query_as_it_is():
    assert browser_query("lang=en&x=1", Slider(default=[1]), slider_state(4)) == "lang=en&x=1"
