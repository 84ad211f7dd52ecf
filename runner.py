"""Entry point: runs the pipeline locally (LocalDagRunner, ML Metadata in SQLite, Beam DirectRunner).

    python runner.py --local [--data DIR] [--output DIR] [--config NAME] [--steps N] ...

This is the only module that defines command-line flags; it turns them into a validated
PipelineConfig and hands that to the one pipeline factory.
"""
import argparse
import dataclasses
import os
import shlex
import sys

from components.trainer.choices import POLICIES
from pipeline import config as config_lib


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description='Image-classification TFX pipeline: ingest, validate, train, evaluate, push.')
    parser.add_argument('--local', action='store_true', required=True,
                        help='run the pipeline on this machine with LocalDagRunner')
    parser.add_argument('--source', choices=config_lib.SOURCES, default='images',
                        help='images: DATA/<class>/<image>; csv: DATA/*.csv with a "label" '
                             'column (either may sit in DATA/span-<N>/) (default: %(default)s)')
    parser.add_argument('--data', default=None,
                        help='input base (default: the embedded digits, or for csv the wine '
                             'table, under data/)')
    parser.add_argument('--output', default=os.path.join('runs', 'default'),
                        help='run folder: pipeline_root/, metadata.sqlite, serving/ and '
                             'report.html go here (default: %(default)s)')
    parser.add_argument('--config', choices=config_lib.CONFIG_NAMES, default='default',
                        help='settings to start from: "default", or "smoke" (a few steps, '
                             'in-process Beam, no accuracy bar) (default: %(default)s)')
    parser.add_argument('--steps', type=int, default=None,
                        help=f'training steps (default: {config_lib.TrainConfig.train_steps})')
    parser.add_argument('--batch-size', type=int, default=None, help='global batch size, '
                        f'over all replicas (default: {config_lib.TrainConfig.global_batch_size})')
    parser.add_argument('--accumulation-steps', type=int, default=None,
                        help='micro-batches per optimizer update (default: 1)')
    parser.add_argument('--mixed-precision', choices=POLICIES, default=None,
                        help='compute precision; auto = mixed_float16 on GPU, mixed_bfloat16 '
                             'on a bf16 CPU, else float32 (default: auto)')
    parser.add_argument('--schema', default=None,
                        help='curated schema file to validate against, or "infer" to infer one '
                             'from the data (default: the digits schema for the embedded data, '
                             'inferred otherwise)')
    parser.add_argument('--beam-args', default=None,
                        help='Beam pipeline args as one quoted string (default: "%s")'
                             % ' '.join(config_lib.PipelineConfig.beam_args))
    parser.add_argument('--no-cache', action='store_true', help='re-run every component')
    parser.add_argument('--verbose', action='store_true',
                        help='also log TFX\'s full execution and artifact dumps')
    return parser.parse_args(argv)


def build_config(args) -> config_lib.PipelineConfig:
    data = os.path.abspath(args.data or config_lib.SOURCE_DEFAULTS[args.source][0])
    if not os.path.isdir(data):
        raise ValueError(f'--data folder does not exist: {data}')
    schema = args.schema
    if schema is None:
        schema = config_lib.default_schema(args.source, data)
    elif schema == 'infer':
        schema = None
    else:
        schema = os.path.abspath(schema)
    base = config_lib.named_config(args.config, data, args.output, args.source)
    train = {}
    if args.steps is not None:
        train.update(train_steps=args.steps,
                     warmup_steps=min(base.train.warmup_steps, args.steps - 1))
    for flag, field in (('batch_size', 'global_batch_size'),
                        ('accumulation_steps', 'accumulation_steps'),
                        ('mixed_precision', 'mixed_precision')):
        if getattr(args, flag) is not None:
            train[field] = getattr(args, flag)
    overrides = dict(output_dir=args.output, schema_path=schema,
                     train=dataclasses.replace(base.train, **train),
                     ingest=dataclasses.replace(base.ingest, data_dir=data),
                     enable_cache=not args.no_cache)
    if args.beam_args is not None:
        overrides['beam_args'] = tuple(shlex.split(args.beam_args))
    return dataclasses.replace(base, **overrides)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        config = build_config(args)
    except ValueError as error:
        print(f'error: {error}', file=sys.stderr)
        return 2
    from pipeline import logs
    logs.configure(args.verbose)
    # Heavy imports after flag parsing, so --help and flag errors answer at once.
    from tfx import v1 as tfx
    from components.gate.executor import DataAnomaliesError
    from components.ingest.executor import IngestionError
    from pipeline import pipeline as pipeline_lib
    from pipeline import summary as summary_lib
    from pipeline.report import page as report_lib

    os.makedirs(config.output_dir, exist_ok=True)
    stopped = None
    try:
        tfx.orchestration.LocalDagRunner().run(pipeline_lib.create_pipeline(config))
    except (DataAnomaliesError, IngestionError) as error:
        stopped = error  # a data problem, explained in the message: no traceback needed
    summary = summary_lib.read_latest_run(config.metadata_path, config.name)
    if summary is not None:
        print(summary_lib.format_summary(summary))
        print(f'Report: {report_lib.write_report(summary, config.output_dir)}')
    if stopped is not None:
        print(f'\nRun stopped: {stopped}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
