"""Hand-written encoder-decoder Transformer (pure PyTorch, no Streamlit)."""
