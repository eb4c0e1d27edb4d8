"""Felt latency: from a click in a real browser until the page has settled.

Method. The app runs under ``streamlit run`` (a fresh server per repeat, loopback only) and a
headless chromium (Playwright; ``/usr/bin/chromium`` or ``$TP_CHROMIUM``) opens each row's page.
A script injected into every page records, in the page's own clock (``performance.now()``):
the first ``pointerdown``/``keydown`` after the benchmark arms it (the click: works with
Playwright's own clicks and key presses), the last DOM mutation (a ``MutationObserver`` on
``document.body``), and Streamlit's websocket traffic: the rerun request the click sends and
the server's first answer. After the click the page polls once per animation frame; it has
settled when the server has answered (a click that sends nothing: after 3 s), no run is shown
(no ``stStatusWidget``, no ``data-test-script-state="running"``, no ``data-stale="true"``) and
neither the DOM nor the websocket changed for two consecutive frames. Settle time = the later
of the last DOM mutation and the last server message (the run's end) − click. (The script state alone cannot tell that a run started: on a
busy page the browser applies a whole run's messages in one batch and the attribute never
shows "running".) After a settle the benchmark pauses 300 ms; if the page changed again, the
server sent more (``st.rerun``) or an HTTP request is still in flight (a component's code loaded
on its first use), it waits again and the flip ends at the later mutation. Over 30 s: timeout.

Each row flips one control between two states A and B. Its first A→B flip in a fresh server is
COLD (the first time that view is computed in the process; state B may already have been
computed by an earlier row, e.g. a section two rows show); the next ``--flips`` flips (B→A,
A→B, ...) are WARM: median and p95 (nearest rank) over all repeats; cold is the median over
repeats. Controls are found by their visible English label (never by CSS class or widget key),
so the table works on any build that keeps the labels; a control not found is "missing".

Reference: a minimal script (a two-option segmented control driving one 20×20 plotly heatmap),
outside and inside ``st.fragment``, each on its own server, measured the same way before each
page's rows. ``reference_ms`` = warm median of the non-fragment one: like the app's views, it is
a whole-script rerun. Targets: warm ≤ 2× reference warm, cold ≤ 8× reference cold.

Adding a row: append ``Row(id, path, to_b, to_a, setup)`` to ``ROWS``, with steps built by
``choose``/``toggle``/``select``/``unselect``/``slider``/``text``/``nav``/``button``/``expander``/``open_url``
(or the ``pick``/``flip``/``arrows`` shorthands); ``setup`` steps run unmeasured after the page loads.
``open_url`` loads a path in the tab (a new Streamlit session): the flip is timed from navigation start.

Run from the repo root: ``python bench/felt_latency.py [--app PATH] [--repeat N] [--flips N]
[--only SUBSTRING[,SUBSTRING...]] [--screenshot-dir DIR] [--floor]``. The last stdout line is a JSON summary.
``--floor`` measures no app rows: the reference against the same click redrawing 4 charts (in
columns, and as one figure of 4 subplots) and against a page switch between two one-chart pages.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from urllib.parse import urljoin
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Union

from playwright.sync_api import Error as PlaywrightError, Page, sync_playwright

CHROMIUM = os.environ.get("TP_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
SETTLE_TIMEOUT_MS = 30_000
NO_RUN_GRACE_MS = 3_000
FIND_TIMEOUT_MS = 15_000
PAUSE_MS = 300  # after a settle: late work (a chained rerun, a lazily loaded component) shows up
MAX_RESETTLES = 10
WARM_TARGET, COLD_TARGET = 2.0, 8.0

Text = Union[str, re.Pattern]

# --- the table -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One user action: ``kind`` on the control whose visible label is ``label``."""
    kind: str  # choose | toggle | select | unselect | slider | text | nav | button | expander | open
    label: Text | None = None  # None: search the whole page (the option text is unique)
    value: Text = ""


def choose(label: Text | None, option: Text) -> Step: return Step("choose", label, option)  # radio, segmented, pill
def toggle(label: Text) -> Step: return Step("toggle", label)
def switch(label: str) -> Step: return Step("switch", label)  # a toggle, or a pill of the old masks page
def select(label: Text, option: str) -> Step: return Step("select", label, option)  # also adds to a multiselect
def unselect(label: Text) -> Step: return Step("unselect", label)  # a multiselect's last choice
def slider(label: Text, key: str) -> Step: return Step("slider", label, key)
def text(label: Text, value: str) -> Step: return Step("text", label, value)  # text, area, number
def nav(page_title: str) -> Step: return Step("nav", None, page_title)
def button(caption: str) -> Step: return Step("button", None, caption)
def expander(summary: Text) -> Step: return Step("expander", None, summary)  # open or close: the browser's work
def open_url(path: str) -> Step: return Step("open", None, path)  # a new session: the page loaded, timed from navigation


@dataclass(frozen=True)
class Row:
    id: str
    path: str  # URL path and query the row starts from (state A)
    to_b: Step
    to_a: Step
    setup: tuple[Step, ...] = ()


def pick(label: Text, a: Text, b: Text, path: str, id: str, setup: tuple[Step, ...] = ()) -> Row:
    return Row(id, path, choose(label, b), choose(label, a), setup)


def flip(step: Step, path: str, id: str, setup: tuple[Step, ...] = ()) -> Row:
    return Row(id, path, step, step, setup)


def arrows(label: Text, path: str, id: str, setup: tuple[Step, ...] = ()) -> Row:
    return Row(id, path, slider(label, "ArrowRight"), slider(label, "ArrowLeft"), setup)


