"""TF Serving warm-up requests, written inside the exported model.

TF Serving replays `assets.extra/tf_serving_warmup_requests` (a TFRecord file of
`PredictionLog`s, at most 1,000 records) when it loads a version, so the graph is initialised
before the first real request instead of during it. The export writes this file into its
temporary folder before the rename (training/export.py), and the Pusher copies the
whole folder into a staged version that it renames into place (core/versions.py):
a half-written warm-up file is never visible.

The requests are the first `WARMUP_EXAMPLES` eval examples in sorted file order (the same
reader as evaluation, so the same examples on every run), one example per request, for each
signature TF Serving is asked on: `serving_default` (Predict, serialized tf.Example),
`classify` (Classify, tf.Example) and, for image models, `predict_images` (Predict, encoded
image bytes). No TFX imports.
"""
import os
from typing import List, Optional, Sequence, Tuple

import tensorflow as tf
from tensorflow_serving.apis import classification_pb2, predict_pb2, prediction_log_pb2

from core import features, inputs

WARMUP_FILE = os.path.join('assets.extra', 'tf_serving_warmup_requests')
WARMUP_EXAMPLES = 8   # requests per signature; TF Serving reads at most 1,000 records


def _image_bytes(serialized: bytes, spec: inputs.InputSpec, image_shape) -> bytes:
    """What a client of `predict_images` sends: the stored encoded bytes, or for raw-pixel
    storage the image encoded as PNG."""
    parsed = tf.io.parse_single_example(serialized, inputs.image_parse_spec(spec))
    if spec.storage != 'raw':
        return parsed[features.IMAGE_KEY].numpy()
    image = inputs.decode_parsed_image(parsed, spec, image_shape)
    return tf.io.encode_png(tf.image.convert_image_dtype(image, tf.uint8)).numpy()


def _predict(signature: str, input_key: str, value: bytes) -> prediction_log_pb2.PredictionLog:
    request = predict_pb2.PredictRequest()
    request.model_spec.signature_name = signature
    request.inputs[input_key].CopyFrom(tf.make_tensor_proto([value], dtype=tf.string))
    return prediction_log_pb2.PredictionLog(
        predict_log=prediction_log_pb2.PredictLog(request=request))


def _classify(signature: str, serialized: bytes) -> prediction_log_pb2.PredictionLog:
    request = classification_pb2.ClassificationRequest()
    request.model_spec.signature_name = signature
    request.input.example_list.examples.add().ParseFromString(serialized)
    return prediction_log_pb2.PredictionLog(
        classify_log=prediction_log_pb2.ClassifyLog(request=request))


def requests(examples: Sequence[bytes], spec: inputs.InputSpec, image_shape,
             predict: Tuple[str, str], classify: str,
             images: Optional[Tuple[str, str]] = None
             ) -> List[prediction_log_pb2.PredictionLog]:
    """One request per example and signature: `predict` and `images` are (signature, input
    key), `classify` the Classify signature's name; `images` only for image models."""
    logs = []
    for serialized in examples:
        logs.append(_predict(*predict, serialized))
        logs.append(_classify(classify, serialized))
        if images:
            logs.append(_predict(*images, _image_bytes(serialized, spec, image_shape)))
    return logs


def first_examples(file_pattern, count: int = WARMUP_EXAMPLES) -> List[bytes]:
    """The first `count` serialized examples of a split, files in sorted order (GZIP shards
    by their `.gz` suffix, as ingestion writes them)."""
    files = sorted(tf.io.gfile.glob(file_pattern) if isinstance(file_pattern, str) else
                   [f for pattern in file_pattern for f in tf.io.gfile.glob(pattern)])
    found: List[bytes] = []
    for path in files:
        compression = 'GZIP' if path.endswith('.gz') else ''
        for record in tf.data.TFRecordDataset(path, compression_type=compression):
            found.append(record.numpy())
            if len(found) == count:
                return found
    return found


def write(model_dir: str, logs: Sequence[prediction_log_pb2.PredictionLog]) -> None:
    path = os.path.join(model_dir, WARMUP_FILE)
    tf.io.gfile.makedirs(os.path.dirname(path))
    with tf.io.TFRecordWriter(path) as writer:
        for log in logs:
            writer.write(log.SerializeToString())
