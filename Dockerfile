# irlens: browse, diff and map Triton IR dumps.
# Works on python:3.12-slim and on Debian's python3 (CI: --build-arg BASE_IMAGE=localhost/python-base,
# see .ci/container.sh). Build with `podman build --format docker` so the HEALTHCHECK is kept.
ARG BASE_IMAGE=python:3.12-slim

# ---- build: a venv at /venv with irlens installed editable from /opt/irlens ----
FROM ${BASE_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore
RUN python3 -m venv /venv
WORKDIR /opt/irlens
# Dependencies first, against stub packages, so source edits don't re-download them.
# Editable, because the app finds templates/ and static/ next to the app/ package in the source tree.
COPY pyproject.toml README.md ./
RUN mkdir -p app parsers && touch app/__init__.py parsers/__init__.py \
 && /venv/bin/pip install -q -e '.[postgres,fast]'
COPY app/ app/
COPY parsers/ parsers/
COPY templates/ templates/
COPY static/ static/
COPY alembic.ini ./
COPY migrations/ migrations/
RUN /venv/bin/python -m compileall -q app parsers

# ---- final: same base, venv + source tree at the same paths ----
FROM ${BASE_IMAGE}
RUN useradd --system --no-create-home --home-dir /data --shell /usr/sbin/nologin irlens \
 && mkdir -p /data && chown irlens:irlens /data
COPY --from=build /venv /venv
COPY --from=build /opt/irlens /opt/irlens
# All configuration comes from IRLENS_* environment variables (IRLENS_DB_URL, IRLENS_BASE_URL, ...).
# A team server requires API tokens to upload and delete (`irlens token create NAME` inside the container).
# X-Forwarded-* headers are trusted from any peer (the proxy's address is not known in advance):
# publish the port only to your reverse proxy, or narrow IRLENS_FORWARDED_ALLOW_IPS.
ENV PATH=/venv/bin:$PATH \
    IRLENS_REQUIRE_TOKEN=true \
    IRLENS_FORWARDED_ALLOW_IPS=* \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    IRLENS_DATA_DIR=/data
WORKDIR /data
USER irlens
VOLUME /data
EXPOSE 8000
# Slim images have no curl; any non-2xx or connection error makes urlopen raise, so exit 1.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/-/health', timeout=4)"]
# Shell form so ${IRLENS_WORKERS} expands; exec so irlens gets SIGTERM directly.
CMD exec irlens serve --host 0.0.0.0 --port 8000 --proxy-headers --workers "${IRLENS_WORKERS:-1}"