HOME, TOK, MASKS, ATT = "/?lang=en", "/tokens?lang=en", "/masks?lang=en", "/attention?lang=en"
ATT_FIRST = ATT + "&attention_layer=1&attention_head=1"  # the page opens on the most focused head: start from 1/1 explicitly
POS, DEC, TRAIN = "/positional-encoding?lang=en", "/decoding?lang=en", "/training?lang=en"
LN = "/layer-norm?lang=en&model=copy"
BATCH = "hello world\nattention is all you need\nhi!"  # the copy model's (LayerNorm rows)
# The tokens and masks rows run on the default model, en-zh in English since #22: its batch example.
EN_ZH = ("the cat ate two apples in the garden yesterday .", "did you see the dog ?", "tom will buy a red car tomorrow .")
EN_ZH_BATCH, EN_ZH_SHORTER = "\n".join(EN_ZH), f"{EN_ZH[0]}\n{EN_ZH[2]}"
EN_ZH_FIRST, EN_ZH_THIRD = f"1: {EN_ZH[0]}", f"3: {EN_ZH[2]}"
MASK_SWITCHES, MASKS_FIRST = "Masks on (click to switch one off or on)", "The masks of this sentence"
MASKS_SPARSE = (choose("Show", "Cheaper attention: sparse patterns"),)
MASKS_EFFECT = (choose("Show", "What the masks do to the model's attention"),)
MASKS_COPY = "/masks?lang=en&model=copy"
LOOK_AHEAD_EXERCISE = (expander("Write it yourself · Look-ahead mask"), select("Load a common mistake", "polarity reversed"))
MASKS_ROW = (choose("Show", "One row, step by step"),)
HEAD_VIEW, INSIDE = (choose("Explore", "Head view"),), (choose("Explore", "Inside one head"),)
# The code panel (#30) under the one-head view: its expander, and its intermediates (options "scores (1, 4, 9, 9)")
ATT_INSIDE, CODE_PANEL = ATT + "&attention_view=inside", expander(re.compile(r"^Code ·"))
CODE_STEP = "Intermediate of this input"
ABLATION, COMPARE = (choose("Explore", "Switch heads off"),), (choose("Show", "Strategies side by side"),)

