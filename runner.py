"""Entry point: runs the pipeline locally, or compiles (and schedules) it for Kubeflow Pipelines.

    python runner.py --local [--data DIR] [--output DIR] [--steps N] [--schema FILE|infer]
    python runner.py --kubeflow --image IMAGE --pipeline-root URI [--output FILE]
                     [--endpoint URL --schedule "CRON" [--experiment NAME]]

This is the only module that defines command-line flags; it turns them into validated configs
and hands them to pipeline/local.py or pipeline/kubeflow.py, which use the one pipeline factory.
"""
import argparse
import dataclasses
import os
import shlex
import sys

from pipeline import config as config_lib


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description='Image-classification TFX pipeline: ingest, validate, train, evaluate, push.')
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument('--local', action='store_true',
                      help='run the pipeline on this machine with LocalDagRunner')
    mode.add_argument('--kubeflow', action='store_true',
                      help='compile the pipeline for Kubeflow Pipelines (and schedule it)')
    add = parser.add_argument
    add('--data', default=config_lib.DEFAULT_DATA, help='input base: one sub-folder per class, '
        'holding images; a URI for Kubeflow (default: the embedded digits, %(default)s)')
    add('--output', default=None, help='--local: run folder for pipeline_root/, metadata.sqlite '
        'and serving/ (default: runs/default); --kubeflow: compiled file (default: pipeline.json)')
    add('--steps', type=int, default=None,
        help=f'training steps (default: {config_lib.TrainConfig.train_steps})')
    add('--schema', default=None, help='curated schema file to validate against, or "infer" to '
        'infer one from the data (default: the digits schema for the embedded data, else infer)')
    add('--beam-args', default=None, help='Beam pipeline args as one quoted string (default: '
        '"%s")' % ' '.join(config_lib.PipelineConfig.beam_args))
    add('--no-cache', action='store_true', help='re-run every component')
    add('--verbose', action='store_true', help='also log TFX\'s full execution and artifact dumps')
    add = parser.add_argument_group('Kubeflow (with --kubeflow)').add_argument
    add('--image', help='container image of every task (see Dockerfile)')
    add('--pipeline-root', help='run root the cluster writes (gs://...): artifacts under '
        'pipeline_root/, pushed models under serving/')
    kf = config_lib.KubeflowConfig
    add('--trainer-cpu', type=float, default=kf.trainer_cpu, help='%(default)s cores')
    add('--trainer-memory', type=float, default=kf.trainer_memory_gb, help='%(default)s GB')
    add('--trainer-gpus', type=int, default=kf.trainer_gpus, help='%(default)s GPUs')
    add('--endpoint', help='KFP API URL: upload the pipeline and schedule it')
    add('--schedule', help='six-field cron, e.g. "0 0 3 * * *" (03:00 daily)')
    add('--experiment', default=kf.experiment, help='KFP experiment (default: %(default)s)')
    return parser.parse_args(argv)


def build_config(args) -> config_lib.PipelineConfig:
    data = args.data if config_lib.is_uri(args.data) else os.path.abspath(args.data)
    if not config_lib.is_uri(data) and not os.path.isdir(data):
        raise ValueError(f'--data folder does not exist: {data}')
    schema = args.schema
    if schema is None:
        uses_default_data = data == os.path.abspath(config_lib.DEFAULT_DATA)
        schema = config_lib.DIGITS_SCHEMA if uses_default_data else None
    elif schema == 'infer':
        schema = None
    elif not config_lib.is_uri(schema):
        schema = os.path.abspath(schema)
    if args.kubeflow and not args.pipeline_root:
        raise ValueError('--kubeflow needs --image and --pipeline-root')
    base = config_lib.default_config()
    train = base.train if args.steps is None else dataclasses.replace(
        base.train, train_steps=args.steps, warmup_steps=min(base.train.warmup_steps, args.steps - 1))
    output = args.pipeline_root if args.kubeflow else args.output or os.path.join('runs', 'default')
    overrides = dict(output_dir=output, schema_path=schema, train=train,
                     ingest=dataclasses.replace(base.ingest, data_dir=data),
                     enable_cache=not args.no_cache)
    if args.beam_args is not None:
        overrides['beam_args'] = tuple(shlex.split(args.beam_args))
    return dataclasses.replace(base, **overrides)


def build_kubeflow_config(args) -> config_lib.KubeflowConfig:
    return config_lib.KubeflowConfig(
        image=args.image or '', output_file=args.output or 'pipeline.json',
        trainer_cpu=args.trainer_cpu, trainer_memory_gb=args.trainer_memory,
        trainer_gpus=args.trainer_gpus, endpoint=args.endpoint, schedule=args.schedule,
        experiment=args.experiment)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        config = build_config(args)
        kubeflow = build_kubeflow_config(args) if args.kubeflow else None
    except ValueError as error:
        print(f'error: {error}', file=sys.stderr)
        return 2
    from pipeline import logs
    logs.configure(args.verbose)
    if kubeflow is None:  # heavy imports after flag parsing: --help and errors answer at once
        from pipeline import local
        return local.run(config)
    from pipeline import kubeflow as kubeflow_lib
    job_file = kubeflow_lib.compile_pipeline(config, kubeflow)
    print(f'Compiled {job_file}')
    if kubeflow.endpoint:
        run = kubeflow_lib.schedule(job_file, config, kubeflow)
        print(f'Scheduled "{kubeflow.schedule}": recurring run {run.recurring_run_id}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
