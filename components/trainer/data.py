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


def train_dataset(file_pattern: str, global_batch_size: int, image_shape, seed: int,
                  shuffle_buffer: int = 10_000) -> tf.data.Dataset:
    """An endless, shuffled stream of (image, label) batches of exactly global_batch_size.

    drop_remainder keeps every step at the global batch, which the loss normalisation assumes.
    """
    return (_records(file_pattern)
            .shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
            .repeat()
            .map(_parse_fn(image_shape), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
            .batch(global_batch_size, drop_remainder=True)
            .prefetch(tf.data.AUTOTUNE))


def eval_dataset(file_pattern: str, batch_size: int, image_shape) -> tf.data.Dataset:
    """One pass over the split, the last batch possibly partial, so every example counts once."""
    return (_records(file_pattern)
            .map(_parse_fn(image_shape), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
            .batch(batch_size)
            .prefetch(tf.data.AUTOTUNE))
