"""tf.data input pipelines over the ingested TFRecord shards (no TFX imports)."""
import tensorflow as tf

from components.common import features


def _parse_fn(image_shape):
    height, width, channels = image_shape

    def parse(serialized):
        parsed = tf.io.parse_single_example(serialized, features.PARSE_SPEC)
        image = features.decode_image(parsed[features.IMAGE_KEY], height, width, channels)
        return image, tf.cast(parsed[features.LABEL_KEY], tf.int32)
    return parse


def _records(file_pattern: str) -> tf.data.Dataset:
    # Sorted file order (shuffle=False) keeps the pipeline deterministic for a given seed.
    files = tf.data.Dataset.list_files(file_pattern, shuffle=False)
    return files.interleave(
        lambda f: tf.data.TFRecordDataset(f, compression_type='GZIP'),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def _shard_by_data(dataset: tf.data.Dataset) -> tf.data.Dataset:
    # Under multi-worker training each worker keeps its slice of every global batch, so the
    # global batches are the same as on one machine (file sharding would change them).
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return dataset.with_options(options)


def train_dataset(file_pattern: str, global_batch_size: int, image_shape, seed: int,
                  skip_examples: int = 0, cache_decoded: bool = False,
                  shuffle_buffer: int = 10_000) -> tf.data.Dataset:
    """An endless, shuffled stream of (image, label) batches of exactly global_batch_size.

    drop_remainder keeps every micro-batch at the global batch, which the loss normalisation
    assumes. skip_examples drops that many examples of the (deterministic) shuffled stream,
    which is how a resumed run continues where the interrupted one stopped. cache_decoded keeps
    the decoded split in memory after the first pass (for splits that fit), so later epochs
    spend no CPU on decoding: on a small machine that CPU is taken from the model's compute.
    """
    parse = _parse_fn(image_shape)
    if cache_decoded:
        stream = _records(file_pattern).map(parse, num_parallel_calls=tf.data.AUTOTUNE,
                                            deterministic=True).cache()
    else:
        stream = _records(file_pattern)
    stream = stream.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True).repeat()
    if skip_examples:
        stream = stream.skip(skip_examples)
    if not cache_decoded:  # decode after skipping: a resumed run does not decode skipped data
        stream = stream.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return _shard_by_data(stream.batch(global_batch_size, drop_remainder=True)
                          .prefetch(tf.data.AUTOTUNE))


def eval_dataset(file_pattern: str, batch_size: int, image_shape) -> tf.data.Dataset:
    """One pass over the split, the last batch possibly partial, so every example counts once."""
    return _shard_by_data(
        _records(file_pattern)
        .map(_parse_fn(image_shape), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        .batch(batch_size)
        .prefetch(tf.data.AUTOTUNE))
