# The tool-use envs as an OpenEnv server (`tooluse serve-env`, openenv.yaml) in a container.
#
#   docker build -t tooluse-env .
#   docker run --rm -p 127.0.0.1:8000:8000 tooluse-env                 # then ws://127.0.0.1:8000/ws
#   docker run --rm -p 127.0.0.1:8000:8000 tooluse-env --tool-format json --max-sessions 256
#
# Inside the container the server listens on every interface of the container's own network; the
# host publishes it on loopback above. The server has no authentication: publish it wider only on a
# network that is yours. Arguments after the image name are `tooluse serve-env` flags.
FROM python:3.11-slim

WORKDIR /app
COPY pyproject.toml README.md ./
COPY tooluse_gym tooluse_gym
COPY agents agents
COPY tui tui
# bfcl-eval (BFCL's data, simulators and checker) and openenv-core go in without their declared
# dependencies, as `make setup` installs them (docs/integrations/openenv.md says why).
RUN pip install --no-cache-dir ".[openenv]" \
 && pip install --no-cache-dir --no-deps bfcl-eval==2026.3.23 openenv-core==0.3.0 \
 && python -c "import tooluse_gym.tasks.bfcl as b; b.load_bfcl_tasks('all')"

EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s --start-period=60s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health')"
ENTRYPOINT ["tooluse", "serve-env", "--host", "0.0.0.0", "--port", "8000"]
