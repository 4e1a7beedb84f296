# syntax=docker/dockerfile:1
# The tutor bot. Build: docker build -t srs-tutor .   (see README: Deploying)

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /venv
# torch from PyTorch's CPU index: PyPI's default Linux wheel pulls in CUDA (GBs).
# GPU image: --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
RUN /venv/bin/pip install --index-url "$TORCH_INDEX" torch==2.13.0
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot bot
COPY content content
COPY scheduler scheduler
RUN /venv/bin/pip install .

FROM python:3.11-slim
# libseccomp for the sandbox's syscall filter.
RUN apt-get update && apt-get install -y --no-install-recommends libseccomp2 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin tutor \
    && mkdir -p /data /sock && chown tutor /data
COPY --from=build /venv /venv
# The bot runs as `tutor` and cannot jail code itself: code cards need the sandbox
# service (compose.yaml), so SANDBOX is off unless SANDBOX_ADDRESS points at one.
ENV PATH=/venv/bin:$PATH \
    DATABASE_URL=sqlite:////data/tutor.db \
    METRICS_HOST=0.0.0.0 METRICS_PORT=8080 \
    SANDBOX=false
VOLUME /data
WORKDIR /data
USER tutor
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=90s --retries=3 \
    CMD python -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8080/healthz', timeout=4)"
CMD ["tutor", "run"]
