"""Hand-written encoder-decoder Transformer (pure PyTorch, never imports Streamlit).

Masks are bool everywhere with **True = may attend**.
"""
from model.attention import AttentionDetails, MultiHeadAttention, fast_attention, masked_softmax, scaled_dot_product_attention
from model.config import TransformerConfig
from model.device import pick_device
from model.loss import label_smoothed_cross_entropy
from model.masks import decoder_mask, look_ahead_mask, padding_mask
from model.positional import positional_encoding, rope_rotate, wavelength
from model.schedule import noam_lr, noam_scheduler
from model.transformer import ATTENTION_KINDS, EncoderOutput, ForwardOptions, Transformer, TransformerOutput

__all__ = [
    "ATTENTION_KINDS", "AttentionDetails", "EncoderOutput", "ForwardOptions", "MultiHeadAttention", "Transformer",
    "TransformerConfig", "TransformerOutput", "decoder_mask", "fast_attention", "label_smoothed_cross_entropy",
    "look_ahead_mask", "masked_softmax", "noam_lr", "noam_scheduler", "padding_mask", "pick_device",
    "positional_encoding", "rope_rotate", "scaled_dot_product_attention", "wavelength",
]
