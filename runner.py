"""Entry point: runs the pipeline locally, or compiles (and schedules) it for Kubeflow Pipelines.

    python runner.py --local [--data DIR] [--output DIR] [--config-file FILE] [--steps N] ...
    python runner.py --rollback VERSION | --promote VERSION | --reject VERSION [--output DIR]
    python runner.py --score DIR [--version N] [--output DIR]
    python runner.py --kubeflow --image IMAGE --pipeline-root URI [--schedule "CRON" ...]

The one module with flags: the modes, and each settings field's (presets.SETTINGS).
"""
import argparse
import sys

from core import settings
from pipeline.definition import config as config_lib
from pipeline.definition import presets

EPILOG = """examples:
  python runner.py --local
      train on the embedded digits and serve the model from runs/default/serving
  python runner.py --local --data ~/photos --model mobilenet_v3_small --epochs 5
      your own images (one folder per class) on a standard architecture
  python runner.py --kubeflow --config-file cluster.toml --schedule "0 0 3 * * *"
      compile for Kubeflow and keep a daily 03:00 run ([kubeflow] image, pipeline_root,
      endpoint in cluster.toml; see config.example.toml)

Every flag beside its config-file key and default: docs/cli.md."""
# --help's groups, in order, with what they say of their flags.
GROUPS = {'data': None, 'training': None, 'evaluation and push': None, 'execution': None,
          'Kubeflow': 'with --kubeflow only', 'scheduling': 'with --kubeflow only: upload the '
          'pipeline and keep one recurring run of --name', 'scoring': 'runner.py --score DIR: '
          'predictions of a served model'}
# Defaults that depend on the source (config_lib.SOURCE_DEFAULTS): TrainParams' None.
DEFAULT_TEXTS = {'model_builder': '; '.join(f'{source}: {builder}' for source, (_, _, builder)
                                            in config_lib.SOURCE_DEFAULTS.items())}


def add_settings(groups) -> None:
    """Each settings field's flag, in its group; one two classes declare is the first's."""
    for cls in presets.SETTINGS:
        for field in cls.flagged():
            if field.metadata['flag'] not in groups['data']._option_string_actions:
                groups[cls.group(field)].add_argument(field.metadata['flag'], **settings.options(
                    cls, field, presets.PARSERS, DEFAULT_TEXTS.get(field.name)))


class _Parser(argparse.ArgumentParser):
    """Needs one mode, and the flags that go with a mode with it (presets.mode_error)."""

    def parse_known_args(self, args=None, namespace=None):
        known, rest = super().parse_known_args(args, namespace)
        if presets.mode_error(known):
            self.error(presets.mode_error(known))
        return known, rest


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        description='Image and CSV classification TFX pipeline: ingest, validate, train, '
        'evaluate, push; batch scoring.\nFlags override the config file (--config-file), '
        'which overrides the preset (--config).', epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    groups = {title: parser.add_argument_group(title, text) for title, text in GROUPS.items()}
    mode = groups['execution'].add_mutually_exclusive_group()  # or --score (_Parser checks)
    mode.add_argument('--local', action='store_true', help='run on this machine (LocalDagRunner)')
    mode.add_argument('--kubeflow', action='store_true',
                      help='compile for Kubeflow Pipelines (and schedule it)')
    mode.add_argument('--rollback', type=int, metavar='VERSION', help='serve a kept version '
                      'of <--output>/serving again, as a new highest version, and exit')
    mode.add_argument('--promote', type=int, metavar='VERSION', help="make a kept version stable "
                      "(the version clients get) in the serving folder's models.config, and exit")
    mode.add_argument('--reject', type=int, metavar='VERSION', help='drop the canary label of '
                      'VERSION (--reason says why; in <--output>/approvals.jsonl), and exit')
    add = groups['execution'].add_argument
    add('--config', metavar='PRESET', choices=presets.CONFIG_NAMES, default='default',
        help='built-in settings to start from, not a file: default, or smoke = a few steps, '
        'in-process Beam, no accuracy bar (default: %(default)s)')
    add('--config-file', metavar='FILE', help='TOML settings over the preset, in tables that '
        'mirror the config (see config.example.toml); flags override it')
    add('--reason', metavar='TEXT', help='with --reject: why, for the approvals record')
    add('--verbose', action='store_true', help='stream the full log to the console too')
    add('--no-wait', action='store_true', help='exit (code 2) if another run is using --output, '
        'instead of waiting for it')
    add_settings(groups)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        presets.check_mode(args)
        if args.rollback is not None:  # no pipeline: serving/ of the output folder only
            from pipeline.runs import rollback
            return rollback.main(args.rollback, args.output, args.config_file,
                                 not args.no_wait, args.serving_dir)
        if args.promote is not None or args.reject is not None:  # the labels only, as above
            from pipeline.runs import approval
            action = 'promote' if args.promote is not None else 'reject'
            return approval.main(action, getattr(args, action), args.output, args.config_file,
                                 not args.no_wait, args.serving_dir, args.reason)
        config, kubeflow = presets.from_args(args)  # kubeflow: None without --kubeflow
        score = args.score and presets.score_config(args.score, args.version, args.top_k)
    except ValueError as error:
        print(f'error: {error}', file=sys.stderr)
        return 2
    from pipeline.runs import logs  # heavy imports after flag parsing: --help answers at once
    logs.configure(args.verbose)
    if kubeflow is not None:
        from pipeline.kubeflow import schedule
        return schedule.run(config, kubeflow, score, args.output)
    from pipeline.local import run as local_run, score as local_score
    wait = not args.no_wait
    return local_score.run(config, score, wait=wait) if score else local_run.run(config, wait=wait)


if __name__ == '__main__':
    sys.exit(main())
