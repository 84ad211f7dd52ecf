"""One ingestion measurement in a fresh process; prints `RESULT {json}` (see bench_ingest.py).

    python -m bench.ingest_worker naive|beam|stats IMAGES OUT [--workers N] [--in-process]

- naive: one loop in this process: list, read, decode (Pillow, fully), build the tf.Example,
  write with TFRecordWriter (GZIP, one file per split). The same checks and Example as ours.
- beam: the component's Beam graph (`build_ingest`) on the DirectRunner, multi-processing with
  N workers, as `runner.py --local` runs it; with --in-process, in this process
  (`--direct_running_mode=in_memory`, one worker): no worker processes to start.
- stats: the stock StatisticsGen executor on an ingested Examples folder (TFDV on Beam, N
  workers), which is what the pipeline runs next.

Peak RSS is sampled every 50 ms over this process and all its children (Beam's workers are
child processes), as the largest sum seen: the memory the measurement really needed. The peak
of this process alone (Beam's runner, apart from its workers) is reported too.
"""
import argparse
import json
import os
import threading
import time

import psutil


class PeakRss:
    """Samples the resident memory of this process tree in a background thread."""

    def __init__(self, interval: float = 0.05):
        self.peak = 0
        self.peak_main = 0  # this process alone: Beam's runner, apart from its workers
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(interval,), daemon=True)
        self._thread.start()

    def _run(self, interval):
        me = psutil.Process()
        while not self._stop.is_set():
            total = 0
            self.peak_main = max(self.peak_main, me.memory_info().rss)
            for process in [me] + me.children(recursive=True):
                try:
                    total += process.memory_info().rss
                except psutil.Error:
                    pass  # a worker that just exited
            self.peak = max(self.peak, total)
            time.sleep(interval)

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        return {'peak_rss_mb': self.peak / 2 ** 20, 'peak_rss_main_mb': self.peak_main / 2 ** 20}


def naive(images_dir: str, out: str) -> int:
    import tensorflow as tf
    from core import features
    from components.ingest.formats import images
    classes = images.list_classes(images_dir)
    index = images.class_index(classes)
    os.makedirs(out, exist_ok=True)
    options = tf.io.TFRecordOptions(compression_type='GZIP')
    writers = {s: tf.io.TFRecordWriter(os.path.join(out, f'{s}.gz'), options)
               for s in features.SPLITS}
    count = 0
    for name in classes:
        for file_name in sorted(os.listdir(os.path.join(images_dir, name))):
            with open(os.path.join(images_dir, name, file_name), 'rb') as handle:
                data = handle.read()
            info = images.inspect_image(data)
            relative = f'{name}/{file_name}'
            example = features.make_example(data, index[name], name, info.height, info.width,
                                            relative)
            writers[images.split_of(relative, 80)].write(example.SerializeToString())
            count += 1
    for writer in writers.values():
        writer.close()
    return count


def beam_args(workers: int, in_process: bool = False) -> list:
    if in_process:
        return ['--direct_running_mode=in_memory', '--direct_num_workers=1']
    return ['--direct_running_mode=multi_processing', f'--direct_num_workers={workers}']


def beam_ingest(images_dir: str, out: str, workers: int, in_process: bool = False) -> int:
    import apache_beam as beam
    from components.ingest.formats import images
    from components.ingest.graph import beam_pipeline, stats
    options = beam_pipeline.IngestOptions(
        root=images_dir, classes=tuple(images.list_classes(images_dir)), num_shards=2)
    pipeline = beam.Pipeline(argv=beam_args(workers, in_process))
    beam_pipeline.build_ingest(pipeline, options, out)
    result = pipeline.run()
    result.wait_until_finish()
    beam_pipeline.finalize(out, options)
    counts = stats.read_counts(result)
    return counts['written_train'] + counts['written_eval']


def statistics(examples_dir: str, out: str, workers: int) -> int:
    from tfx.components.statistics_gen import executor
    from tfx.dsl.components.base import base_beam_executor
    from tfx.types import artifact_utils, standard_artifacts
    examples = standard_artifacts.Examples()
    examples.uri = examples_dir
    examples.split_names = artifact_utils.encode_split_names(['train', 'eval'])
    stats = standard_artifacts.ExampleStatistics()
    stats.uri = out
    context = base_beam_executor.BaseBeamExecutor.Context(beam_pipeline_args=beam_args(workers))
    executor.Executor(context).Do({'examples': [examples]}, {'statistics': [stats]},
                                  {'exclude_splits': '[]'})
    return 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('mode', choices=['naive', 'beam', 'stats'])
    parser.add_argument('images')
    parser.add_argument('out')
    parser.add_argument('--workers', type=int, default=1)
    parser.add_argument('--in-process', action='store_true')
    args = parser.parse_args()
    # Imported before the clock starts in every mode: the import is the same fixed cost for
    # all, and not ingestion. Beam's worker processes still import TensorFlow inside the timed
    # part: that start-up is a real cost of running on Beam.
    import apache_beam  # noqa: F401
    import tensorflow  # noqa: F401
    from components.ingest.graph import beam_pipeline  # noqa: F401
    rss = PeakRss()
    start = time.perf_counter()
    if args.mode == 'naive':
        records = naive(args.images, args.out)
    elif args.mode == 'beam':
        records = beam_ingest(args.images, args.out, args.workers, args.in_process)
    else:
        records = statistics(args.images, args.out, args.workers)
    seconds = time.perf_counter() - start
    print('RESULT ' + json.dumps({'seconds': seconds, 'records': records, **rss.stop()}),
          flush=True)


if __name__ == '__main__':
    main()
