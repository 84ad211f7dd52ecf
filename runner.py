"""Entry point: runs the pipeline locally, or compiles (and schedules) it for Kubeflow Pipelines.

    python runner.py --local [--data DIR] [--output DIR] [--config-file FILE] [--steps N] ...
    python runner.py --rollback VERSION [--output DIR]
    python runner.py --score DIR [--version N] [--output DIR]
    python runner.py --kubeflow --image IMAGE --pipeline-root URI [--output FILE]
                     [--endpoint URL --schedule "CRON" [--experiment NAME]
                      [--namespace NS] [--token-file FILE | --token-env VAR |
                       --service-account-token]]

This is the only module that defines command-line flags; pipeline/presets.py turns them (over a
TOML config file) into validated configs, and pipeline/local.py or pipeline/kubeflow.py run the
one pipeline factory.
"""
import argparse
import dataclasses
import shlex
import sys
import typing

from components.common import serving_labels
from pipeline import config as config_lib
from pipeline import presets
from training import params as params_lib

EPILOG = """examples:
  python runner.py --local
      train on the embedded digits and serve the model from runs/default/serving
  python runner.py --local --data ~/photos --model mobilenet_v3_small --epochs 5
      your own images (one folder per class) on a standard architecture
  python runner.py --kubeflow --config-file cluster.toml --schedule "0 0 3 * * *"
      compile for Kubeflow and keep a daily 03:00 run ([kubeflow] image, pipeline_root,
      endpoint in cluster.toml; see config.example.toml)

Every flag beside its config-file key and default: docs/cli.md."""
# Kubeflow-only flags: runner.py refuses them without --kubeflow, naming the flag.
KUBEFLOW_GROUPS = ('Kubeflow', 'scheduling')
# Defaults that depend on the source (pipeline/config.py SOURCE_DEFAULTS): TrainParams' None.
DEFAULT_TEXTS = {'model_builder': '; '.join(f'{source}: {builder}' for source, (_, _, builder)
                                            in config_lib.SOURCE_DEFAULTS.items())}
# TrainParams fields that parse with one of these instead of their type (training/params.py).
PARSERS = {'size': presets.parse_size, 'minutes': presets.parse_minutes}


def add_params(group, cls, default_texts=None) -> None:
    """One flag per field of the dataclass `cls` that names one in its metadata: type, choices
    and help from the field, "(default: ...)" from its default (params_lib.default_text)."""
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        meta = field.metadata
        if not meta.get('flag'):
            continue
        default = (default_texts or {}).get(field.name) or params_lib.default_text(field)
        options = dict(help=f"{meta['help']} (default: {default})".replace('%', '%%'))
        hint = hints[field.name]
        if typing.get_origin(hint) is typing.Union:  # Optional[X]
            hint = next(a for a in typing.get_args(hint) if a is not type(None))
        if hint is bool:  # given = on; None = not given (the config file or default decides)
            options.update(action='store_true', default=None)
        else:
            options.update(type=PARSERS[meta['parse']] if 'parse' in meta else hint,
                           **{k: meta[k] for k in ('metavar', 'choices') if k in meta})
        group.add_argument(meta['flag'], **options)


class _Parser(argparse.ArgumentParser):
    """Needs one mode: --local, --kubeflow, --rollback or --score (which --kubeflow compiles)."""

    def parse_known_args(self, args=None, namespace=None):
        known, rest = super().parse_known_args(args, namespace)
        decision = known.promote is not None or known.reject is not None
        if not (known.local or known.kubeflow or known.rollback is not None or known.score
                or decision):
            self.error('one of the arguments --local --kubeflow --rollback --promote --reject '
                       '--score is required')
        if known.reason is not None and known.reject is None:
            self.error('--reason goes with --reject')
        if known.score and (known.local or known.rollback is not None):
            self.error('--score runs on its own, or with --kubeflow to compile the scoring '
                       'pipeline')
        if known.version is not None and not known.score:
            self.error('--version goes with --score')
        return known, rest


