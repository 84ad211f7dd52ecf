"""pipeline_root's size run after run, without retention and with --keep-runs K, side by side.

    python -m bench.bench_retention [--runs 6] [--keep 3] [--keep-versions 5] [--per-class 25]
                                    [--steps 30] [--kubeflow [--driver stand-in|cluster]]

Two output folders get the same sequence of scheduled runs through `runner.py --local`'s own
code (pipeline/local/run.py: the lock, the run, retention, the summary): every run adds a new span
(`span-<i>/`, 3 classes of the embedded 8x8 digits, images no earlier span had), trained with
the smoke settings (a few steps, in-process Beam). One folder keeps every run (--keep-runs 0),
the other keeps K. What a kept serving version came from stays too (its Model, Examples and
evaluation), so the size levels off at about max(K, serving versions kept) runs. After each run
the bench measures pipeline_root and serving/ in both, and
what the baseline and the push stored besides the trained Model (both 0 bytes now: they
reference, not copy), and for keep K the whole output folder (ML Metadata, logs, report pages)
and the run's wall time. Prints the tables: sizes per run, their ratio, retention's summary
line, and with 12 runs or more the whole output after the last run against after run 8 and the
wall time of the second half against the first. Nothing is asserted.

--kubeflow: the same sequence of scheduled runs, compiled for Kubeflow with --keep-runs K and run
task by task through the KFP stand-in (tests/support/kfp_launcher.py, mode 'oss': KFP's driver
and launcher transcribed, one ML Metadata and cache table across runs) on a local folder standing
for the gs:// run root; retention runs in each run's Pusher task (pipeline/kubeflow/run_end.py).
Keep K only (the local mode above compares with keeping everything). After each run: the run
root (pipeline_root/ and serving/), the run's wall time, its retention line (from the summary the
task wrote), its cache hits, and the input URIs handed to its tasks that did not exist when it
started (a cache hit on a deleted artifact would be one); with 12 runs or more, the run root
after the last run against after run 8.

--kubeflow --driver cluster: the same runs on the real cluster (`make cluster`,
tests/support/real_kfp.py) instead: each run's Workflow compiled as KFP's API server does for its
run id and run by the real Argo controller, KFP's driver and launcher in pods (the real binaries
with KFP_BIN_DIR, else our transcriptions behind the same flags), ML Metadata over gRPC and the
ml-pipeline cache service, the tasks in pods of the project's image; on SeaweedFS
(tests/support/seaweedfs.py) with an s3:// root, compiled as `runner.py --kubeflow --config smoke
--keep-runs K --s3-endpoint ...`. The same table: the run root's objects, cache hits (tasks whose
executor the driver skipped), and the input URIs in the ExecutorInput each launcher was handed
that did not exist when the run started.
"""
import argparse
import dataclasses
import os
import shutil
import sys
import tempfile
import time
from typing import Dict, List

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIGITS = os.path.join(REPO, 'data', 'digits')
CLASSES = ('0', '1', '2')


@dataclasses.dataclass(frozen=True)
class Row:
    run: int
    root: int          # pipeline_root bytes
    serving: int       # serving/ bytes
    model: int         # the run's trained Model (0 when it was cached)
    copies: int        # the baseline's and the PushedModel's folders: model copies
    retention: str     # the summary's retention line
    seconds: float
    output: int = 0    # the whole output folder: ML Metadata, logs, reports, serving/, root


def add_span(data: str, span: int, per_class: int) -> None:
    """span-<span>/<class>/: per_class digits of each class that no other span holds, while the
    embedded digits last (about 178 per class); past that the digits come round again."""
    for name in CLASSES:
        files = sorted(os.listdir(os.path.join(DIGITS, name)))
        target = os.path.join(data, f'span-{span}', name)
        os.makedirs(target)
        for index in range((span - 1) * per_class, span * per_class):
            shutil.copy(os.path.join(DIGITS, name, files[index % len(files)]), target)


def size(path: str) -> int:
    from pipeline.runs import retention
    return retention.folder_size(path) if os.path.isdir(path) else 0


def run_captured(cfg, console_path: str):
    """local.run(cfg) with what it prints (to descriptor 1) caught in console_path; returns
    (exit code, console text). Also used by tests/e2e/test_retention_e2e.py."""
    from pipeline.local import run as local_run
    saved = os.dup(1)
    with open(console_path, 'w') as handle:
        os.dup2(handle.fileno(), 1)
        try:
            code = local_run.run(cfg, wait=False)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
    with open(console_path) as handle:
        return code, handle.read()