# Pages in the order measured; each nav row's cold flip is the first visit of the page it opens.
ROWS: list[Row] = [
    Row("home:language", HOME, choose(None, "中文"), choose(None, "English")),
    Row("nav:home-tokens", HOME, nav("Tokens and embeddings"), nav("Home")),
    # a session's first page (#35 item 22): a deep link opened in a fresh tab, from navigation start until it settles
    Row("session:open-tokens", HOME, open_url(TOK), open_url(HOME)),
    pick("Show", "encoder input", "decoder input", TOK, "tokens:side"),
    Row("tokens:sentence", TOK, select("Sentence", EN_ZH_THIRD), select("Sentence", EN_ZH_FIRST)),
    Row("tokens:batch", TOK, text(re.compile("^Sentences, one per line"), EN_ZH_SHORTER),
        text(re.compile("^Sentences, one per line"), EN_ZH_BATCH)),
    Row("tokens:lookup-ids", TOK, text(re.compile("^Ids to look up"), "3, 3, 1"), text(re.compile("^Ids to look up"), "0, 2, 4")),
    pick("Table", "encoder's (323 rows, one per word)", "decoder's (259 rows, one per character)", TOK, "tokens:space-side"),
    Row("tokens:space-word", TOK, select("A word of this table", "cat"), select("A word of this table", "dog")),
    Row("tokens:space-words", TOK, select("Compare these words (up to 12)", "tiger"),
        unselect("Compare these words (up to 12)")),
    flip(toggle(re.compile(r"^Include the special tokens")), TOK, "tokens:space-specials"),
    pick("Learn the merges from", "English sentences", "Chinese sentences", TOK, "tokens:bpe-corpus"),
    arrows("Merges k", TOK, "tokens:bpe-merges"),
    Row("tokens:bpe-sentence", TOK, text("Your sentence", "the catfish ate lowest apples ."),
        text("Your sentence", "the happiest dogs ate the catfish .")),
    Row("nav:tokens-masks", TOK, nav("Masks"), nav("Tokens and embeddings")),
    flip(switch("Padding mask"), MASKS, "masks:padding"),
    flip(switch("Look-ahead mask"), MASKS, "masks:look-ahead"),
    Row("masks:sentence", MASKS, select("Sentence", EN_ZH_THIRD), select("Sentence", EN_ZH_FIRST)),
    pick("Show", MASKS_FIRST, "The same masks as PyTorch prints them", MASKS, "masks:section-printout"),
    pick("Show", MASKS_FIRST, "What the masks do to the model's attention", MASKS, "masks:section-effect"),
    pick("Show", MASKS_FIRST, "One row, step by step", MASKS, "masks:section-row"),
    pick("Show", MASKS_FIRST, "Cheaper attention: sparse patterns", MASKS, "masks:section-sparse"),
    pick("Show", MASKS_FIRST, "Encoder-only and decoder-only", MASKS, "masks:section-families"),
    pick("Pattern", "Sliding window", "Blocks", MASKS, "masks:sparse-pattern", MASKS_SPARSE),
    arrows("Window radius r", MASKS, "masks:sparse-radius", MASKS_SPARSE),
    flip(toggle("Also in the decoder's self-attention"), MASKS, "masks:sparse-decoder", MASKS_SPARSE),
    pick("Pattern", "Sliding window", "Blocks", MASKS, "masks:sparse-pattern-code",
         (*MASKS_SPARSE, expander("Code · the pattern's mask, restricted_attention, restricted_look_ahead"))),
    flip(expander("Encoder-only and decoder-only models"), HOME, "home:families"),
    flip(expander("The paper's numbers beside this model's"), HOME, "home:paper-card"),
    Row("masks:layer", MASKS, select("Layer", "layer 2 of 3"), select("Layer", "layer 1 of 3"), MASKS_EFFECT),
    Row("masks:head", MASKS, select("Head", "head 2 of 4"), select("Head", "head 1 of 4"), MASKS_EFFECT),
    flip(switch("Padding mask"), MASKS, "masks:effect-padding", MASKS_EFFECT),
    pick("Attention", "decoder self-attention", "encoder self-attention", MASKS, "masks:row-kind", MASKS_ROW),
    arrows("Query position", MASKS, "masks:row-query", MASKS_ROW),
    # the exercises: each Check and each Use mine runs the learner's code in the sandbox (TP_LEARNER_CODE=local:
    # this benchmark's browser is on the server's machine), on the copy model; the code is a planted mistake
    flip(button("Check"), MASKS_COPY, "masks:exercise-check", LOOK_AHEAD_EXERCISE),
    flip(button("Use mine in the model"), MASKS_COPY, "masks:exercise-use-mine", (*LOOK_AHEAD_EXERCISE, button("Check"))),
    Row("nav:masks-attention", MASKS, nav("Attention"), nav("Masks")),
    Row("attention:sentence", ATT, text("Sentence", "the cat sat"), text("Sentence", "hello world")),
    Row("attention:model", ATT, select("Model", "reverse (pretrained)"), select("Model", "copy (pretrained)")),
    pick("Explore", "Overview", "Head view", ATT, "attention:section-heads"),
    pick("Explore", "Overview", "Inside one head", ATT, "attention:section-inside"),
    pick("Explore", "Overview", "Head statistics", ATT, "attention:section-stats"),
    pick("Explore", "Overview", "Switch heads off", ATT, "attention:section-ablation"),
    pick("Attention block", "Encoder self-attention", "Cross-attention", ATT, "attention:kind"),
    pick("Layer", "1", "2", ATT_FIRST, "attention:layer"),
    pick("Head", "1", "2", ATT_FIRST, "attention:head"),
    flip(toggle("All heads"), ATT, "attention:heads-all", HEAD_VIEW),
    flip(toggle("Outline the correct alignment"), ATT + "&attention_kind=cross", "attention:cross-alignment"),
    pick("Head", "1", "2", ATT_FIRST + "&attention_kind=cross", "attention:cross-head-scored"),
    pick("Head", "1", "2", ATT_FIRST, "attention:inside-head", INSIDE),
    flip(toggle("Divide by √d_k"), ATT, "attention:inside-scale", INSIDE),
    pick("Compatibility function", "Dot product q·k/√d_k", "Additive vᵀtanh(W_q q + W_k k)", ATT, "attention:inside-compat",
         INSIDE),
    pick("Attention block", "Encoder self-attention", "Decoder masked self-attention", ATT,
         "attention:inside-kind", INSIDE),
    flip(CODE_PANEL, ATT_INSIDE, "attention:code-open"),  # a fragment rerun: a closed panel is not drawn at all
    pick(CODE_STEP, re.compile(r"^weights "), re.compile(r"^scores "), ATT_INSIDE, "attention:code-scores",
         (CODE_PANEL,)),  # a rerun: the line marked, the scores chart framed
    Row("attention:ablate", ATT, select("Heads to switch off", "Encoder self-attention · layer 1 · head 1"),
        unselect("Heads to switch off"), ABLATION),
    # Feed-forward network and the residual stream (#20)
    Row("nav:attention-ffn", ATT, nav("Feed-forward network"), nav("Attention")),
    pick("Stack", "Encoder", "Decoder", "/feed-forward?lang=en", "ffn:stack"),
    pick("Layer", "1", "2", "/feed-forward?lang=en", "ffn:layer"),
    Row("ffn:sentence", "/feed-forward?lang=en", text("Sentence", "the cat sat"), text("Sentence", "hello world")),
    pick("Show", "Inside one layer", "Position-wise", "/feed-forward?lang=en", "ffn:section-position"),
    pick("Show", "Inside one layer", "Parameters", "/feed-forward?lang=en", "ffn:section-params"),
    Row("ffn:copy-to", "/feed-forward?lang=en&feed_forward_view=position", select("into position", "4: apples"),
        select("into position", "1: cat")),
    pick("Stack", "Encoder", "Decoder", "/residual-stream?lang=en", "residual:stack"),
    Row("residual:token", "/residual-stream?lang=en", select("Follow one token", "2: ate"),
        select("Follow one token", "0: the")),
    pick("Show", "Vector and update, sublayer by sublayer", "Switch a residual connection off",
         "/residual-stream?lang=en", "residual:section-off"),
    pick("Show", "Vector and update, sublayer by sublayer", "One update through dropout",
         "/residual-stream?lang=en", "residual:section-dropout"),
    arrows("Drop probability p", "/residual-stream?lang=en&residual_stream_view=dropout", "residual:dropout-p"),
    Row("residual:switch-off", "/residual-stream?lang=en&residual_stream_view=off",
        select("Residual connections to switch off", "Encoder · layer 1 · self-attention"),
        unselect("Residual connections to switch off")),
    Row("nav:attention-positional", ATT, nav("Positional encoding"), nav("Attention")),
    arrows("d_model (dimensions)", POS, "positional:d_model"),
    arrows("Positions", POS, "positional:positions"),
    arrows("Base b", POS, "positional:base"),
    arrows(re.compile("^(Pair |Dimension pair i)"), POS, "positional:pair"),  # the label was the status before #19
    Row("positional:sentence", POS, text("Sentence", "the mat sat on the cat"),
        text("Sentence", "the cat sat on the mat")),
    flip(toggle("Positional encoding on"), POS, "positional:pe-switch"),
    flip(button("Shuffle"), POS, "positional:shuffle"),
    # LayerNorm (#20), on the copy model (2 + 2 layers); a cold seed = three 6 + 6-layer models' backward passes and the "1 +"'s two
    Row("layernorm:norm", LN, select("Norm", "Decoder layer 1 of 2 · cross-attention"),
        select("Norm", "Encoder layer 1 of 2 · self-attention")),
    arrows("Token", LN, "layernorm:token"),
    flip(toggle("Count the <pad> positions in BatchNorm"), LN, "layernorm:pads"),
    pick("Seed", "0", "1", LN, "layernorm:seed"),
    Row("layernorm:one-plus", LN, select("Connection", "Decoder layer 6 of 6 · feed-forward"),
        select("Connection", "Decoder layer 6 of 6 · cross-attention")),
    Row("layernorm:sentence", LN, select("Sentence", "3: hi!"), select("Sentence", "1: hello world")),
    Row("layernorm:batch", LN, text(re.compile("^Sentences, one per line"), "hello world\nhi!"),
        text(re.compile("^Sentences, one per line"), BATCH)),
    Row("nav:positional-decoding", POS, nav("Decoding"), nav("Positional encoding")),
    Row("decoding:sentence", DEC, text("Source sentence", "the cat sat"), text("Source sentence", "hello world")),
    pick("Show", "Step by step", "Strategies side by side", DEC, "decoding:section-compare"),
    pick("Show", "Step by step", "Teacher forcing vs free running", DEC, "decoding:section-forcing"),
    pick("Show", "Step by step", "All at once vs one at a time", DEC, "decoding:section-parallel"),
    pick(re.compile(r"^Placeholder after"), "<unk>", "copies of <bos>", DEC + "&decoding_view=parallel",
         "decoding:placeholder"),
    pick("Strategy", "Greedy", "Beam search", DEC, "decoding:strategy"),
    pick("Layer", "1", "2", DEC, "decoding:layer"),
    pick("Head", "1", "2", DEC, "decoding:head"),
    arrows(re.compile(r"^Step( \d+ of.*)?$"), DEC, "decoding:step"),  # the label was the status before #19; now "Step", hidden
    Row("decoding:next-previous", DEC, button("Next"), button("Previous")),
    Row("decoding:next-previous-beam", DEC + "&decoding_strategy=beam", button("Next"), button("Previous")),
    arrows("Beam size", DEC, "decoding:beam-size", COMPARE),
    arrows("Length penalty α", DEC, "decoding:length-penalty", COMPARE),
    arrows("Length penalty α", DEC + "&decoding_strategy=beam", "decoding:length-penalty-steps"),
    arrows("Temperature", DEC, "decoding:temperature", COMPARE),
    Row("decoding:top-k", DEC, slider("Top-k", "ArrowLeft"), slider("Top-k", "ArrowRight"), COMPARE),  # starts at "all"
    Row("decoding:seed", DEC, text("Seed", "1"), text("Seed", "0"), COMPARE),
    # Output and loss (#21)
    Row("nav:decoding-output", DEC, nav("Output and loss"), nav("Decoding")),
    Row("output:target", "/output-and-loss?lang=en", text("Target (what the decoder should write)", "hellx world"),
        text("Target (what the decoder should write)", "hello world")),
    arrows("Position (the token it should write)", "/output-and-loss?lang=en", "output:position"),
    arrows("Temperature", "/output-and-loss?lang=en", "output:temperature"),
    pick("Show", "Logits and softmax", "Worked numbers", "/output-and-loss?lang=en", "output:section-seed"),
    pick("Show", "Logits and softmax", "Loss of the sentence", "/output-and-loss?lang=en", "output:section-loss"),
    pick("Show", "Logits and softmax", "Label smoothing", "/output-and-loss?lang=en", "output:section-smoothing"),
    # "Why e^x, and not just x / Σx?" (#31): typed scores, and the constant's slider
    Row("output:why-scores", "/output-and-loss?lang=en&output_and_loss_view=seed",
        text(re.compile("^Scores x"), "-2, 1, 3"), text(re.compile("^Scores x"), "1, 2, 3")),
    arrows("Constant c added to every score", "/output-and-loss?lang=en&output_and_loss_view=seed", "output:why-shift"),
    arrows("Label smoothing ε", "/output-and-loss?lang=en&output_and_loss_view=smoothing", "output:epsilon"),
    arrows("Position (the token it should write)", "/output-and-loss?lang=en&output_and_loss_view=smoothing",
           "output:smoothing-position"),
    Row("nav:decoding-training", DEC, nav("Training"), nav("Decoding")),
    pick("Show", "The model on N samples", "One sentence by hand", "/bleu?lang=en", "bleu:section-worked"),
    pick("The model's answers", "as the model wrote them", "one wrong token in each", "/bleu?lang=en", "bleu:noise"),
    arrows("Samples (N)", "/bleu?lang=en", "bleu:samples"),  # cold: one more chunk of samples decoded
    Row("bleu:seed", "/bleu?lang=en", text("Seed", "1"), text("Seed", "0")),
    # at the most samples (#35 item 22): a cold flip decodes 200 samples with the new seed / model
    Row("bleu:seed-200", "/bleu?lang=en&bleu_n=200", text("Seed", "1"), text("Seed", "0")),
    Row("bleu:model-200", "/bleu?lang=en&bleu_n=200", select("Model", "zh-en (pretrained)"),
        select("Model", "en-zh (pretrained)")),
    pick("n-gram order", "1-gram", "2-gram", "/bleu?lang=en&bleu_view=worked", "bleu:order"),
    pick("Pair", "a sample of the model", "type a pair", "/bleu?lang=en&bleu_view=worked", "bleu:pair"),
    Row("bleu:candidate", "/bleu?lang=en&bleu_view=worked&bleu_pair=typed", text("Candidate", "thank you"),
        text("Candidate", "thank you so much")),
    pick("Tokenisation", "characters (char)", "words (13a)", "/bleu?lang=en&bleu_view=worked&bleu_pair=typed",
         "bleu:tokenize"),
    # int8 weights (#32): the section (cold: the int8 model's samples decoded), then its attention controls
    pick("Show", "The model on N samples", "int8 weights", "/bleu?lang=en", "bleu:section-int8"),
    pick("Attention", "cross-attention", "encoder self-attention", "/bleu?lang=en&bleu_view=int8", "bleu:int8-kind"),
    pick("Head", "1", "2", "/bleu?lang=en&bleu_view=int8", "bleu:int8-head"),
    # The cost of attention (#21): the setup presses Measure (kept per server process); the switch redraws the curves
    flip(toggle("Logarithmic axes"), "/attention-cost?lang=en", "cost:log-axes", (button("Measure"),)),
    # Latent attention (#32): k and the head redraw the four maps (a fragment); the sentence box reruns the forward
    arrows("Latents k", "/attention-cost?lang=en", "cost:latents"),
    pick("Head (encoder layer 1 of 3)", "1", "2", "/attention-cost?lang=en", "cost:latent-head"),
    Row("cost:latent-sentence", "/attention-cost?lang=en", text("Sentence for latent attention", EN_ZH[1]),
        text("Sentence for latent attention", EN_ZH[0])),
    pick("Task", "copy", "reverse", TRAIN, "training:task"),
    pick("Tokens", "words / characters", "BPE pieces", TRAIN + "&training_task=en-zh", "training:tokens"),
    pick("Width of each head (d_k)", "d_model / heads", "256", TRAIN, "training:head-width"),
    pick("Model size", re.compile("^tiny"), re.compile("^small"), TRAIN, "training:size"),
    Row("training:batch", TRAIN, text("Batch size", "64"), text("Batch size", "32")),
    arrows("Factor", TRAIN, "training:factor"),
    arrows("Label smoothing ε", TRAIN, "training:smoothing"),
    arrows("Dropout P_drop", TRAIN, "training:dropout"),
    flip(toggle("Padding mask"), TRAIN, "training:padding"),
    flip(toggle("Look-ahead mask"), TRAIN, "training:look-ahead"),
    arrows(re.compile("^Warmup steps"), TRAIN, "training:warmup"),
    arrows("Second curve: warmup (0 = none)", TRAIN, "training:compare"),
    flip(toggle("Add the paper's schedule"), TRAIN, "training:paper-schedule"),
    pick("Norm placement", "post-norm (the paper)", "pre-norm", TRAIN, "training:norm-placement"),
    pick("Normalisation", "LayerNorm", "RMSNorm", TRAIN, "training:norm-kind"),
    pick("Feed-forward", "ReLU", "SwiGLU", TRAIN, "training:ffn-kind"),
    pick("Positions", "sinusoidal", "RoPE", TRAIN, "training:position-kind"),
    # a running run (#35 item 22): Pause until Resume is drawn (even flips), Resume until Pause is (odd flips)
    Row("training:pause", TRAIN, button("Pause"), button("Resume"), (button("Start training"),)),
    # Paper vs this code (#30): the picked row opens (every row is drawn on every run; its numbers are cached)
    Row("paper:row", "/paper-vs-code?lang=en", select("Open a row", "9. N layers, or one layer N times"),
        select("Open a row", "1. Post-norm or pre-norm, and the extra final norm")),
]

