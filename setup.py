"""Packaging for the image-classification TFX pipeline.

Declares the project's packages and its direct dependencies only. Exact versions live in
`constraints.txt` (the lock), which `make install` passes to pip so that an install is
reproducible and never backtracks. TFX 1.16's wheels declare `Requires-Python <3.11`, although
they run on 3.11; the Makefile therefore installs with `--ignore-requires-python`.
"""
from setuptools import find_packages, setup

setup(
    name='tfx-image-pipeline',
    version='0.1.0',
    description=('A TFX pipeline that ingests image folders, validates, trains, evaluates '
                 'and pushes.'),
    python_requires='>=3.10,<3.12',
    packages=find_packages(include=['core', 'core.*', 'pipeline', 'pipeline.*',
                                    'components', 'components.*', 'training', 'training.*',
                                    'launch', 'launch.*', 'models', 'models.*']),
    py_modules=['runner'],
    install_requires=[
        'tfx==1.16.0',
        'tensorflow==2.16.2',
        'keras>=3.6,<3.7',
        # aws: Beam's S3 file system (boto3) for s3:// and minio:// roots (docs/storage.md).
        'apache-beam[gcp,aws]==2.59.0',
        # TensorFlow's s3:// file system (tf.io.gfile, TFRecords, SavedModels); importing it
        # registers the scheme (core/storage.py).
        'tensorflow-io==0.37.1',
        'tensorflow-data-validation==1.16.1',
        'tensorflow-model-analysis==0.47.1',
        'ml-metadata==1.16.0',
        'pillow',
        'numpy<2',
        # The run report's plots (training curves, confusion matrix, class counts).
        'matplotlib',
    ],
    extras_require={
        # scikit-learn only regenerates the embedded data (data/make_digits.py); TFX pulls it
        # in anyway. ruff: `make test` lints before the tests (ruff.toml).
        'dev': ['pytest', 'pytest-xdist', 'scikit-learn', 'ruff'],
        # Compiling for and scheduling on Kubeflow Pipelines; the image installs it too. The
        # kubernetes client (also a kfp dependency) creates the trainer's TrainJob or TFJob;
        # kubeflow-trainer-api: Trainer v2's typed models, which build the TrainJob
        # (pipeline/kubeflow/jobs/trainjob.py; it needs pydantic >= 2.10).
        # kfp-kubernetes: the Kubernetes platform spec's protos (the object store's Secret for
        # every task, pipeline/kubeflow/compiler.py); 1.5.0 is the newest for protobuf 4 and kfp
        # 2.13.
        'kubeflow': ['kfp==2.13.0', 'kfp-pipeline-spec==0.6.0', 'kfp-kubernetes==1.5.0',
                     'kubernetes', 'kubeflow-trainer-api==2.3.0'],
    },
)
