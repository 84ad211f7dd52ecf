"""tf.data input pipelines over the ingested TFRecord shards (no TFX imports).

A `file_pattern` is one pattern or several (a training window: one per span,
core/window.py); the files they match are read as one sorted list, so FILE
sharding deals each worker files of every span, and counts and epochs cover the whole window.

Images are parsed and decoded one example at a time, then batched; table rows are batched
first and parsed together (tf.io.parse_example on a batch is far cheaper than per row).

Early stopping holds out a slice of the train split: each record falls in one of 10,000 buckets
by a hash of its serialized bytes (hundredths of a percent), and buckets below
`held_out_percent` x 100 are held out. The split is deterministic (the same records on every
run, worker and resume), disjoint and complete, and the eval split, which blesses the model, is
never part of it. A whole percent holds out the records it held out when there were 100
buckets: the hash's last two decimal digits rank first (_bucket), so a slice cut to a finer share
(training/plan.py; 5.11% on Fashion-MNIST) is a subset of the next whole percent's.
"""
import tensorflow as tf

from core import features, inputs
from training import augment as augment_lib

_LABEL_SPEC = {features.LABEL_KEY: features.PARSE_SPEC[features.LABEL_KEY]}


def _parse_image_fn(image_shape, spec: inputs.InputSpec):
    def parse(serialized):
        parsed = tf.io.parse_single_example(
            serialized, {**inputs.image_parse_spec(spec), **_LABEL_SPEC})
        image = inputs.decode_parsed_image(parsed, spec, image_shape)
        return image, tf.cast(parsed[features.LABEL_KEY], tf.int32)
    return parse


def _parse_rows(spec: inputs.InputSpec):
    def parse(serialized):
        parsed = tf.io.parse_example(serialized, {**inputs.tabular_parse_spec(spec), **_LABEL_SPEC})
        return inputs.tabular_inputs(parsed, spec), tf.cast(parsed[features.LABEL_KEY], tf.int32)
    return parse


def _batched(records: tf.data.Dataset, batch_size: int, image_shape, spec: inputs.InputSpec,
             drop_remainder: bool) -> tf.data.Dataset:
    if spec.kind == 'tabular':
        return (records.batch(batch_size, drop_remainder=drop_remainder)
                .map(_parse_rows(spec), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True))
    return (records.map(_parse_image_fn(image_shape, spec), num_parallel_calls=tf.data.AUTOTUNE,
                        deterministic=True)
            .batch(batch_size, drop_remainder=drop_remainder))


