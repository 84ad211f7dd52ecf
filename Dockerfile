# The image every task of the compiled Kubeflow pipeline runs (`runner.py --kubeflow --image`).
# Each task's command is `python -m pipeline.kubeflow.entrypoint` (see pipeline/kubeflow/compiler.py),
# so the image needs only Python 3.11 with the project installed against the lock CI uses.
# Build and push: see docs/kubeflow.md, "Container image". (No Docker engine where this was
# written: the file has not been built there.)
FROM python:3.11-slim-bookworm

# The checkout lives here: the embedded data and schema, and setup.py for Beam's workers, are
# named by this path in the compiled spec (KubeflowConfig.image_workdir).
WORKDIR /pipeline
COPY . .

# Exactly what `make install` does, minus the editable mode and the dev tools: the lock as
# constraints. TFX 1.16 declares Requires-Python <3.11 but runs on 3.11 (docs/install.md,
# "Supported Pythons"). The last line fails the build if the task entry point, or the training
# workers' (launch.worker: local processes and TFJob pods), cannot import our code.
RUN pip install --no-cache-dir --disable-pip-version-check 'pip==24.2' \
 && pip install --no-cache-dir --disable-pip-version-check --ignore-requires-python \
        -c constraints.txt '.[kubeflow]' \
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