def run_once(cfg, console_path: str) -> Row:
    """One local run, its console caught in a file; the sizes after it."""
    from pipeline.runs import summary as summary_lib
    start = time.time()
    code, console = run_captured(cfg, console_path)
    if code != 0:
        raise RuntimeError(f'run failed ({code}):\n{console}')
    line = next((x.split('retention: ', 1)[1] for x in console.splitlines()
                 if x.startswith('  retention: ')), '')
    summary = summary_lib.read_latest_run(cfg.metadata_path, cfg.name)
    model = summary.trained_model()
    copies = [summary.baseline_model()] + summary.outputs.get('PushedModel', [])
    return Row(run=0, root=size(cfg.pipeline_root), output=size(cfg.output_dir),
               serving=size(cfg.serving_dir),
               model=size(model.uri) if summary.states.get('ImageTrainer') == 'COMPLETE'
               else 0, copies=sum(size(a.uri) for a in copies if a is not None),
               retention=line, seconds=time.time() - start)


def table(without: List[Row], with_keep: List[Row], keep: int) -> str:
    mb = lambda n: f'{n / 1e6:6.2f}'   # noqa: E731
    lines = [f'{"run":>3}  {"root, keep all":>14}  {f"root, keep {keep}":>12}  {"ratio":>5}  '
             f'{"serving/":>8}  {"model":>6}  {"copies":>6}  retention (keep {keep})',
             f'{"":>3}  {"MB":>14}  {"MB":>12}  {"":>5}  {"MB":>8}  {"MB":>6}  {"MB":>6}']
    for a, b in zip(without, with_keep):
        lines.append(f'{a.run:>3}  {mb(a.root):>14}  {mb(b.root):>12}  '
                     f'{b.root / a.root:5.2f}  {mb(b.serving):>8}  {mb(b.model):>6}  '
                     f'{mb(a.copies + b.copies):>6}  {b.retention}')
    growth = lambda rows: (rows[-1].root - rows[len(rows) // 2 - 1].root) / (  # noqa: E731
        len(rows) - len(rows) // 2)
    lines.append(f'growth per run over the last {len(without) - len(without) // 2} runs: keep '
                 f'all {growth(without) / 1e6:+.2f} MB, keep {keep} '
                 f'{growth(with_keep) / 1e6:+.2f} MB')
    return '\n'.join(lines)


def output_table(rows: List[Row], keep: int) -> str:
    """The whole output folder after each run with keep K, and each run's wall time; with 12
    runs or more, the output after the last run against after run 8 and the mean wall time of
    the second half against the first (run 1 aside: it has nothing to compare or keep)."""
    mb = lambda n: f'{n / 1e6:6.2f}'   # noqa: E731
    lines = [f'keep {keep}: the whole output folder (ML Metadata, logs, reports, serving/, '
             'pipeline_root) and each run\'s wall time', f'{"run":>3}  {"output MB":>9}  '
             f'{"seconds":>7}']
    lines += [f'{r.run:>3}  {mb(r.output):>9}  {r.seconds:7.1f}' for r in rows]
    if len(rows) >= 12:
        eighth, last, half = rows[7], rows[-1], len(rows) // 2
        early = sum(r.seconds for r in rows[1:half]) / (half - 1)
        late = sum(r.seconds for r in rows[half:]) / (len(rows) - half)
        lines.append(f'whole output after run {last.run} / after run 8: '
                     f'{last.output / eighth.output:.3f}; mean wall time runs {half + 1}-'
                     f'{last.run} / runs 2-{half}: {late / early:.2f}')
    return '\n'.join(lines)


@dataclasses.dataclass(frozen=True)
class KubeflowRow:
    run: int
    root: int          # the run root: pipeline_root/ and serving/
    pipeline_root: int
    serving: int
    retention: str     # the run summary's retention line
    cached: int        # tasks KFP took from its cache
    missing: int       # input URIs handed over that did not exist when the run started
    seconds: float


def _files(folder: str) -> List[str]:
    return [os.path.join(root, name) for root, _, names in os.walk(folder) for name in names]


def _retention_line(run_folder: str) -> str:
    """The retention line of the summary the run's Pusher task wrote (pipeline/kubeflow/run_end.py),
    on a local folder or an s3:// one (storage enabled)."""
    import json
    import tensorflow as tf
    from pipeline.kubeflow import run_end
    found = tf.io.gfile.glob('/'.join((run_folder, 'Pusher', '*', run_end.SUMMARY_NAME)))
    if not found:
        return '(no summary)'
    with tf.io.gfile.GFile(found[0]) as handle:
        summary = json.load(handle)['summary']
    return next((line.split('retention: ', 1)[1] for line in summary.splitlines()
                 if line.startswith('  retention: ')), '')


def _bench_settings(cfg, args):
    """The bench's training steps and serving/ versions over a compiled config."""
    from components.push.params import PushParams
    return dataclasses.replace(
        cfg, train=dataclasses.replace(cfg.train, train_steps=args.steps),
        push=PushParams(keep_versions=args.keep_versions or PushParams.keep_versions))


def missing_inputs(uris: List[str], existed: List[str], run_id: str) -> List[str]:
    """The input URIs handed to a run's tasks that are neither the run's own (made by an earlier
    task of the run: .../<run id>/<task>/...) nor existed, as a file or a folder of files,
    when the run started: a cache hit on a deleted artifact would be one."""
    existed = sorted(existed)
    import bisect

    def exists(uri):
        at = bisect.bisect_left(existed, uri)
        return at < len(existed) and (existed[at] == uri or existed[at].startswith(uri + '/'))
    return [u for u in uris if f'/{run_id}/' not in u and not exists(u)]


def kubeflow_runs(args, keep: int, work: str) -> List[KubeflowRow]:
    """The scheduled runs through the KFP stand-in; a row after each."""
    sys.path.insert(0, os.path.join(REPO, 'tests', 'support'))
    import kfp_launcher
    from pipeline.definition import config as config_lib
    from pipeline.kubeflow import compiler
    from pipeline.definition.config_kubeflow import KubeflowConfig
    from pipeline.definition.config_retraining import RetentionConfig
    data, root = os.path.join(work, 'data'), os.path.join(work, 'root')
    add_span(data, 1, args.per_class)   # before the compile, which lists span-<N>/ folders
    cfg = _bench_settings(config_lib.smoke_config(
        data, root, schema_path=config_lib.DIGITS_SCHEMA,
        retention=RetentionConfig(keep_runs=keep)), args)
    kf = KubeflowConfig(image='local', output_file=os.path.join(work, 'pipeline.json'),
                                   image_workdir=config_lib.REPO_ROOT)
    job = kfp_launcher.load_job(compiler.compile_pipeline(cfg, kf))
    launcher = kfp_launcher.Launcher(workdir=os.path.join(work, 'pods'))
    rows = []
    for run in range(1, args.runs + 1):
        if run > 1:
            add_span(data, run, args.per_class)
        run_id = f'run-{run}'
        before = _files(cfg.pipeline_root)
        start = time.time()
        launcher.run_job(job, run_id)
        seconds = time.time() - start
        tasks = [r for (done, _), r in launcher.tasks.items() if done == run_id]
        run_folder = os.path.join(cfg.pipeline_root, cfg.name, run_id)
        missing = missing_inputs([a.uri for r in tasks
                                  for lst in r.executor_input.inputs.artifacts.values()
                                  for a in lst.artifacts], before, run_id)
        rows.append(KubeflowRow(
            run=run, root=size(root), pipeline_root=size(cfg.pipeline_root),
            serving=size(cfg.serving_dir), retention=_retention_line(run_folder),
            cached=sum(r.cached for r in tasks), missing=len(missing), seconds=seconds))
        shutil.rmtree(os.path.join(work, 'pods', run_id), ignore_errors=True)  # pods are gone
        print(f'run {run}: run root {rows[-1].root / 1e6:.2f} MB, {len(tasks)} tasks, '
              f'{rows[-1].cached} cached, {len(missing)} missing inputs ({seconds:.0f} s)',
              flush=True)
    return rows


SECRET = 'mlpipeline-minio-artifact'   # the S3 Secret the compiled tasks read (KubeflowConfig)


def _executor_inputs(pods) -> List[dict]:
    """The ExecutorInput each executor pod's launcher was given (`--executor_input`, from the
    driver's pod spec patch: driver.go initPodSpecPatch), from the pods as the API returns them."""
    import json
    found = []
    for pod in pods:
        for container in pod['spec'].get('containers', []):
            words = (container.get('command') or []) + (container.get('args') or [])
            if '--executor_input' in words:
                found.append(json.loads(words[words.index('--executor_input') + 1]))
    return found


def cluster_runs(args, keep: int, work: str) -> List[KubeflowRow]:
    """The scheduled runs on the real cluster (`make cluster`; tests/support/real_kfp.py): each
    run's Workflow compiled as KFP's API server does for its run id and run by the real Argo,
    KFP's driver and launcher in pods (KFP_BIN_DIR: KFP's own programs), the tasks in the
    project's image, on SeaweedFS with an s3:// root; a row after each."""
    sys.path.insert(0, os.path.join(REPO, 'tests', 'support'))
    import real_cluster
    import real_kfp
    import seaweedfs as seaweedfs_lib
    import runner
    from core import storage
    from pipeline.definition import config as config_lib
    from pipeline.definition import presets
    from pipeline.kubeflow import compiler
    real_cluster.kubeconfig()   # fails at once, saying how to start it, when it is not running
    image = real_cluster.image()
    server = seaweedfs_lib.Server()
    relay = real_cluster.PodReachable(int(server.endpoint.rsplit(':', 1)[1]))
    namespace = None
    try:
        os.environ.update(server.env(), AWS_ENDPOINT_URL=f'http://{relay.endpoint}')
        storage.enable()
        bucket = server.new_bucket()
        data = os.path.join(work, 'data')

        def land(span):
            add_span(data, span, args.per_class)
            server.upload_folder(os.path.join(data, f'span-{span}'), bucket,
                                 f'landing/span-{span}')
        land(1)   # before the compile, which lists the landing bucket's span-<N>/ folders
        parsed = runner.build_parser().parse_args([
            '--kubeflow', '--config', 'smoke', '--pipeline-root', f's3://{bucket}/kfp',
            '--data', f's3://{bucket}/landing', '--image', image, '--s3-endpoint',
            f'http://{relay.endpoint}', '--schema', config_lib.DIGITS_SCHEMA,
            '--keep-runs', str(keep), '--trainer-cpu', '1', '--trainer-memory', '2',
            '--output', os.path.join(work, 'pipeline.json')])
        cfg, kf = presets.from_args(parsed)
        cfg = _bench_settings(cfg, args)
        upload = compiler.write_pipeline_spec(compiler.compile_pipeline(cfg, kf),
                                              cfg.pipeline_root, kf)
        secrets = {SECRET: {'accesskey': seaweedfs_lib.ACCESS_KEY,
                            'secretkey': seaweedfs_lib.SECRET_KEY}}
        prefix = cfg.output_dir.split('/', 3)[3] + '/'   # s3://bucket/<prefix>
        rows = []
        namespace = real_cluster.Namespace('bench')
        with real_kfp.Install(os.path.join(work, 'kfp'), namespace, image,
                              secrets=secrets) as kfp:
            print(f'cluster: namespace {namespace.name}, programs '
                  f'{kfp.bin_dir or "the transcriptions (KFP_BIN_DIR unset)"}', flush=True)
            for run in range(1, args.runs + 1):
                if run > 1:
                    land(run)
                run_id = f'run-{run}'
                before = [f's3://{bucket}/{k}' for k in server.keys(bucket, prefix)]
                start = time.time()
                outcomes = kfp.run(kfp.compile(upload, cfg.pipeline_root, run_id))
                seconds = time.time() - start
                record = kfp.runs[-1]
                if record['phase'] != 'Succeeded':
                    raise RuntimeError(f'{run_id}: {record["phase"]}: {outcomes}\n'
                                       + kfp.failures(record['name']))
                uris = [a['uri'] for given in _executor_inputs(kfp.pods(record['name']))
                        for lst in given.get('inputs', {}).get('artifacts', {}).values()
                        for a in lst.get('artifacts', [])]
                missing = missing_inputs(uris, before, run_id)
                sizes = server.keys(bucket, prefix)
                in_root = lambda folder: sum(  # noqa: E731
                    n for k, n in sizes.items() if k.startswith(prefix + folder + '/'))
                run_folder = f'{cfg.pipeline_root}/{cfg.name}/{run_id}'
                cached = sum(o == 'cached' for o in outcomes.values())
                rows.append(KubeflowRow(
                    run=run, root=sum(sizes.values()), pipeline_root=in_root('pipeline_root'),
                    serving=in_root('serving'), retention=_retention_line(run_folder),
                    cached=cached, missing=len(missing), seconds=seconds))
                fingerprints = sum(bool(t['Fingerprint']) for t in kfp.cache.service.tasks)
                print(f'run {run}: run root {rows[-1].root / 1e6:.2f} MB, {len(outcomes)} '
                      f'tasks, {cached} cached, cache service: {fingerprints} fingerprinted '
                      f'tasks, {len(missing)} missing inputs {missing[:3]} ({seconds:.0f} s)',
                      flush=True)
        return rows
    finally:
        if namespace is not None:
            namespace.delete()
        relay.stop()
        server.stop()


def kubeflow_table(rows: List[KubeflowRow], keep: int) -> str:
    mb = lambda n: f'{n / 1e6:6.2f}'   # noqa: E731
    lines = [f'{"run":>3}  {"run root":>8}  {"pipeline_root":>13}  {"serving/":>8}  '
             f'{"cached":>6}  {"missing":>7}  {"seconds":>7}  retention (keep {keep})',
             f'{"":>3}  {"MB":>8}  {"MB":>13}  {"MB":>8}  {"tasks":>6}  {"inputs":>7}']
    lines += [f'{r.run:>3}  {mb(r.root):>8}  {mb(r.pipeline_root):>13}  {mb(r.serving):>8}  '
              f'{r.cached:>6}  {r.missing:>7}  {r.seconds:7.1f}  {r.retention}' for r in rows]
    lines.append(f'cache hits: {sum(r.cached for r in rows)}; inputs handed over that did not '
                 f'exist: {sum(r.missing for r in rows)}')
    if len(rows) >= 12:
        lines.append(f'run root after run {rows[-1].run} / after run 8: '
                     f'{rows[-1].root / rows[7].root:.3f}')
    return '\n'.join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--runs', type=int, default=6)
    parser.add_argument('--keep', type=int, default=None,
                        help='K (default: the pipeline default, RetentionConfig.keep_runs)')
    parser.add_argument('--per-class', type=int, default=25)
    parser.add_argument('--steps', type=int, default=30)
    parser.add_argument('--keep-versions', type=int, default=None,
                        help='serving/ versions kept (default: the pipeline default, '
                        'PushParams.keep_versions); each keeps what it came from')
    parser.add_argument('--work', help='folder for the runs (default: a temporary one)')
    parser.add_argument('--kubeflow', action='store_true', help='the runs through the KFP '
                        'stand-in, compiled for Kubeflow, keep K only (see above)')
    parser.add_argument('--driver', choices=('stand-in', 'cluster'), default='stand-in',
                        help='with --kubeflow: the in-process KFP stand-in, or the real '
                        'cluster (make cluster; KFP_BIN_DIR: KFP\'s own driver and launcher) '
                        'on SeaweedFS')
    args = parser.parse_args(argv)
    sys.path.insert(0, REPO)
    from components.push.params import PushParams
    from pipeline.definition import config as config_lib
    from pipeline.runs import logs
    from pipeline.definition.config_retraining import RetentionConfig
    keep = RetentionConfig.keep_runs if args.keep is None else args.keep
    logs.configure(False)
    work = args.work or tempfile.mkdtemp(prefix='bench-retention-')
    if args.kubeflow:
        runs = cluster_runs if args.driver == 'cluster' else kubeflow_runs
        rows = runs(args, keep, work)
        versions = args.keep_versions or PushParams.keep_versions
        how = ('the real cluster and Argo on SeaweedFS, programs: ' + (
            os.environ.get('KFP_BIN_DIR') or 'the transcriptions') if args.driver == 'cluster'
            else 'the KFP stand-in, mode oss')
        print(f'\n{args.runs} scheduled runs on Kubeflow ({how}), one new '
              f'span each ({len(CLASSES)} classes x {args.per_class} 8x8 digits), {args.steps} '
              f'training steps, --keep-runs {keep}, serving/ keeps {versions} versions; '
              f'folders under {work}\n')
        print(kubeflow_table(rows, keep))
        return 0
    rows: Dict[int, List[Row]] = {0: [], keep: []}
    data = os.path.join(work, 'data')
    for run in range(1, args.runs + 1):
        add_span(data, run, args.per_class)
        for k in (0, keep):   # interleaved: both folders see the same data at each step
            cfg = config_lib.smoke_config(
                data, os.path.join(work, f'keep-{k}'), schema_path=config_lib.DIGITS_SCHEMA,
                retention=RetentionConfig(keep_runs=k))
            cfg = dataclasses.replace(cfg, train=dataclasses.replace(
                cfg.train, train_steps=args.steps), push=PushParams(
                    keep_versions=args.keep_versions or PushParams.keep_versions))
            row = run_once(cfg, os.path.join(work, f'console-{k}-{run}.txt'))
            rows[k].append(dataclasses.replace(row, run=run))
            print(f'run {run}, keep {k or "all"}: {row.root / 1e6:.2f} MB in pipeline_root '
                  f'({row.seconds:.0f} s)', flush=True)
    versions = args.keep_versions or PushParams.keep_versions
    print(f'\n{args.runs} runs, one new span each ({len(CLASSES)} classes x {args.per_class} '
          f'8x8 digits), {args.steps} training steps, serving/ keeps {versions} versions; '
          f'folders under {work}\n')
    print(table(rows[0], rows[keep], keep))
    print()
    print(output_table(rows[keep], keep))
    return 0


if __name__ == '__main__':
    sys.exit(main())
