# The image docker-compose.yml builds for `mint api` and `mint worker`.
FROM python:3.11-slim
WORKDIR /app
# Only what the package is built from: never a local data dir (`.mint` holds keys), a venv or an `.env`.
COPY pyproject.toml README.md ./
COPY api ./api
COPY activities ./activities
COPY contracts ./contracts
COPY expressions ./expressions
COPY infra ./infra
COPY process ./process
COPY services ./services
COPY workflows ./workflows
RUN pip install --no-cache-dir .
# Mint's processes run as an unprivileged user (a numeric one, so that Kubernetes' runAsNonRoot can check it).
# The installed code stays root's and read-only to it; what it writes (model and tokenizer caches) goes to
# its own home.
RUN useradd --create-home --home-dir /home/mint --uid 10001 --user-group --shell /usr/sbin/nologin mint
USER 10001:10001
ENV HOME=/home/mint
WORKDIR /home/mint
EXPOSE 8080
CMD ["mint", "api"]