REFERENCE_SCRIPT = '''import numpy as np
import plotly.graph_objects as go
import streamlit as st

def view():
    choice = st.segmented_control("Pattern", ["A", "B"], default="A", key="pattern")
    grid = np.arange(20)
    z = np.add.outer(grid, grid) if choice == "A" else np.subtract.outer(grid, grid)
    st.plotly_chart(go.Figure(go.Heatmap(z=z)), key="chart")

st.fragment(view)() if FRAGMENT else view()
'''
REFERENCE_ROW = pick("Pattern", "A", "B", "/", "reference")
REFERENCES = {"reference": False, "reference_fragment": True}  # name: inside st.fragment

# The framework's floor for the app's heavier views, measured by ``--floor`` (no app rows): the same
# 20×20 heatmap click with 4 charts redrawn (as 4 charts in columns, and as 1 figure of 4 subplots), and
# a page switch between two pages of one heatmap each. What a Streamlit + plotly page costs on this
# machine before any of the app's own work.
FLOOR_SCRIPT = '''import numpy as np
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

def pattern(choice, shift=0):
    grid = np.arange(20)
    return (np.add.outer(grid, grid) if choice == "A" else np.subtract.outer(grid, grid)) + shift

def view():
    choice = st.segmented_control("Pattern", ["A", "B"], default="A", key="pattern")
    if LAYOUT == "columns":
        for n, column in enumerate(st.columns(2) + st.columns(2)):
            column.plotly_chart(go.Figure(go.Heatmap(z=pattern(choice, n))), key=f"chart{n}")
    else:
        fig = make_subplots(rows=2, cols=2)
        for n in range(4):
            fig.add_trace(go.Heatmap(z=pattern(choice, n), showscale=False), row=n // 2 + 1, col=n % 2 + 1)
        st.plotly_chart(fig.update_layout(height=700), key="chart")

def page(title):
    def body():
        st.title(title)
        st.plotly_chart(go.Figure(go.Heatmap(z=pattern("A" if title == "One" else "B"))), key="chart")
    return st.Page(body, title=title, url_path=title.lower(), default=title == "One")

if LAYOUT == "pages":
    st.navigation([page("One"), page("Two")]).run()
else:
    view()
'''
FLOORS = {  # name: (layout, row)
    "floor_4_charts": ("columns", REFERENCE_ROW),
    "floor_4_subplots": ("subplots", REFERENCE_ROW),
    "floor_page_switch": ("pages", Row("floor_page_switch", "/", nav("Two"), nav("One"))),
    "floor_open": ("pages", Row("floor_open", "/", open_url("/two"), open_url("/one"))),  # a new session's page
}


