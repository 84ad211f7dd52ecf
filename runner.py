"""Entry point: runs the pipeline locally, or compiles (and schedules) it for Kubeflow Pipelines.

    python runner.py --local [--data DIR] [--output DIR] [--config NAME] [--steps N] ...
    python runner.py --kubeflow --image IMAGE --pipeline-root URI [--output FILE]
                     [--endpoint URL --schedule "CRON" [--experiment NAME]]

This is the only module that defines command-line flags; pipeline/config.py turns them into
validated configs, and pipeline/local.py or pipeline/kubeflow.py run the one pipeline factory.
"""
import argparse
import sys

from components.trainer.choices import POLICIES
from pipeline import config as config_lib
from pipeline import presets

_TRAIN_FLAGS = {'steps': 'train_steps', 'batch_size': 'global_batch_size',
                'accumulation_steps': 'accumulation_steps', 'mixed_precision': 'mixed_precision',
                'warm_start': 'warm_start'}


def build_parser() -> argparse.ArgumentParser:
    train = config_lib.TrainConfig
    parser = argparse.ArgumentParser(
        description='Image-classification TFX pipeline: ingest, validate, train, evaluate, push.')
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument('--local', action='store_true',
                      help='run the pipeline on this machine with LocalDagRunner')
    mode.add_argument('--kubeflow', action='store_true',
                      help='compile the pipeline for Kubeflow Pipelines (and schedule it)')
    add = parser.add_argument
    add('--source', choices=config_lib.SOURCES, default='images', help='images: one sub-folder '
        'per class; csv: CSV files with a label column (default: %(default)s)')
    add('--data', help='input base (a URI for Kubeflow); default: the embedded digits, or the '
        'embedded wine table for --source csv')
    add('--output', default=None, help='--local: run folder for pipeline_root/, metadata.sqlite, '
        'serving/ and report.html (default: runs/default); --kubeflow: compiled file '
        '(default: pipeline.json)')
    add('--config', choices=presets.CONFIG_NAMES, default='default', help='settings to start '
        'from; smoke = a few steps, in-process Beam, no accuracy bar (default: %(default)s)')
    add('--steps', type=int, help=f'training steps (default: {train.train_steps})')
    add('--batch-size', type=int, help='global batch size over all replicas, one micro-batch '
        f'(default: {train.global_batch_size})')
    add('--accumulation-steps', type=int, help='micro-batches per optimizer update (default: 1)')
    add('--mixed-precision', choices=POLICIES, help='auto = mixed_float16 on GPU, mixed_bfloat16 '
        'on a bf16 CPU, else float32 (default: auto)')
    add('--warm-start', action='store_true', default=None,
        help='start training from the served model\'s weights (when the shapes match)')
    add('--schema', help='curated schema file to validate against, or "infer" to infer one '
        '(default: the curated schema for embedded data, else infer)')
    add('--beam-args', help='Beam pipeline args as one quoted string, e.g. '
        '--beam-args="--direct_num_workers=1" (default: "%s")'
        % ' '.join(config_lib.PipelineConfig.beam_args))
    add('--no-cache', action='store_true', help='re-run every component')
    add('--verbose', action='store_true', help='stream the run\'s log to the console too, '
        'with TFX\'s full execution and artifact dumps')
    add('--no-wait', action='store_true', help='exit (code 2) if another run is using --output, '
        'instead of waiting for it')
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
    return parser


def build_configs(args):
    """(PipelineConfig, KubeflowConfig or None); ValueError with a message on bad values."""
    if args.kubeflow and not (args.image and args.pipeline_root):
        raise ValueError('--kubeflow needs --image and --pipeline-root')
    output = args.pipeline_root if args.kubeflow else args.output or 'runs/default'
    config = presets.from_command_line(
        args.config, args.source, args.data, output, args.schema,
        {field: getattr(args, flag) for flag, field in _TRAIN_FLAGS.items()
         if getattr(args, flag) is not None},
        args.beam_args, enable_cache=not args.no_cache)
    if not args.kubeflow:
        return config, None
    return config, config_lib.KubeflowConfig(
        image=args.image, output_file=args.output or 'pipeline.json',
        trainer_cpu=args.trainer_cpu, trainer_memory_gb=args.trainer_memory,
        trainer_gpus=args.trainer_gpus, endpoint=args.endpoint, schedule=args.schedule,
        experiment=args.experiment)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config, kubeflow = build_configs(args)
    except ValueError as error:
        print(f'error: {error}', file=sys.stderr)
        return 2
    from pipeline import logs
    logs.configure(args.verbose)
    if kubeflow is None:  # heavy imports after flag parsing: --help and errors answer at once
        from pipeline import local
        return local.run(config, wait=not args.no_wait)
    from pipeline import kubeflow as kubeflow_lib
    job_file = kubeflow_lib.compile_pipeline(config, kubeflow)
    print(f'Compiled {job_file}')
    if kubeflow.endpoint:
        run = kubeflow_lib.schedule(job_file, config, kubeflow)
        print(f'Scheduled "{kubeflow.schedule}": recurring run {run.recurring_run_id}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