def _records(file_pattern: str, worker: int = 0, num_workers: int = 1) -> tf.data.Dataset:
    # Sorted file order (shuffle=False) keeps the pipeline deterministic for a given seed.
    files = tf.data.Dataset.list_files(file_pattern, shuffle=False)
    if num_workers > 1:  # FILE sharding: this worker's files i, i+W, ... (see _file_shard)
        files = files.shard(num_workers, worker)
    # Ingestion writes GZIP shards (.gz) unless compression is off; the suffix says which.
    return files.interleave(
        lambda f: tf.data.TFRecordDataset(f, compression_type=tf.where(
            tf.strings.regex_full_match(f, r'.*\.gz'), 'GZIP', '')),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


BUCKETS = 10_000   # a share of the train split is chosen in hundredths of a percent


def _bucket(record: tf.Tensor) -> tf.Tensor:
    """The record's hash bucket of BUCKETS: the held-out slice is the buckets below its share.

    The bucket's hundreds are the hash modulo 100 (the only bucket there was before shares
    finer than a percent), its units the next two digits: so `bucket < 100 x p` for a whole
    percent p is exactly `hash % 100 < p`, and the models trained on a whole percent's slice
    before keep it."""
    fine = tf.strings.to_hash_bucket_fast(record, BUCKETS)
    return (fine % 100) * 100 + fine // 100


def _below(share_percent: float) -> int:
    """The first bucket above a share of the train split given in percent (to 0.01)."""
    return int(round(share_percent * BUCKETS / 100))


def _held_out(record: tf.Tensor, held_out_percent: float) -> tf.Tensor:
    return _bucket(record) < _below(held_out_percent)


def _one_pass(records: tf.data.Dataset, batch_size: int, image_shape,
              spec: inputs.InputSpec) -> tf.data.Dataset:
    """Records as batches for scoring: every example once, the last batch possibly partial."""
    return _sharded(_batched(records, batch_size, image_shape, spec, drop_remainder=False)
                    .prefetch(tf.data.AUTOTUNE))


def _train_records(file_pattern: str, held_out_percent: float, worker: int = 0,
                   num_workers: int = 1) -> tf.data.Dataset:
    records = _records(file_pattern, worker, num_workers)
    if held_out_percent:
        records = records.filter(lambda r: tf.logical_not(_held_out(r, held_out_percent)))
    return records


def count_split(file_pattern: str, held_out_percent: float) -> tuple:
    """(held-in, held-out) record counts of the train split: one pass, nothing decoded."""
    flags = _records(file_pattern).map(lambda r: tf.cast(_held_out(r, held_out_percent),
                                                         tf.int64))
    total, held_out = flags.reduce((tf.constant(0, tf.int64), tf.constant(0, tf.int64)),
                                   lambda acc, f: (acc[0] + 1, acc[1] + f))
    return int(total) - int(held_out), int(held_out)


def shard_policy(num_files: int, num_workers: int) -> str:
    """How several workers split the train split: 'FILE' when every worker can have files of
    its own, else 'DATA'.

    DATA: every worker reads every file and keeps its slice of each global batch, so the global
    batches are exactly those of one machine (what the equivalence tests prove), but each worker
    reads and decodes the whole split. FILE: worker i reads only files i, i+W, ...; a step's
    global batch is then B/W consecutive examples of each worker's own shuffled stream, so the
    batches differ from one machine's (same size, same examples per epoch, different mix), and
    each worker reads 1/W of the data. A resumed worker skips (updates x B x K) / W of its
    stream instead of the whole stream's count (`stream_skip`).
    """
    return 'FILE' if num_workers > 1 and num_files >= num_workers else 'DATA'


def stream_skip(skip_examples: int, policy: str, num_workers: int) -> int:
    """The examples one worker's stream has consumed when the global stream consumed
    skip_examples: all of them under DATA, its 1/num_workers share under FILE."""
    return skip_examples // num_workers if policy == 'FILE' else skip_examples


def _file_shard(shard: str, worker: int, num_workers: int) -> tuple:
    """(worker, num_workers) to shard the train files by, and the auto-shard policy to leave.

    FILE sharding is done here, on the file list, and tf.distribute's own rewrite is turned OFF.
    Its rewrite (the tf.data AutoShard pass) walks every source of the pipeline and refuses any
    that is not a file reader: the augmented stream is zipped with a counter (enumerate, a
    RangeDataset), so it failed with "Found an unshardable source dataset: RangeDataset". The
    counter must come after the shard anyway: under FILE there is no global stream, and each
    worker numbers its own (see _augmented). The files are those the rewrite chose (files.shard
    after list_files), and tf.distribute still rebatches each global batch into the workers'
    shares, so the unaugmented streams are exactly what FILE auto-sharding gave.
    """
    if shard not in ('DATA', 'FILE'):
        raise ValueError(f'shard must be DATA or FILE, got {shard!r}')
    if shard == 'DATA':
        return (0, 1), 'DATA'
    # Without its index every worker would read every file and train on the same examples.
    if not 0 <= worker < num_workers or num_workers < 2:
        raise ValueError(f'FILE sharding needs a worker index in [0, num_workers) and at least '
                         f'2 workers, got worker {worker} of {num_workers}')
    return (worker, num_workers), 'OFF'


def _sharded(dataset: tf.data.Dataset, policy: str = 'DATA') -> tf.data.Dataset:
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = getattr(
        tf.data.experimental.AutoShardPolicy, policy)
    return dataset.with_options(options)


def train_dataset(file_pattern: str, global_batch_size: int, image_shape, seed: int,
                  skip_examples: int = 0, cache_decoded: bool = False,
                  shuffle_buffer: int = 10_000,
                  spec: inputs.InputSpec = inputs.InputSpec(),
                  augment: str = 'none', flip: bool = False,
                  held_out_percent: float = 0, shard: str = 'DATA', worker: int = 0,
                  num_workers: int = 1) -> tf.data.Dataset:
    """An endless, shuffled stream of (features, label) batches of exactly global_batch_size.

    drop_remainder keeps every micro-batch at the global batch, which the loss normalisation
    assumes. skip_examples drops that many examples of the (deterministic) shuffled stream,
    which is how a resumed run continues where the interrupted one stopped. cache_decoded keeps
    the split in memory after the first pass (decoded images; table rows as read, since they
    are parsed per batch), so later epochs spend no CPU on decoding: on a small machine that
    CPU is taken from the model's compute. augment and flip (images only; augment.py) transform
    each decoded image after the cache, keyed by its position in the endless stream, counted
    before the skip: a resumed run sees the same transformed examples as an uninterrupted one.
    held_out_percent leaves out the held-out slice (see the module docstring), before all that.
    shard is how several workers split it (shard_policy); under FILE, this is worker `worker` of
    `num_workers` (tf.distribute's input pipeline id, distribute.input_pipeline) and the stream
    is its own. The eval and held-out sets stay DATA, so every example counts once, wherever it
    is read.
    """
    (worker, num_workers), policy = _file_shard(shard, worker, num_workers)
    records = _train_records(file_pattern, held_out_percent, worker, num_workers)
    decode_first = cache_decoded and spec.kind != 'tabular'
    if spec.kind != 'tabular' and augment_lib.is_active(augment, flip, image_shape):
        return _sharded(_augmented(records, decode_first, global_batch_size, image_shape,
                                   seed, skip_examples, shuffle_buffer, spec,
                                   augment_lib.make_augment_fn(augment, flip, seed, image_shape),
                                   worker, num_workers),
                        policy)
    if decode_first:
        stream = records.map(_parse_image_fn(image_shape, spec),
                             num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).cache()
    else:
        stream = records.cache() if cache_decoded else records
    stream = stream.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True).repeat()
    if skip_examples:  # before decoding when not cached: a resumed run skips cheaply
        stream = stream.skip(skip_examples)
    if decode_first:
        batched = stream.batch(global_batch_size, drop_remainder=True)
    else:
        batched = _batched(stream, global_batch_size, image_shape, spec, drop_remainder=True)
    return _sharded(batched.prefetch(tf.data.AUTOTUNE), policy)