# --- in the page -------------------------------------------------------------------------------

PROBE_JS = """(() => {
  // t0 = 0 at first: the page load is timed from navigation start.
  const s = window.__felt = {t0: 0, lastMutation: 0, sentAt: null, answeredAt: null, lastReceived: 0};
  s.arm = () => { s.t0 = null; s.sentAt = null; s.answeredAt = null; };
  const input = () => { if (s.t0 === null) s.t0 = performance.now(); };
  window.addEventListener('pointerdown', input, true);
  window.addEventListener('keydown', input, true);
  // Streamlit's websocket: the click's rerun request goes out (send), the server's answer comes in.
  window.WebSocket = class extends window.WebSocket {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', () => {
        s.lastReceived = performance.now();
        if (s.sentAt !== null) s.answeredAt = s.answeredAt ?? s.lastReceived;
      });
    }
    send(data) {
      if (s.t0 !== null) s.sentAt = s.sentAt ?? performance.now();
      return super.send(data);
    }
  };
  const watch = () => new MutationObserver(() => { s.lastMutation = performance.now(); })
      .observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
  document.body ? watch() : document.addEventListener('DOMContentLoaded', watch);
  const busy = () => document.querySelector('[data-testid="stStatusWidget"], '
      + '[data-test-script-state="running"], [data-stale="true"]') !== null;
  s.settle = (timeoutMs, graceMs) => new Promise(resolve => {
    const begun = performance.now();
    let quiet = 0, seen = [s.lastMutation, s.lastReceived];
    const frame = () => {
      const now = performance.now(), t0 = s.t0 ?? begun;  // null: the click is still on its way
      const started = s.answeredAt !== null || (s.t0 !== null && s.sentAt === null && now - t0 > graceMs);
      const still = s.lastMutation === seen[0] && s.lastReceived === seen[1];
      quiet = started && still && !busy() ? quiet + 1 : 0;
      seen = [s.lastMutation, s.lastReceived];
      if (quiet >= 2 || now - t0 > timeoutMs)
        return resolve({ms: Math.max(s.lastMutation, s.lastReceived) - t0, ran: s.sentAt !== null,
                        timeout: quiet < 2, at: now});
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  });
})();"""


