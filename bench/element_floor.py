"""What Streamlit itself costs per rerun for the shapes our pages need, next to the trivial rerun.

``bench/page_latency.py`` asks every page to rerun in at most 2x the time of a trivial one-widget
script. This benchmark measures the floor under that ratio: tiny scripts with none of our code
(no model, no i18n, no caches of ours), each built from the elements a page of the issue must
draw, timed exactly as ``page_latency`` times a page (``bench/timed_server.py`` logs the script
run; ``bench/ws_rerun.py``'s websocket client flips the one radio ``lang``):

* ``fragment``: the radio alone, inside an ``st.fragment`` (what a page's view widget reruns);
* ``fragment+url``: and the value mirrored into ``st.query_params`` (shared links);
* ``fragment+chart``: and one plotly chart of ~15 kB (three small heatmaps and a bar chart,
  frozen as the app's are: ``ui.frozen_figure``);
* ``control+chart+url``: the radio, one chart and the URL value: the masks, positional and
  training pages' fragment (the widget changed, the figure it drives, its link);
* ``stepper+chart+url``: that plus the previous/next buttons side by side: the decoding page's
  step fragment (the issue asks for a step slider and next/previous buttons);
* ``stepper+chart``: the same without the URL value (a step kept out of the link);
* ``pair+chart+url``: previous/next as the two options of one segmented control instead of two
  buttons in a row (one element instead of three);
* ``slider+chart+url`` and ``slider+stepper+chart+url``: the same with a slider as the changed
  widget, as on the positional, training and decoding pages (a slider costs more than a radio);
* ``bound-slider+...``: a slider that Streamlit keeps in the URL itself (``bind="query-params"``,
  as decoding's step is), with the buttons in a row (``stepper``), one under the other
  (``stacked``), as one segmented control (``pair``), as the −/+ steppers of one number input
  (``number``: what previous/next would cost as a single native element), or none;
* ``shell``: a full rerun of a router with the shell the app-shell issue asks for (page config,
  ``st.navigation`` over seven pages in sections, a sidebar with the language radio, a model
  select box and a device caption) and an empty page: the home page's floor.

Every round changes the reference once and each script once, in an order that rotates round by
round; a script's ratio is the median over rounds of its time / the reference's time in the same
round (as in ``page_latency``). Minimums are printed too: the cost with the least outside noise.

``--pages masks decoding ...`` measures the app's own pages in the same rounds (one session per page
on one ``app.py`` server, each changing the widget ``page_latency`` changes), so a page stands next to
the shape it is built on, under the same load. ``--base-app /tmp/base/app.py`` adds the same pages
of another checkout (``git worktree add /tmp/base HEAD``) as ``base:<page>``: a change measured
against the build before it in the same rounds, which a machine whose speed swings by 2x between
minutes cannot give from two runs.

Run ``python bench/element_floor.py`` (``--runs``, ``--repeat``, ``--shapes``, ``--pages``). The last
stdout line is one JSON object with each shape's (and page's) ratio, the median of the repeats, and
every repeat's figures.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.browser_rerun import TRIVIAL_SCRIPT, timed_server  # noqa: E402
from bench.load import Session  # noqa: E402
from bench.ws_rerun import EXTRA_CHANGES, WIDGET_KEYS, change_and_time, rotated, two_states  # noqa: E402
from ui.tour import stop  # noqa: E402

CHANGES = {**WIDGET_KEYS, **EXTRA_CHANGES}  # what --pages can name: a page, or one of its extra changes

_HEAD = f"""import sys
sys.path.insert(0, {str(ROOT)!r})
import numpy as np
import plotly.graph_objects as go
import streamlit as st
from ui.frozen_figure import freeze


@st.cache_resource
def chart():
    rng = np.random.default_rng(0)
    fig = go.Figure()
    for i in range(3):
        fig.add_heatmap(z=rng.random((12, 12)).round(3), xaxis=f"x{{i + 1}}", yaxis=f"y{{i + 1}}",
                        text=[[f"t{{j}}" for j in range(12)]] * 12)
    fig.add_bar(x=list(range(10)), y=rng.random(10).round(3))
    return freeze(fig)

"""

_FRAGMENT = """
@st.fragment
def view():
    value = {widget}
{body}