def _augmented(records, decode_first, global_batch_size, image_shape, seed, skip_examples,
               shuffle_buffer, spec, augment_fn, worker, num_workers) -> tf.data.Dataset:
    # The same shuffled stream as train_dataset's; enumerate numbers it before the skip.
    # Under FILE each worker numbers its own stream, and position p of worker w is keyed
    # p * W + w: no two examples of any worker share a key (numbering per worker alone would
    # give the workers' examples at one position the same transformation), a resumed worker
    # (which skips its share, stream_skip) keys as before, and on one stream (W = 1, and every
    # DATA worker, which runs the global stream) the key is the position as it always was.
    # A key from the record itself (a hash) would repeat an example's transformation every
    # epoch, and the decoded cache no longer holds the record's bytes.
    parse = _parse_image_fn(image_shape, spec)
    if decode_first:
        stream = records.map(parse, num_parallel_calls=tf.data.AUTOTUNE,
                             deterministic=True).cache()
    else:
        stream = records
    stream = stream.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True).repeat()
    stream = stream.enumerate().skip(skip_examples)

    def key(position):
        return position * num_workers + worker if num_workers > 1 else position

    def transform(position, element):  # element: a decoded example, or a serialized record
        return augment_fn(key(position), *(element if decode_first else parse(element)))

    return (stream.map(transform, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
            .batch(global_batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE))


def eval_dataset(file_pattern: str, batch_size: int, image_shape,
                 spec: inputs.InputSpec = inputs.InputSpec()) -> tf.data.Dataset:
    """One pass over the split, the last batch possibly partial, so every example counts once."""
    return _one_pass(_records(file_pattern), batch_size, image_shape, spec)


def held_out_dataset(file_pattern: str, held_out_percent: float, batch_size: int, image_shape,
                     spec: inputs.InputSpec = inputs.InputSpec()) -> tf.data.Dataset:
    """One pass over the train split's held-out slice, like eval_dataset (never augmented)."""
    records = _records(file_pattern).filter(lambda r: _held_out(r, held_out_percent))
    return _one_pass(records, batch_size, image_shape, spec)


def train_sample_dataset(file_pattern: str, held_out_percent: float, sample_percent: int,
                         batch_size: int, image_shape,
                         spec: inputs.InputSpec = inputs.InputSpec()) -> tf.data.Dataset:
    """One pass over sample_percent of the train split, all held in, unaugmented, like
    held_out_dataset: what the model fits, scored as the held-out slice is (flip_choice.py).
    Chosen by the held-out slice's hash (the buckets just above it), so it is spread over every
    class and file as the slice is; the first records of the split may all be of one class."""
    records = _records(file_pattern).filter(lambda r: tf.logical_and(
        _bucket(r) >= _below(held_out_percent),
        _bucket(r) < _below(held_out_percent + sample_percent)))
    return _one_pass(records, batch_size, image_shape, spec)


def mirrored(batches: tf.data.Dataset) -> tf.data.Dataset:
    """Image batches (eval_dataset's, held_out_dataset's) mirrored left-right, labels kept: what
    flip_choice.py scores to see whether mirroring keeps the labels."""
    return batches.map(lambda images, labels: (tf.image.flip_left_right(images), labels))
