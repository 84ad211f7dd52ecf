# The image every task of the compiled Kubeflow pipeline runs (`runner.py --kubeflow --image`).
# Each task's command is `python -m pipeline.kubeflow.entrypoint` (see pipeline/kubeflow/compiler.py),
# so the image needs only Python 3.11 with the project installed against the lock CI uses.
# Build and push: see docs/kubeflow.md, "Container image". Built and run here with podman (runc)
# on a base made from Debian's packages, since no image registry is reachable here
# (tools/cluster/image.py); tests/test_dockerfile.py runs the result.
#
# BASE: anything that looks like python:3.11-slim to the steps below: `python` and `pip` of
# Python 3.11 on the PATH with its headers, CA certificates, apt, useradd. The default is what
# users build on.
ARG BASE=python:3.11-slim-bookworm

# pyfarmhash (TFDV's) publishes no wheel for Python 3.11, only C++ sources, and python:3.11-slim
# has no compiler: its wheel is built in this stage, so the image gets the wheel and not g++.
FROM ${BASE} AS wheels
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends g++
COPY constraints.txt /
RUN pip install --no-cache-dir --disable-pip-version-check 'pip==24.2' \
 && pip wheel --no-cache-dir --disable-pip-version-check --no-deps -c /constraints.txt \
        --wheel-dir /wheels pyfarmhash

FROM ${BASE}

# The checkout lives here: the embedded data and schema, and setup.py for Beam's workers, are
# named by this path in the compiled spec (KubeflowConfig.image_workdir).
WORKDIR /pipeline

# The dependencies first, from the lock and setup.py alone, so that a change to the code reuses
# this layer (the dependencies are most of the image and of its build time). The lock that
# `make install` installs, minus the editable mode and the dev tools, by pip (make install's uv
# would be one more download here; pip needs --ignore-requires-python for TFX, uv no flag).
# TFX 1.16 declares Requires-Python <3.11 but runs on 3.11 (docs/install.md, "Supported
# Pythons"). With setup.py alone no package of ours is found: this installs its dependencies
# and an empty distribution of the project, which the next step replaces.
COPY --from=wheels /wheels /tmp/wheels
COPY setup.py constraints.txt ./
RUN pip install --no-cache-dir --disable-pip-version-check 'pip==24.2' \
 && pip install --no-cache-dir --disable-pip-version-check --ignore-requires-python \
        --find-links /tmp/wheels -c constraints.txt '.[kubeflow]'

# The checkout (without what no task reads: .dockerignore), and the project installed from it
# (its dependencies are those just installed: the same setup.py). The last line fails the build
# if the task entry point, or the training workers' (launch.worker: local processes and TFJob
# pods), cannot import our code.
COPY . .
RUN pip install --no-cache-dir --disable-pip-version-check --ignore-requires-python \
        --no-deps -c constraints.txt . \
 && cd / && python -c "import components.baseline.executor, pipeline.kubeflow.entrypoint, \
        launch.worker, training.job"

# Tasks run as a numeric non-root user: a namespace with the "restricted" Pod Security Standard
# refuses root containers, and runAsNonRoot can only verify a numeric UID. It gets a writable
# HOME (kfp's context file, Keras and TF caches) and owns the checkout, where Beam's staging of
# setup.py writes its sdist and egg-info; /tmp is already writable by all (mode 1777).
RUN useradd --uid 1000 --user-group --create-home --home-dir /home/pipeline pipeline \
 && chown -R 1000:1000 /pipeline
ENV HOME=/home/pipeline
USER 1000:1000