def build_parser() -> argparse.ArgumentParser:
    i, kf = config_lib.IngestConfig, config_lib.KubeflowConfig
    parser = _Parser(
        description='Image and CSV classification TFX pipeline: ingest, validate, train, '
        'evaluate, push; batch scoring.\nFlags override the config file (--config-file), '
        'which overrides the preset (--config).', epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument_group('data').add_argument
    add('--source', choices=config_lib.SOURCES, help='images: one sub-folder per class; csv: CSV '
        'files with a header and a label column; parquet: Parquet files with a label column '
        f'(docs/data.md) (default: {i.source})')
    add('--data', help='input base (a URI for Kubeflow); may hold span-<N>/ folders (default: '
        'the embedded digits, or the embedded wine table for --source csv; needed for parquet)')
    add('--schema', help='curated schema file, or "infer" (default: curated for embedded data, '
        'else infer)')
    add('--label-column', metavar='NAME', help='csv, parquet: the column holding the class '
        f'(default: {i.label_column})')
    add('--window', type=int, metavar='N', help='with span-<N>/ folders: train and evaluate on '
        'the last N spans; spans ingested before are not converted again (default: '
        f'{i.window})')
    add('--max-rejected-fraction', type=float, metavar='F', help='stop when more than this share '
        f'of records is rejected (default: {i.max_rejected_fraction})')
    add('--encoding', metavar='CODEC', help='csv: encoding of files without a byte-order mark, '
        f'e.g. latin-1, cp1252 (default: {i.encoding}; UTF-8 and UTF-16 BOMs are honoured)')
    add('--max-image-pixels', type=int, metavar='N', help='quarantine images with more pixels '
        f'(as too_large), judged from the header (default: {i.max_image_pixels:,})')
    add('--convert-formats', type=presets.parse_names, metavar='FMT,...', help='image formats '
        'converted to PNG even when that loses something, e.g. TIFF,WEBP (default: none; '
        'lossless conversions always happen)')
    add('--max-csv-record-bytes', type=int, metavar='N', help='quarantine longer CSV records '
        f'(as too_large) (default: {i.max_csv_record_bytes:,})')
    add_params(parser.add_argument_group('training'), params_lib.TrainParams, DEFAULT_TEXTS)
    add = parser.add_argument_group('evaluation and push').add_argument
    add('--min-accuracy', type=float, help='overall eval accuracy needed to push (default: '
        f'{config_lib.EvalConfig.min_accuracy})')
    add('--push-mode', choices=serving_labels.MODES, help='auto: a blessed model becomes the '
        'stable version clients get; candidate: it goes out as the canary beside stable until '
        '--promote or --reject (the first one becomes stable) (default: '
        f'{config_lib.PushConfig.mode})')
    add('--max-label-drift', type=float, metavar='L', help='refuse to push when the new '
        "span's class mix is further than this L-infinity distance from the served model's "
        f'training data; 1 = off (default: {config_lib.DriftConfig.max_label_drift}; other '
        'drift bars: [drift] in the config file)')
    group = parser.add_argument_group('execution')
    mode = group.add_mutually_exclusive_group()  # or --score (_Parser checks)
    mode.add_argument('--local', action='store_true', help='run on this machine (LocalDagRunner)')
    mode.add_argument('--kubeflow', action='store_true',
                      help='compile for Kubeflow Pipelines (and schedule it)')
    mode.add_argument('--rollback', type=int, metavar='VERSION', help='serve a kept version '
                      'of <--output>/serving again, as a new highest version, and exit')
    mode.add_argument('--promote', type=int, metavar='VERSION', help='make a kept version '
                      'stable (the version clients get) in the serving folder\'s models.config, '
                      'and exit')
    mode.add_argument('--reject', type=int, metavar='VERSION', help='drop the canary label of '
                      'VERSION (--reason says why; recorded in <--output>/approvals.jsonl), '
                      'and exit')
    add = group.add_argument
    add('--config', metavar='PRESET', choices=presets.CONFIG_NAMES, default='default',
        help='built-in settings to start from, not a file: default, or smoke = a few steps, '
        'in-process Beam, no accuracy bar (default: %(default)s)')
    add('--config-file', metavar='FILE', help='TOML settings over the preset, in tables that '
        'mirror the config (see config.example.toml); flags override it')
    add('--output', help='--local: the run folder; --kubeflow: the compiled file (default: '
        f'{config_lib.PipelineConfig.output_dir}; with --kubeflow: '
        f'{config_lib.KubeflowConfig.output_file})')
    add('--name', help='pipeline name: its ML Metadata context; on Kubeflow the pipeline and '
        'its recurring run, which a second --schedule of the same name replaces (default: '
        f'{config_lib.PipelineConfig.name})')
    add('--beam-args', type=shlex.split, help='Beam pipeline args as one quoted string, e.g. '
        '--beam-args="--direct_num_workers=1" (default: in-process for small inputs, one '
        'DirectRunner worker per core for large ones)')
    add('--reason', metavar='TEXT', help='with --reject: why, for the approvals record')
    add('--no-cache', action='store_true', help='re-run every component')
    add('--verbose', action='store_true', help='stream the full log to the console too')
    add('--no-wait', action='store_true', help='exit (code 2) if another run is using --output, '
        'instead of waiting for it')
    add('--keep-runs', type=int, metavar='K', help='after each run (with --kubeflow: in the '
        'Pusher\'s task, every task then uncached), delete the artifacts of runs older than the '
        'newest K from the pipeline root, but what the training window and the kept serving '
        'versions use; 0 = keep everything (default: '
        f'{config_lib.RetentionConfig.keep_runs})')
    add('--notify', metavar='URL', help='POST the run\'s JSON summary here when it ends (pushed, '
        'not pushed and why, failed stage, drift); a failure to notify never fails the run')
    add('--on-finish', metavar='CMD', help='run CMD when the run ends (with --kubeflow: in the '
        'Pusher\'s container), with the JSON summary file\'s path as its last argument and in '
        '$PIPELINE_RUN_SUMMARY')
    add('--pipeline-root', metavar='URI', help='--local: where TFX\'s artifacts go, a folder or '
        'an s3://, minio:// or gs:// bucket path (default: <output>/pipeline_root); --kubeflow: '
        'the run root the cluster writes, pipeline_root/ and serving/ under it (required); '
        'buckets: docs/storage.md')
    add('--serving-dir', metavar='URI', help='--local: where pushed versions go, a folder or '
        'a bucket path as above (default: <output>/serving)')
    # Each also a key of the config file's [kubeflow] table (config.example.toml); flags win.
    add = parser.add_argument_group('Kubeflow', 'with --kubeflow only').add_argument
    add('--image', help='container image of every task (see Dockerfile)')
    add('--trainer-cpu', type=float, help=f"the trainer's cores (default: {kf.trainer_cpu:g})")
    add('--trainer-memory', type=float, help="the trainer's memory in GB (default: "
        f'{kf.trainer_memory_gb:g})')
    add('--trainer-gpus', type=int, help=f"the trainer's GPUs (default: {kf.trainer_gpus})")
    add('--trainer-workers', type=int, metavar='N', help='N > 1: train in a TFJob of N pods, '
        'each with the resources above (needs the Training Operator) (default: '
        f'{kf.trainer_workers})')
    add('--trainer-service-account', metavar='NAME', help="the TFJob pods' Kubernetes "
        "service account (default: the namespace's default)")
    add('--s3-secret', metavar='NAME', help='s3:// and minio:// roots: the Kubernetes Secret '
        'whose keys accesskey and secretkey every task gets as AWS_ACCESS_KEY_ID and '
        'AWS_SECRET_ACCESS_KEY; "" = none, e.g. IAM roles for service accounts (default: '
        f'{kf.s3_secret})')
    add('--s3-endpoint', metavar='URL', help='s3:// and minio:// roots: the S3 API every task '
        'writes to, as AWS_ENDPOINT_URL; "" = AWS S3 itself (default: '
        f'{kf.s3_endpoint}, the SeaweedFS of KFP 2.17)')
    add('--s3-region', metavar='REGION', help='s3:// and minio:// roots: AWS_REGION of every '
        f'task (default: {kf.s3_region})')
    add = parser.add_argument_group('scheduling', 'with --kubeflow only: upload the pipeline '
                                    'and keep one recurring run of --name').add_argument
    add('--endpoint', help='KFP API URL: upload the pipeline and schedule it')
    add('--schedule', help='six-field cron, seconds first, e.g. "0 0 3 * * *" (03:00 daily), '
        'or @daily, "@every 6h"')
    add('--experiment', help=f'KFP experiment (default: {kf.experiment})')
    add('--namespace', help='Kubeflow profile namespace, needed when KFP runs multi-user (a '
        'full Kubeflow install) (default: none; in a pod, its own namespace)')
    add('--token-file', metavar='FILE', help='file holding a bearer token for the KFP API, '
        're-read for every call (e.g. a projected service-account token)')
    add('--token-env', metavar='VAR', help='environment variable holding a bearer token for '
        'the KFP API')
    add('--service-account-token', action='store_true', default=None, help='in a pod: the '
        'projected token kfp reads ($KF_PIPELINES_SA_TOKEN_PATH, else '
        '/var/run/secrets/kubeflow/pipelines/token)')
    add = parser.add_argument_group('scoring', 'runner.py --score DIR: predictions of a '
                                    'served model').add_argument
    add('--score', metavar='DIR', help='score the images directly in DIR, or its CSV or Parquet '
        'files (no label column needed), with a served model of <--output>/serving; '
        'predictions as JSON lines and CSV in <--output>/scores/, bad files quarantined with '
        'reasons. With '
        '--kubeflow: compile the scoring pipeline for DIR (a URI) instead')
    add('--version', type=int, metavar='N', help='the serving/ version that scores (default: '
        'the served one, the highest)')
    add('--top-k', type=int, metavar='K', help=f'classes listed per prediction (default: '
        f'{config_lib.ScoreConfig.top_k})')
    return parser


def check_mode(args) -> None:
    """ValueError naming a Kubeflow-only flag given without --kubeflow (it would do nothing)."""
    if args.kubeflow:
        return
    given = [dest for dest in presets.KUBEFLOW_FLAGS
             if getattr(args, dest) is not None and dest not in presets.BOTH_MODES]
    if given:
        mode = next(f'--{name}' for name in ('local', 'score', 'promote', 'reject', 'rollback')
                    if getattr(args, name) not in (None, False))
        flag = '--' + given[0].replace('_', '-')
        raise ValueError(f'{flag} is a Kubeflow setting (Kubeflow and scheduling flags need '
                         f'--kubeflow); it does nothing with {mode}')


def build_configs(args):
    """(PipelineConfig, KubeflowConfig or None); ValueError with a message on bad values."""
    check_mode(args)
    kubeflow = None
    if args.kubeflow:  # there --output names the compiled file; the run root is the cluster's
        root, kubeflow = presets.kubeflow_from_flags(args.config_file, {
            dest: getattr(args, dest) for dest in presets.KUBEFLOW_FLAGS
            if getattr(args, dest) is not None}, args.output)
    given = {dest: getattr(args, dest) for dest in presets.FLAG_FIELDS
             if getattr(args, dest) is not None}
    if args.kubeflow:  # the run root: pipeline_root/ and serving/ under it
        given.pop('pipeline_root', None)
        given['output'] = root
    config = presets.from_flags(args.config, args.config_file, given, args.no_cache, args.score)
    if kubeflow is not None:
        presets.refuse_local_roots(config)
    return config, kubeflow


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        check_mode(args)
    except ValueError as error:
        print(f'error: {error}', file=sys.stderr)
        return 2
    if args.promote is not None or args.reject is not None:  # the labels only, as a rollback
        from pipeline import approval
        action, version = (('promote', args.promote) if args.promote is not None
                           else ('reject', args.reject))
        return approval.main(action, version, args.output, args.config_file, not args.no_wait,
                             args.serving_dir, args.reason)
    if args.rollback is not None:  # no pipeline: serving/ of the output folder only
        from pipeline import rollback
        return rollback.main(args.rollback, args.output, args.config_file, not args.no_wait,
                             args.serving_dir)
    try:
        config, kubeflow = build_configs(args)
        score = args.score and presets.score_config(args.score, args.version, args.top_k)
    except ValueError as error:
        print(f'error: {error}', file=sys.stderr)
        return 2
    from pipeline import logs
    logs.configure(args.verbose)
    if score and kubeflow is None:
        from pipeline import score_local
        return score_local.run(config, score, wait=not args.no_wait)
    if kubeflow is None:  # heavy imports after flag parsing: --help and errors answer at once
        from pipeline import local
        return local.run(config, wait=not args.no_wait)
    from pipeline import kubeflow_schedule
    return kubeflow_schedule.run(config, kubeflow, score, args.output)


if __name__ == '__main__':
    sys.exit(main())
