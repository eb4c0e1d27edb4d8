# Transformer Playground: docker build -t transformer-playground . && docker run -p 8501:8501 transformer-playground
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# Two of .streamlit/config.toml's settings, repeated so that a mounted or edited config cannot drop
# them: visitors see no tracebacks (one translated sentence; the traceback goes to the container's
# log), and a connection that dies silently is noticed, and its run stopped, within 5-10 s. To see
# whole tracebacks while debugging: docker run -e STREAMLIT_CLIENT_SHOW_ERROR_DETAILS=full ...
ENV STREAMLIT_CLIENT_SHOW_ERROR_DETAILS=none \
    STREAMLIT_SERVER_WEBSOCKET_PING_INTERVAL=5

WORKDIR /app

# The CPU build of torch (2.13.0+cpu satisfies torch==2.13.0 and is preferred over the CUDA one).
COPY requirements.txt .
RUN pip install --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt

RUN useradd --create-home --uid 10001 app
# Only what the app needs at run time (no tests, no local virtualenvs or artifacts).
COPY --chown=app:app .streamlit/ .streamlit/
COPY --chown=app:app app.py ./
COPY --chown=app:app app_pages/ app_pages/
COPY --chown=app:app ui/ ui/
COPY --chown=app:app explain/ explain/
COPY --chown=app:app figures/ figures/
COPY --chown=app:app model/ model/
COPY --chown=app:app assets/ assets/
USER app

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4)"

CMD ["streamlit", "run", "app.py", "--server.address=0.0.0.0", "--server.port=8501"]