class Missing(Exception):
    """A control of a row is not on the page."""


def _widget(page: Page, label: Text):
    """The element container of the widget whose label reads ``label``."""
    found = page.get_by_test_id("stWidgetLabel").get_by_text(label, exact=True)
    return found.locator('xpath=ancestor::*[@data-testid="stElementContainer"][1]').first


def _target(page: Page, step: Step):
    """The element the step clicks or types into (raises :class:`Missing`)."""
    if step.kind == "switch":  # the masks' switches: toggles now, pills in one group before #19
        try:
            page.get_by_text(step.label, exact=True).first.wait_for(timeout=FIND_TIMEOUT_MS)
        except PlaywrightError:
            raise Missing(f"switch {step.label}") from None
        is_toggle = page.get_by_test_id("stWidgetLabel").get_by_text(step.label, exact=True).count() > 0
        return _target(page, toggle(step.label) if is_toggle else choose(MASK_SWITCHES, step.label))
    scope = page if step.label is None else _widget(page, step.label)
    target = {
        "choose": lambda: scope.get_by_text(step.value, exact=True),
        "toggle": lambda: scope.get_by_test_id("stWidgetLabel").get_by_text(step.label, exact=True),
        "select": lambda: scope.get_by_role("combobox"),
        "unselect": lambda: scope.get_by_role("combobox"),
        "slider": lambda: scope.get_by_role("slider"),
        "text": lambda: scope.locator("input, textarea"),
        "nav": lambda: page.get_by_test_id("stSidebarNav").get_by_text(step.value, exact=True),
        "button": lambda: page.get_by_role("button").filter(has=page.get_by_text(step.value, exact=True)),
        "expander": lambda: page.get_by_test_id("stExpander").locator("summary").filter(
            has=page.get_by_text(step.value, exact=True)),
    }[step.kind]().first
    try:
        target.wait_for(state="visible", timeout=FIND_TIMEOUT_MS)
    except PlaywrightError:
        raise Missing(f"{step.kind} {step.label or ''} {step.value}".strip()) from None
    return target


class Tab:
    """A browser tab with the probe installed, and the HTTP requests it has in flight."""

    def __init__(self, context) -> None:
        self.page = context.new_page()
        self.loading: set = set()  # requests in flight: a component's code loaded on first use
        self.page.on("request", lambda request: self.loading.add(request))
        self.page.on("requestfinished", lambda request: self.loading.discard(request))
        self.page.on("requestfailed", lambda request: self.loading.discard(request))

    def perform(self, step: Step) -> None:
        """Do ``step``; the probe is armed right before the input that changes the value."""
        page = self.page
        arm = lambda: page.evaluate("window.__felt.arm()")  # noqa: E731
        if step.kind == "open":  # a fresh document: its probe times from navigation start (t0 = 0)
            page.goto(urljoin(page.url, step.value))
            return
        target = _target(page, step)
        if step.kind == "select":  # open the box, type the option's name, click the option
            for _ in range(3):  # a first click sometimes only focuses the box
                if target.get_attribute("aria-expanded") != "true":
                    target.click()
                    page.wait_for_timeout(200)
            target.press_sequentially(step.value)
            option = page.get_by_role("option").filter(has_text=step.value).first
            try:
                option.wait_for(timeout=FIND_TIMEOUT_MS)
            except PlaywrightError:
                raise Missing(f"select {step.label}: option {step.value}") from None
            arm()
            option.click()
        elif step.kind in ("slider", "unselect"):
            target.focus()
            arm()
            target.press(step.value or "Backspace")
        elif step.kind == "text":
            target.fill(step.value)
            arm()
            target.press("Control+Enter" if target.evaluate("e => e.tagName") == "TEXTAREA" else "Enter")
        else:
            arm()
            target.click()

    def settle(self) -> dict:
        """Wait until the page has settled after the armed input. When, after a pause, the page
        has changed again or the server sent more (``st.rerun``) or code is still loading, it
        waits again: the result then ends at the later mutation."""
        args = [SETTLE_TIMEOUT_MS, NO_RUN_GRACE_MS]
        result = self.page.evaluate("([t, g]) => window.__felt.settle(t, g)", args)
        for _ in range(MAX_RESETTLES):
            self.page.wait_for_timeout(PAUSE_MS)
            late = self.page.evaluate("Math.max(window.__felt.lastMutation, window.__felt.lastReceived)")
            if result["timeout"] or (late <= result["at"] and not self.loading):
                break
            result = self.page.evaluate("([t, g]) => window.__felt.settle(t, g)", args)
        return result

    def open(self, url: str, setup: tuple[Step, ...]) -> None:
        """Load ``url``, wait until it has settled, do ``setup``."""
        self.page.goto(url)
        self.settle()
        for step in setup:
            self.perform(step)
            self.settle()


