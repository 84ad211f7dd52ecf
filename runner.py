"""Entry point: runs the pipeline locally, or compiles (and schedules) it for Kubeflow Pipelines.

    python runner.py --local [--data DIR] [--output DIR] [--config-file FILE] [--steps N] ...
    python runner.py --rollback VERSION [--output DIR]
    python runner.py --kubeflow --image IMAGE --pipeline-root URI [--output FILE]
                     [--endpoint URL --schedule "CRON" [--experiment NAME]
                      [--namespace NS] [--token-file FILE | --token-env VAR |
                       --service-account-token]]

This is the only module that defines command-line flags; pipeline/presets.py turns them (over a
TOML config file) into validated configs, and pipeline/local.py or pipeline/kubeflow.py run the
one pipeline factory.
"""
import argparse
import shlex
import sys

from training.choices import AUGMENTS, POLICIES
from pipeline import config as config_lib
from pipeline import presets


def build_parser() -> argparse.ArgumentParser:
    t, kf = config_lib.TrainConfig, config_lib.KubeflowConfig
    parser = argparse.ArgumentParser(description='Image and CSV classification TFX pipeline: '
                                     'ingest, validate, train, evaluate, push.')
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument('--local', action='store_true', help='run on this machine (LocalDagRunner)')
    mode.add_argument('--kubeflow', action='store_true',
                      help='compile for Kubeflow Pipelines (and schedule it)')
    mode.add_argument('--rollback', type=int, metavar='VERSION', help='serve a kept version '
                      'of <--output>/serving again, as a new highest version, and exit')
    add = parser.add_argument
    add('--config-file', metavar='FILE', help='TOML settings whose tables mirror the config '
        '(see config.example.toml); flags override it')
    add('--config', choices=presets.CONFIG_NAMES, default='default', help='settings to start '
        'from; smoke = a few steps, in-process Beam, no accuracy bar (default: %(default)s)')
    add('--source', choices=config_lib.SOURCES, help='images: one sub-folder per class; csv: CSV '
        'files with a header and a label column (default: images)')
    add('--data', help='input base (a URI for Kubeflow); default: the embedded digits, or the '
        'embedded wine table for --source csv')
    add('--output', help='--local: run folder (default: runs/default); --kubeflow: compiled '
        'file (default: pipeline.json)')
    add('--label-column', metavar='NAME', help='csv: the column holding the class (default: label)')
    add('--max-rejected-fraction', type=float, metavar='F', help='stop when more than this share '
        'of records is rejected (default: %s)' % config_lib.IngestConfig.max_rejected_fraction)
    i = config_lib.IngestConfig
    add('--encoding', metavar='CODEC', help='csv: encoding of files without a byte-order mark, '
        f'e.g. latin-1, cp1252 (default: {i.encoding}; UTF-8 and UTF-16 BOMs are honoured)')
    add('--max-image-pixels', type=int, metavar='N', help='quarantine images with more pixels '
        f'(as too_large), judged from the header (default: {i.max_image_pixels:,})')
    add('--convert-formats', type=presets.parse_names, metavar='FMT,...', help='image formats '
        'converted to PNG even when that loses something, e.g. TIFF,WEBP (default: none; '
        'lossless conversions always happen)')
    add('--max-csv-record-bytes', type=int, metavar='N', help='quarantine longer CSV records '
        f'(as too_large) (default: {i.max_csv_record_bytes:,})')
    add('--schema', help='curated schema file, or "infer" (default: curated for embedded data)')
    add('--model', metavar='NAME|IMPORT.PATH', help=f'{"|".join(config_lib.NAMED_MODELS)} '
        '(keras.applications), or a builder (input_shape, num_classes) -> keras.Model '
        '(default: models.resnet.build_model; csv: models.mlp.build_model)')
    add('--weights', metavar='FILE', help='local weights file the model builder loads, e.g. '
        'a backbone .weights.h5 for --model resnet50 (default: none, random init)')
    add('--image-size', type=presets.parse_size, metavar='HxW', help='model input size '
        '(default: the most common size among the train images)')
    add('--channels', type=int, choices=(1, 3), help='model input channels (default: 3 when any '
        'image is colour, else 1)')
    add('--epochs', type=float, help='most passes over the train split; early stopping still '
        'applies (default: from the data, ~400k examples seen as 10-20 passes, >= 400 updates)')
    add('--steps', type=int, help='exactly N optimizer updates instead: no epochs, no early '
        'stopping')
    add('--patience', type=int, help='stop after N epochs without held-out improvement; 0 = '
        f'run every epoch (default: {t.patience})')
    add('--validation-percent', type=int, metavar='P', help='share of the train split held out '
        f'for early stopping; 0 = none (default: {t.validation_percent})')
    add('--time-budget', type=presets.parse_minutes, metavar='MIN', help='stop training once '
        'this much time is spent, keeping the best epoch: 30, 30m, 1.5h (default: none)')
    add('--freeze-epochs', type=int, metavar='N', help='first N epochs train only the head of a '
        "model with a 'backbone' layer (--model resnet50 ...; with --weights), then all layers")
    add('--batch-size', type=int, help=f'global batch over all replicas (default: '
        f'{t.global_batch_size})')
    add('--workers', type=int, metavar='N', help='training processes on this machine, one '
        'MultiWorkerMirroredStrategy worker each (default: 1, in-process)')
    add('--accumulation-steps', type=int, help='micro-batches per optimizer update (default: 1)')
    add('--learning-rate', type=float, help=f'peak learning rate (default: {t.learning_rate})')
    add('--mixed-precision', choices=POLICIES, help='auto = mixed_float16 on GPU; on a bf16 CPU '
        'mixed_bfloat16 for models of 500M+ multiply-adds per example; else float32 '
        '(default: auto)')
    add('--warm-start', action='store_true', default=None,
        help='start from the served model\'s weights (when the shapes match)')
    add('--augment', choices=AUGMENTS, help='random changes to train images: light = small '
        'shifts; standard = shifts, crops and contrast (default: %s)' % t.augment)
    add('--flip', action='store_true', default=None, help='random horizontal flips of train '
        'images too (not for digits or text)')
    add('--min-accuracy', type=float, help='overall eval accuracy needed to push (default: %s)'
        % config_lib.EvalConfig.min_accuracy)
    add('--beam-args', type=shlex.split, help='Beam pipeline args as one quoted string, e.g. '
        '--beam-args="--direct_num_workers=1" (default: in-process for small inputs, one '
        'DirectRunner worker per core for large ones)')
    add('--no-cache', action='store_true', help='re-run every component')
    add('--verbose', action='store_true', help='stream the full log to the console too')
    add('--no-wait', action='store_true', help='exit (code 2) if another run is using --output, '
        'instead of waiting for it')
    add = parser.add_argument_group('Scheduled retraining').add_argument
    add('--window', type=int, metavar='N', help='with span-<N>/ folders: train and evaluate on '
        'the last N spans; spans ingested before are not converted again (default: %d)'
        % config_lib.IngestConfig.window)
    add('--notify', metavar='URL', help='POST the run\'s JSON summary here when it ends (pushed, '
        'not pushed and why, failed stage, drift); a failure to notify never fails the run')
    add('--on-finish', metavar='CMD', help='run CMD when the run ends, with the JSON summary '
        'file\'s path as its last argument and in $PIPELINE_RUN_SUMMARY')
    add('--keep-runs', type=int, metavar='K', help='after a local run, delete the artifacts of '
        'runs older than the newest K from the pipeline root, but what the training window and '
        'the kept serving versions use; 0 = keep everything (default: %d)'
        % config_lib.RetentionConfig.keep_runs)
    add('--max-label-drift', type=float, metavar='L', help='refuse to push when the new '
        "span's class mix is further than this L-infinity distance from the served model's "
        'training data; 1 = off (default: %s; other drift bars: [drift] in the config file)'
        % config_lib.DriftConfig.max_label_drift)
    add = parser.add_argument_group('Kubeflow (with --kubeflow)').add_argument
    # Each also a key of the config file's [kubeflow] table (config.example.toml); flags win.
    add('--image', help='container image of every task (see Dockerfile)')
    add('--pipeline-root', help='run root the cluster writes (gs://...)')
    add('--trainer-cpu', type=float, help=f'cores (default: {kf.trainer_cpu:g})')
    add('--trainer-memory', type=float, help=f'GB (default: {kf.trainer_memory_gb:g})')
    add('--trainer-gpus', type=int, help=f'GPUs (default: {kf.trainer_gpus})')
    add('--trainer-workers', type=int, metavar='N', help='N > 1: train in a TFJob of N pods, '
        'each with the resources above (needs the Training Operator)')
    add('--trainer-service-account', metavar='NAME', help="the TFJob pods' Kubernetes "
        "service account (default: the namespace's default)")
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
    return parser


