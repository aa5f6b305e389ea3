# Benchwarmers: gateway, MCP server, dashboard and scheduler in one process,
# on one port, with the data folder as a volume.
#
#   docker build -t benchwarmers .
#   docker run -p 127.0.0.1:8122:8122 -v benchwarmers-data:/data -v benchwarmers-keys:/keys benchwarmers
#
# Inside the container the server listens on 0.0.0.0, which is beyond
# loopback, so gateway calls need a key and the dashboard a login:
#   docker exec -it <container> benchwarmers key add me
#   docker exec -it <container> benchwarmers settings set login_password
# bubblewrap is installed for the suite's code tasks (Docker's default
# seccomp profile may refuse the namespaces it needs; the suite then says so).
# Endpoint keys come from BENCHWARMERS_KEY_<NAME> variables, or from llm's
# keys.json in /keys (its own volume: keys never go in the data folder).

FROM python:3.12-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.12-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /install /usr/local
RUN useradd --create-home --uid 1000 bench \
    && mkdir -p /data /keys \
    && chown bench:bench /data /keys
USER bench
ENV PYTHONUNBUFFERED=1 \
    BENCHWARMERS_HOME=/data \
    LLM_USER_PATH=/keys
VOLUME ["/data", "/keys"]
EXPOSE 8122
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8122/healthz', timeout=4)"]
CMD ["benchwarmers", "serve", "--host", "0.0.0.0", "--port", "8122"]
