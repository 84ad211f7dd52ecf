"""Replays a model's TF Serving warm-up file against the loaded SavedModel, as TF Serving does at
load: run in a process of its own by test_warmup.py. Prints one JSON line per record:
{"signature", "kind", "rows"} where rows is the batch size of the response."""
import json
import os
import sys

import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2


def main(model_dir: str) -> None:
    loaded = tf.saved_model.load(model_dir)
    path = os.path.join(model_dir, 'assets.extra', 'tf_serving_warmup_requests')
    for record in tf.data.TFRecordDataset(path):
        log = prediction_log_pb2.PredictionLog.FromString(record.numpy())
        kind = log.WhichOneof('log_type')
        if kind == 'predict_log':
            request = log.predict_log.request
            inputs = {k: tf.constant(tf.make_ndarray(v)) for k, v in request.inputs.items()}
        else:  # classify_log: the Classify API sends tf.Examples to the 'inputs' tensor
            request = log.classify_log.request
            inputs = {'inputs': tf.constant([e.SerializeToString()
                                             for e in request.input.example_list.examples])}
        outputs = loaded.signatures[request.model_spec.signature_name](**inputs)
        rows = {int(v.shape[0]) for v in outputs.values()}
        print(json.dumps({'signature': request.model_spec.signature_name, 'kind': kind,
                          'rows': sorted(rows)}))


if __name__ == '__main__':
    main(sys.argv[1])
