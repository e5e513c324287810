# Signoff's image: the locked dependencies (requirements/serve.txt, hashes checked) and
# Signoff itself installed as a wheel into /opt/signoff, run as an unprivileged user.
# `docker build -t signoff .`; the default command is `signoff serve`; `signoff worker`
# and `signoff migrate` run from the same image (compose.yaml, docs/deployment.md).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python -m venv /opt/signoff
COPY requirements/build.txt requirements/serve.txt /src/requirements/
RUN /opt/signoff/bin/pip install --require-hashes -r /src/requirements/build.txt \
 && /opt/signoff/bin/pip install --require-hashes -r /src/requirements/serve.txt
COPY pyproject.toml README.md /src/
COPY signoff /src/signoff
# Not editable: the package (static files and migrations included) is copied into the
# venv, and the build tools leave with this stage.
RUN /opt/signoff/bin/pip install --no-deps --no-build-isolation /src \
 && /opt/signoff/bin/pip uninstall --yes setuptools wheel

FROM ${PYTHON_IMAGE}
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /var/lib/signoff signoff
COPY --from=build /opt/signoff /opt/signoff
ENV PATH=/opt/signoff/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    SIGNOFF_HOST=0.0.0.0 \
    SIGNOFF_PORT=8000 \
    SIGNOFF_LOG_FORMAT=json
# Without SIGNOFF_DATABASE_URL, SIGNOFF_SECRET_KEY and SIGNOFF_AUDIT_SIGNING_KEY, the
# SQLite file and the key files are created here (mount a volume to keep them).
WORKDIR /var/lib/signoff
USER signoff
EXPOSE 8000
# /readyz answers 200 once the database answers (503 while it is unreachable or locked).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/readyz' % os.environ.get('SIGNOFF_PORT', '8000'), timeout=4)"]
CMD ["signoff", "serve"]