def build_configs(args):
    """(PipelineConfig, KubeflowConfig or None); ValueError with a message on bad values."""
    kubeflow = None
    if args.kubeflow:  # there --output names the compiled file; the run root is the cluster's
        root, kubeflow = presets.kubeflow_from_flags(args.config_file, {
            dest: getattr(args, dest) for dest in presets.KUBEFLOW_FLAGS
            if getattr(args, dest) is not None}, args.output)
    given = {dest: getattr(args, dest) for dest in presets.FLAG_FIELDS
             if getattr(args, dest) is not None}
    if args.kubeflow:
        given['output'] = root
    return presets.from_flags(args.config, args.config_file, given, args.no_cache), kubeflow


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.rollback is not None:  # no pipeline: serving/ of the output folder only
        from pipeline import rollback
        return rollback.main(args.rollback, args.output, args.config_file, not args.no_wait)
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
    from pipeline import kubeflow_schedule
    try:
        # The credentials are read before the compile, so a missing token fails at once.
        client = kubeflow.endpoint and kubeflow_schedule.connect(kubeflow)
        job_file = kubeflow_lib.compile_pipeline(config, kubeflow)
    except ValueError as error:  # settings only the compile can check (e.g. --trainer-workers)
        print(f'error: {error}', file=sys.stderr)
        return 2
    except kubeflow_schedule.SchedulingError as error:  # the API server is unreachable
        print(f'error: {error}', file=sys.stderr)
        return 1
    print(f'Compiled {job_file}')
    if kubeflow.endpoint:
        try:
            run = kubeflow_schedule.schedule(client, job_file, config, kubeflow)
        except kubeflow_schedule.SchedulingError as error:
            print(f'error: {error}', file=sys.stderr)
            return 1
        print(f'Scheduled "{kubeflow.schedule}": recurring run {run.recurring_run_id}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
