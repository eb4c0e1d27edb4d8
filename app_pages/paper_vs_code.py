"""Paper vs this code: where implementations differ from the paper, one row each, with a number measured live.

Each row is an expander (readable at 390 px): the paper, this code, common hand-written versions, and the live
number or demonstration that explain/paper_vs_code.py computes. ``?paper_vs_code_row=<key>`` (a key of
:data:`explain.paper_vs_code.ROW_KEYS`) opens that row, so other pages can link to it.
"""
import streamlit as st

from explain.paper_vs_code import (DEMO_HEADS, DEMO_KEYS, DEMO_PADS, LAYER_D, ROW_KEYS, TRAINING_DEFAULTS, ModelFacts,
                                   maps_side_by_side, mask_polarity_demo, masked_row_demo, model_facts,
                                   other_token_shares, shared_layer_demo, smoothing_targets)
from explain.paper_card import of_checkpoint
from figures.labels import plain_number, readable_number
from ui.cache import computed
from ui.exercise_panel import exercise_panel
from ui.i18n import t
from ui.nav import link
from ui.page_errors import fragment
from ui.paper_card import paper_card
from ui.scaffold import page
from ui.tour import stop
from ui.url_state import ChoiceParam, bind

ROW = ChoiceParam("paper_vs_code_row", default=ROW_KEYS[0], choices=ROW_KEYS)


def r(row: str, name: str, **fmt) -> str:
    """The text ``name`` of row ``row``."""
    return t(f"paper_vs_code.rows.{row}.{name}", **fmt)


def num(value: int) -> str:
    return f"{value:,}"


def share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}"


def yes_no(value: bool) -> str:
    return t("paper_vs_code.yes") if value else t("paper_vs_code.no")


def no_model() -> None:
    st.caption(t("paper_vs_code.no_model"))


# ------------------------------------------------------------------ the live part of each row


def norm_live(facts: ModelFacts | None) -> None:
    if facts is None:
        no_model()
    elif facts.norm_first:
        st.markdown(r("norm", "live_pre", final=facts.final_norms, params=num(facts.final_norm_params)))
    else:
        st.markdown(r("norm", "live_post", final=facts.final_norms))
    link(stop("training"), r("norm", "link"), icon=":material/model_training:")


def w_o_live(facts: ModelFacts | None) -> None:
    if facts is None:
        return no_model()
    st.markdown(r("w_o", "live", d=facts.d_model, params=num(facts.out_proj_params), n=facts.n_attentions,
                  total=num(facts.out_proj_total), all=num(facts.total_params),
                  share=share(facts.out_proj_total, facts.total_params)))


def embed_scale_live(facts: ModelFacts | None) -> None:
    if facts is None:
        return no_model()
    st.markdown(r("embed_scale", "live", d=facts.d_model, scale=f"{facts.embed_scale:.4g}", rms=f"{facts.embed_rms:.3f}",
                  scaled=f"{facts.scaled_rms:.3f}", pe=f"{facts.position_rms:.3f}"))


def shared_embeddings_live(facts: ModelFacts | None) -> None:
    if facts is None:
        return no_model()
    row = "shared_embeddings"
    st.markdown(r(row, "live", src=facts.src_vocab, tgt=facts.tgt_vocab, d=facts.d_model,
                  out_tied=yes_no(facts.shares_output), src_tied=yes_no(facts.shares_src_tgt),
                  out_saving=num(facts.output_tie_saving)))
    if facts.same_vocab:
        both = facts.output_tie_saving + facts.src_tgt_tie_saving
        st.markdown(r(row, "live_same", src_saving=num(facts.src_tgt_tie_saving), both=num(both),
                      all=num(facts.total_params), share=share(both, facts.total_params)))
    else:
        st.markdown(r(row, "live_different", src=facts.src_vocab, tgt=facts.tgt_vocab, all=num(facts.total_params),
                      share=share(facts.output_tie_saving, facts.total_params)))


def mask_polarity_live(_facts) -> None:
    row = "mask_polarity"
    demo = computed(mask_polarity_demo)
    st.markdown(r(row, "live", s=DEMO_KEYS, pads=DEMO_PADS, inverted=plain_number(demo.diff_inverted),
                  sdpa=plain_number(demo.diff_sdpa), uninverted=f"{demo.diff_uninverted:.3f}"))
    columns = {name: r(row, f"col_{name}") for name in ("key", "mask", "torch", "inverted", "uninverted")}
    keys = [f"k{j + 1}" + (" <pad>" if pad else "") for j, pad in enumerate(demo.key_padding_mask)]
    st.dataframe(demo.table(columns, keys), hide_index=True)
    st.caption(r(row, "caption", heads=DEMO_HEADS))


def neg_inf_live(_facts) -> None:
    row = "neg_inf"
    demo = computed(masked_row_demo)
    st.markdown(r(row, "live", **{short: r(row, demo.outcome(method)) for short, method in
                                  (("inf", "with_inf"), ("big", "with_big"), ("ours", "this_code"))}))
    names = {name: r(row, name) for name in ("with_inf", "with_big", "this_code")}
    st.dataframe(demo.table(names, (r(row, "row_1"), r(row, "row_2"))), hide_index=True)