view()
"""
_RADIO = 'st.radio("x", ["en", "zh"], key="lang")'
_SLIDER = 'st.slider("x", 1, 8, key="lang")'
_BOUND_SLIDER = 'st.slider("x", 1, 8, key="lang", bind="query-params")'


def fragment(*body: str, widget: str = _RADIO) -> str:
    """A script whose fragment draws ``widget`` (the one the benchmark changes), then ``body``."""
    return _HEAD + _FRAGMENT.format(widget=widget, body="\n".join(body) or "    pass")


_SHELL = """
def empty():
    pass


st.set_page_config(page_title="Shell", layout="wide")
names = ["home", "tokens", "masks", "positional", "attention", "decoding", "training"]
pages = [st.Page(empty, title=name.title(), url_path=name, default=name == "home") for name in names]
current = st.navigation({"Start": pages[:1], "Inputs": pages[1:4], "Model": pages[4:6], "Train": pages[6:]})
with st.sidebar:
    st.radio("Language", ["en", "zh"], key="lang", horizontal=True)
    st.selectbox("Model", ["copy", "reverse", "sort", "dates"], key="model")
    st.caption("Device: cpu")
current.run()
"""

_URL = "    st.query_params['value'] = value"
_CHART = "    st.plotly_chart(chart(), key='chart')"
_STEPPER = """    with st.container(horizontal=True):
        st.button("previous", key="previous")
        st.button("next", key="next")"""
_STACKED = """    st.button("previous", key="previous")
    st.button("next", key="next")"""
_PAIR = """    st.segmented_control("move", ["previous", "next"], key="move", label_visibility="collapsed")"""
_NUMBER = """    st.number_input("step", 1, 8, key="number")"""

SHAPES: dict[str, str] = {
    "fragment": fragment(),
    "fragment+url": fragment(_URL),
    "fragment+chart": fragment(_CHART),
    "control+chart+url": fragment(_URL, _CHART),
    "stepper+chart+url": fragment(_URL, _STEPPER, _CHART),
    "stepper+chart": fragment(_STEPPER, _CHART),
    "pair+chart+url": fragment(_URL, _PAIR, _CHART),
    "slider+chart+url": fragment(_URL, _CHART, widget=_SLIDER),
    "slider+stepper+chart+url": fragment(_URL, _STEPPER, _CHART, widget=_SLIDER),
    "bound-slider+stepper+chart": fragment(_STEPPER, _CHART, widget=_BOUND_SLIDER),
    "bound-slider+stacked+chart": fragment(_STACKED, _CHART, widget=_BOUND_SLIDER),
    "bound-slider+pair+chart": fragment(_PAIR, _CHART, widget=_BOUND_SLIDER),
    "bound-slider+number+chart": fragment(_NUMBER, _CHART, widget=_BOUND_SLIDER),
    "bound-slider+chart": fragment(_CHART, widget=_BOUND_SLIDER),
    "shell": _HEAD + _SHELL,
}


def measure(runs: int, shapes: list[str], pages: list[str], base_app: Path | None = None,
            clock: str = "wall") -> dict[str, dict]:
    """One repeat: fresh servers for the reference, every shape and the app (one session per page
    in ``pages``, changing the widget ``page_latency`` changes), ``runs`` timed rounds. With
    ``base_app`` (another checkout's ``app.py``), its pages too, as ``base:<page>``."""
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        sessions = {}  # name: (session, run log, widget key)

        def connect(name: str, url: str, log: Path, path: str, widget: str) -> None:
            session = Session(url, name=name).connect()
            stack.callback(session.close)
            session.open(path, "lang=en")
            sessions[name] = (session, log, widget)

        for name in ["reference", *shapes]:
            script = Path(tmp) / f"{name.replace('+', '_')}.py"
            script.write_text(TRIVIAL_SCRIPT if name == "reference" else SHAPES[name])
            connect(name, *stack.enter_context(timed_server(script)), "", "lang")
        if pages:
            app_url, app_log = stack.enter_context(timed_server(ROOT / "app.py"))
            for key in pages:
                connect(f"page:{key}", app_url, app_log, stop(key.partition(":")[0]).url_path, CHANGES[key])
        if pages and base_app is not None:
            base_url, base_log = stack.enter_context(timed_server(base_app))
            for key in pages:
                connect(f"base:{key}", base_url, base_log, stop(key.partition(":")[0]).url_path, CHANGES[key])
        time.sleep(1.0)
        states = {name: two_states(session, widget) for name, (session, _, widget) in sessions.items()}
        times: dict[str, list[float]] = {name: [] for name in sessions}
        order = list(sessions)
        for i in range(3 + runs):  # 3 warm-up rounds, then the timed ones
            for name in rotated(order, i):
                session, log, widget = sessions[name]
                seconds, _ = change_and_time(session, log, widget, states[name], i, clock)
                if i >= 3:
                    times[name].append(seconds)
        ref = times["reference"]
        out = {"reference": {"median_ms": round(statistics.median(ref) * 1e3, 2),
                             "min_ms": round(min(ref) * 1e3, 2)}}
        for name in order[1:]:
            own = times[name]
            out[name] = {
                "ratio": round(statistics.median(p / r for p, r in zip(own, ref)), 3),
                "median_ms": round(statistics.median(own) * 1e3, 2),
                "min_ms": round(min(own) * 1e3, 2),
                "min_ratio": round(min(own) / min(ref), 3),
            }
            base = times.get(name.replace("page:", "base:", 1)) if name.startswith("page:") else None
            if base:  # this build against the other, round by round
                out[name]["vs_base"] = round(statistics.median(p / b for p, b in zip(own, base)), 3)
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=31, help="timed rounds per repeat")
    parser.add_argument("--repeat", type=int, default=3, help="repeats, each with fresh servers")
    parser.add_argument("--shapes", nargs="*", choices=list(SHAPES), default=list(SHAPES))
    parser.add_argument("--pages", nargs="*", choices=list(CHANGES), default=[],
                        help="also the app's pages (as page_latency changes them), in the same rounds")
    parser.add_argument("--base-app", type=Path,
                        help="with --pages: another checkout's app.py (e.g. `git worktree add /tmp/base HEAD`), "
                             "its pages measured in the same rounds as base:<page>, to compare two builds")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="time runs by the wall clock or by the server process's CPU time (page_latency --clock)")
    args = parser.parse_args()
    names = [*args.shapes, *(f"page:{key}" for key in args.pages)]
    if args.base_app and args.pages:
        names += [f"base:{key}" for key in args.pages]

    repeats = []
    for k in range(args.repeat):
        print(f"-- repeat {k + 1} of {args.repeat}", flush=True)
        result = measure(args.runs, args.shapes, args.pages, args.base_app and args.base_app.resolve(), args.clock)
        ref = result["reference"]
        print(f"{'reference':<18} {ref['median_ms']:6.2f} ms (min {ref['min_ms']:5.2f})", flush=True)
        for name in names:
            r = result[name]
            print(f"{name:<18} {r['median_ms']:6.2f} ms (min {r['min_ms']:5.2f}): {r['ratio']:4.2f}x"
                  f"   (min/min {r['min_ratio']:4.2f}x)"
                  + (f"   vs base {r['vs_base']:4.2f}x" if "vs_base" in r else ""), flush=True)
        repeats.append(result)
    ratios = {name: round(statistics.median(r[name]["ratio"] for r in repeats), 3) for name in names}
    for name, ratio in ratios.items():
        print(f"{name:<18} median of {len(repeats)}: {ratio:4.2f}x   "
              f"(each: {', '.join(format(r[name]['ratio'], '.2f') for r in repeats)})", flush=True)
    vs_base = {name: round(statistics.median(r[name]["vs_base"] for r in repeats), 3)
               for name in names if "vs_base" in repeats[0][name]}
    for name, ratio in vs_base.items():
        print(f"{name:<18} against base, median of {len(repeats)}: {ratio:4.2f}x   "
              f"(each: {', '.join(format(r[name]['vs_base'], '.2f') for r in repeats)})", flush=True)
    print(json.dumps({"ratios": ratios, "vs_base": vs_base, "clock": args.clock, "runs": args.runs,
                      "repeats": repeats, "cpus": os.cpu_count(), "loadavg": list(os.getloadavg())}))


if __name__ == "__main__":
    main()