# --- servers -----------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(app: Path, log: Path) -> Iterator[tuple[str, int]]:
    """``(base_url, pid)`` of ``streamlit run app`` on a free loopback port; killed on exit."""
    port = _free_port()
    cmd = [sys.executable, "-m", "streamlit", "run", str(app), "--server.port", str(port),
           "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, cwd=app.parent, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = log.read_text(errors="replace").splitlines()[-15:]
                    raise RuntimeError("streamlit did not start:\n" + "\n".join(tail)) from None
                time.sleep(0.3)
        yield url, proc.pid
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def wait_idle(pid: int, limit_s: float = 30.0) -> None:
    """Wait until the server process uses < 10 % CPU over 0.5 s (its background warm-up is done)."""
    def cpu_s() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        before = cpu_s()
        time.sleep(0.5)
        if cpu_s() - before < 0.05:
            return


# --- measuring ---------------------------------------------------------------------------------


@dataclass
class Result:
    row: str
    cold_ms: list[float] = field(default_factory=list)
    warm_ms: list[float] = field(default_factory=list)
    problems: set[str] = field(default_factory=set)  # missing: ..., timeout, no rerun


def measure(tab: Tab, base: str, row: Row, result: Result, flips: int, cold: bool, shot: Path | None) -> None:
    """Flip ``row`` 1 + ``flips`` times; the first flip is cold when ``cold``."""
    try:
        tab.open(base + row.path, row.setup)
        for i in range(1 + flips):
            tab.perform(row.to_b if i % 2 == 0 else row.to_a)
            outcome = tab.settle()
            if outcome["timeout"]:
                result.problems.add("timeout")
            elif not outcome["ran"]:
                result.problems.add("no rerun")
            ms = SETTLE_TIMEOUT_MS if outcome["timeout"] else round(outcome["ms"], 1)
            (result.cold_ms if i == 0 and cold else result.warm_ms).append(ms)
            if i == 0 and shot:
                tab.page.screenshot(path=str(shot))
    except Missing as exc:
        result.problems.add(f"missing: {exc}")
    except PlaywrightError as exc:  # a control that vanished mid-click, a page that did not load
        result.problems.add(f"error: {str(exc).splitlines()[0][:120]}")


def p95(values: list[float]) -> float | None:
    return sorted(values)[math.ceil(0.95 * len(values)) - 1] if values else None


def median(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def _repeat(browser, urls: dict[str, str], pid: int, rows: list[Row], results: dict[str, Result],
            r: int, flips: int, shots: Path | None) -> None:
    """One repeat on fresh servers: every row, and the reference before each page's rows."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    context.route(re.compile(r"^(?!https?://127\.0\.0\.1[:/]|data:|blob:)"), lambda route: route.abort())
    context.add_init_script(PROBE_JS)
    tab = Tab(context)
    tab.open(urls["app"] + HOME, ())
    wait_idle(pid)  # the app's background warm-up (model loading) is over
    page_path = None
    for row in rows:
        if row.path.split("?")[0] != page_path:
            page_path = row.path.split("?")[0]
            for name in REFERENCES:
                cold = len(results[name].cold_ms) == r  # its first visit in this repeat
                measure(tab, urls[name], REFERENCE_ROW, results[name], flips, cold, None)
        wait_idle(pid, 5)
        shot = shots / f"r{r}-{row.id.replace(':', '_')}.png" if shots else None
        result = results[row.id]
        measure(tab, urls["app"], row, result, flips, True, shot)
        print(f"  repeat {r + 1}: {row.id:<32} cold {result.cold_ms[-1:]} warm {result.warm_ms[-flips:]} "
              f"{' '.join(sorted(result.problems))}", file=sys.stderr, flush=True)
    context.close()


def run(app: Path, rows: list[Row], repeat: int, flips: int, shots: Path | None) -> dict[str, Result]:
    """Results per row id, and for the two references (keys of ``REFERENCES``)."""
    results = {row.id: Result(row.id) for row in rows} | {name: Result(name) for name in REFERENCES}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        scripts = {}
        for name, fragment in REFERENCES.items():
            scripts[name] = Path(tmp, name, "app.py")
            scripts[name].parent.mkdir()
            scripts[name].write_text(f"FRAGMENT = {fragment}\n" + REFERENCE_SCRIPT)
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        log = Path(tmp, "servers.log")
        for r in range(repeat):
            with serve(app, log) as (app_url, pid), serve(scripts["reference"], log) as (ref_url, _), \
                    serve(scripts["reference_fragment"], log) as (frag_url, _):
                urls = {"app": app_url, "reference": ref_url, "reference_fragment": frag_url}
                _repeat(browser, urls, pid, rows, results, r, flips, shots)
        browser.close()
    return results


def run_floor(repeat: int, flips: int) -> dict[str, Result]:
    """The reference and the :data:`FLOORS` apps, interleaved, each on a fresh server per repeat."""
    names = ("reference", *FLOORS)
    results = {name: Result(name) for name in names} | {"reference_fragment": Result("reference_fragment")}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        scripts = {"reference": Path(tmp, "reference", "app.py")}
        scripts["reference"].parent.mkdir()
        scripts["reference"].write_text("FRAGMENT = False\n" + REFERENCE_SCRIPT)
        for name, (layout, _) in FLOORS.items():
            scripts[name] = Path(tmp, name, "app.py")
            scripts[name].parent.mkdir()
            scripts[name].write_text(f"LAYOUT = {layout!r}\n" + FLOOR_SCRIPT)
        rows = {"reference": REFERENCE_ROW} | {name: row for name, (_, row) in FLOORS.items()}
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        log = Path(tmp, "servers.log")
        for _ in range(repeat):
            with contextlib.ExitStack() as stack:
                urls = {name: stack.enter_context(serve(scripts[name], log))[0] for name in names}
                context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
                context.add_init_script(PROBE_JS)
                tab = Tab(context)
                for name in names:
                    measure(tab, urls[name], rows[name], results[name], flips, True, None)
                    print(f"  {name:<20} cold {results[name].cold_ms[-1:]} warm {results[name].warm_ms[-flips:]}",
                          file=sys.stderr, flush=True)
                context.close()
        browser.close()
    return results


# --- report ------------------------------------------------------------------------------------


def summarize(result: Result, ref_warm: float | None, ref_cold: float | None) -> dict:
    cold, warm = median(result.cold_ms), median(result.warm_ms)
    warm_ratio = warm / ref_warm if warm is not None and ref_warm else None
    cold_ratio = cold / ref_cold if cold is not None and ref_cold else None
    missing = any(p.startswith("missing") for p in result.problems)
    ok = (not missing and "timeout" not in result.problems and warm_ratio is not None and cold_ratio is not None
          and warm_ratio <= WARM_TARGET and cold_ratio <= COLD_TARGET)
    return {"row": result.row, "cold_ms": cold, "cold_ms_all": result.cold_ms, "warm_median_ms": warm,
            "warm_p95_ms": p95(result.warm_ms), "warm_n": len(result.warm_ms),
            "warm_ratio": round(warm_ratio, 2) if warm_ratio else None,
            "cold_ratio": round(cold_ratio, 2) if cold_ratio else None,
            "status": "missing" if missing else ("pass" if ok else "FAIL"), "problems": sorted(result.problems)}


def fmt(value: float | None, spec: str = ".0f") -> str:
    return "-" if value is None else format(value, spec)


def report(results: dict[str, Result], load_start: tuple, load_end: tuple) -> dict:
    ref, frag = results.pop("reference"), results.pop("reference_fragment")
    ref_warm, ref_cold, frag_warm = median(ref.warm_ms), median(ref.cold_ms), median(frag.warm_ms)
    rows = [summarize(r, ref_warm, ref_cold) for r in results.values()]
    print(f"\nreference (plain) warm {fmt(ref_warm)} ms (p95 {fmt(p95(ref.warm_ms))}), cold {fmt(ref_cold)} ms;"
          f" in a fragment: warm {fmt(frag_warm)} ms, cold {fmt(median(frag.cold_ms))} ms")
    print(f"targets: warm ≤ {WARM_TARGET:g}× reference warm, cold ≤ {COLD_TARGET:g}× reference cold "
          f"(page switches included)\n")
    print(f"{'row':<32} {'cold':>7} {'warm p50':>9} {'warm p95':>9} {'warm ×':>7} {'cold ×':>7}  status")
    for r in rows:
        print(f"{r['row']:<32} {fmt(r['cold_ms']):>7} {fmt(r['warm_median_ms']):>9} {fmt(r['warm_p95_ms']):>9}"
              f" {fmt(r['warm_ratio'], '.2f'):>7} {fmt(r['cold_ratio'], '.2f'):>7}  {r['status']}"
              f"{'  (' + ', '.join(r['problems']) + ')' if r['problems'] else ''}")
    measured = [r for r in rows if r["warm_ratio"] is not None]
    worst_warm = max(measured, key=lambda r: r["warm_ratio"], default=None)
    worst_cold = max((r for r in rows if r["cold_ms"] is not None), key=lambda r: r["cold_ms"], default=None)
    summary = {
        "worst_warm_ratio": worst_warm and worst_warm["warm_ratio"], "worst_warm_row": worst_warm and worst_warm["row"],
        "worst_cold_ms": worst_cold and worst_cold["cold_ms"], "worst_cold_row": worst_cold and worst_cold["row"],
        "worst_cold_ratio": worst_cold and worst_cold["cold_ratio"],
        "reference_ms": ref_warm, "reference_cold_ms": ref_cold, "reference_fragment_ms": frag_warm,
        "reference_fragment_cold_ms": median(frag.cold_ms),
        "all_pass": all(r["status"] == "pass" for r in rows),
        "missing": [r["row"] for r in rows if r["status"] == "missing"],
        "rows": rows,
        "machine": {"nproc": os.cpu_count(), "loadavg_start": load_start, "loadavg_end": load_end},
    }
    print(f"\nworst warm: {summary['worst_warm_row']} {summary['worst_warm_ratio']}×; worst cold: "
          f"{summary['worst_cold_row']} {fmt(summary['worst_cold_ms'])} ms; load average {load_start} → {load_end}")
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--app", type=Path, default=Path(__file__).resolve().parents[1] / "app.py")
    parser.add_argument("--repeat", type=int, default=1, help="fresh servers, each with one cold flip per row")
    parser.add_argument("--flips", type=int, default=6, help="warm flips per row and repeat")
    parser.add_argument("--only", default="", help="rows whose id contains this (a comma: any of these)")
    parser.add_argument("--screenshot-dir", type=Path, help="a PNG after each row's cold flip")
    parser.add_argument("--floor", action="store_true",
                        help="no app rows: the reference against 4 charts, 4 subplots and a page switch")
    args = parser.parse_args()
    if args.floor:
        load_start = os.getloadavg()
        results = run_floor(args.repeat, args.flips)
        summary = report(results, tuple(round(x, 2) for x in load_start), tuple(round(x, 2) for x in os.getloadavg()))
        print(json.dumps(summary, ensure_ascii=False))
        return
    rows = [row for row in ROWS if any(part in row.id for part in args.only.split(","))]
    if args.screenshot_dir:
        args.screenshot_dir.mkdir(parents=True, exist_ok=True)
    load_start = os.getloadavg()
    results = run(args.app.resolve(), rows, args.repeat, args.flips, args.screenshot_dir)
    summary = report(results, tuple(round(x, 2) for x in load_start), tuple(round(x, 2) for x in os.getloadavg()))
    print(json.dumps(summary, ensure_ascii=False))


if __name__ == "__main__":
    main()