def label_smoothing_live(facts: ModelFacts | None) -> None:
    row = "label_smoothing"
    demo = computed(smoothing_targets)
    st.markdown(r(row, "live", v=demo.vocab_size, target=demo.target, pad=demo.pad_id, eps=f"{demo.epsilon:g}"))
    columns = {name: r(row, f"col_{name}") for name in ("token", "this_code", "over_all")}
    tokens = [f"{i}" + (" <pad>" if i == demo.pad_id else "") + (" ✓" if i == demo.target else "")
              for i in range(demo.vocab_size)]
    st.dataframe(demo.table(columns, tokens), hide_index=True)
    if facts is not None:
        ours, over_all = other_token_shares(facts.tgt_vocab, demo.epsilon, facts.pad_id)
        st.markdown(r(row, "live_model", v=facts.tgt_vocab, ours=f"{ours:.4g}", all=f"{over_all:.4g}"))
    link(stop("output_and_loss"), r(row, "link"), icon=":material/functions:",
         view={"output_and_loss_view": "smoothing"})


def dropout_live(facts: ModelFacts | None) -> None:
    row = "dropout"
    if facts is None:
        no_model()
    else:
        sites = facts.dropout_sites
        st.markdown(r(row, "live", emb=sites["embeddings"], sub=sites["sublayers"], ffn=sites["ffn_hidden"],
                      att=sites["attention_weights"], p=f"{facts.dropout_p:g}",
                      mode=r(row, "mode_train" if facts.training_mode else "mode_eval")))
        st.markdown(r(row, "trained", p=f"{facts.trained_dropout:g}") if facts.trained_dropout is not None
                    else r(row, "trained_unknown"))
    st.markdown(r(row, "page", p=f"{TRAINING_DEFAULTS['dropout']:g}"))
    link(stop("training"), r(row, "link"), icon=":material/model_training:")


def shared_layer_live(facts: ModelFacts | None) -> None:
    row = "shared_layer"
    demo = computed(shared_layer_demo)
    st.markdown(r(row, "live", d=LAYER_D, layer=num(demo.layer_params), n=demo.n, shared=num(demo.shared_params),
                  same=yes_no(demo.same_object), separate=num(demo.separate_params)))
    st.markdown(r(row, "maps", shared_diffs=" · ".join(readable_number(x) for x in demo.shared_diffs),
                  separate_diffs=" · ".join(readable_number(x) for x in demo.separate_diffs)))
    for name, maps in (("shared_name", demo.shared_maps), ("separate_name", demo.separate_maps)):
        st.markdown(f"**{r(row, name)}**")  # text, not tables: six tables would make every pick slow to draw
        st.code(maps_side_by_side(maps, [r(row, "layer_name", n=n + 1) for n in range(len(maps))]), language=None)
    st.caption(r(row, "map_caption"))
    if facts is None:
        no_model()
    else:
        st.markdown(r(row, "model", enc=facts.distinct_encoder_layers, dec=facts.distinct_decoder_layers,
                      n=facts.n_layers))


LIVE = {"norm": norm_live, "w_o": w_o_live, "embed_scale": embed_scale_live,
        "shared_embeddings": shared_embeddings_live, "mask_polarity": mask_polarity_live, "neg_inf": neg_inf_live,
        "label_smoothing": label_smoothing_live, "dropout": dropout_live, "shared_layer": shared_layer_live}


@fragment
def rows(facts: ModelFacts | None) -> None:
    """The row picker and every row, the picked one open: a pick reruns only this."""
    opened = st.selectbox(t("paper_vs_code.pick"), ROW_KEYS, key=bind(ROW, key="paper_vs_code.row"),
                          format_func=lambda key: r(key, "title"), help=t("paper_vs_code.pick_help"))
    for key in ROW_KEYS:
        # The open row's key differs from the closed one's: a browser keeps an expander's open/closed state
        # across reruns, so the row a new pick names is drawn as a new expander, which opens.
        with st.expander(r(key, "title"), expanded=key == opened,
                         key=f"paper_vs_code_row_{key}" + ("_open" if key == opened else "")):
            fmt = {"fill": f"{computed(masked_row_demo).fill_value:.4g}"} if key == "neg_inf" else {}
            for part in ("paper", "code", "common"):
                st.markdown(f"**{t(f'paper_vs_code.label.{part}')}** · {r(key, part, **fmt)}")
            st.markdown(f"**{t('paper_vs_code.label.live')}**")
            LIVE[key](facts)


with page("paper_vs_code") as ckpt:
    if ckpt is not None:
        paper_card(computed(of_checkpoint, model=ckpt), caption_key="common.paper_card.caption_model",
                   key="paper_vs_code_card")
    rows(computed(model_facts, model=ckpt) if ckpt is not None else None)
    exercise_panel("paper_vs_code")
