"""TF Serving's REST layer, transcribed for tests: JSON request bodies to the tensors and
tf.Examples TF Serving would hand a signature, and the signature's outputs to the JSON it
would answer. No TF Serving binary could be installed here; this follows
tensorflow_serving/util/json_tensor.cc (FillPredictRequestFromJson,
FillClassificationRequestFromJson, MakeJsonFromTensors, MakeJsonFromClassificationResult)
and servables/tensorflow/classifier.cc (PostProcessClassificationResult), only as far as the
project's signatures need: string and numeric inputs, no `context` in Classify requests.
"""
import base64
from typing import Dict, List, Tuple

import numpy as np
import tensorflow as tf

DEFAULT_SIGNATURE = 'serving_default'


class RestError(ValueError):
    """What TF Serving would answer with an `error` (InvalidArgument)."""


def _string(value) -> bytes:
    # json_tensor.cc JsonDecodeBase64Object: an object with exactly one key, "b64", a string.
    if isinstance(value, dict):
        if list(value) != ['b64'] or not isinstance(value['b64'], str):
            raise RestError(f'JSON Value: {value} not formatted correctly for base64 data')
        return base64.b64decode(value['b64'], validate=True)
    if not isinstance(value, str):
        raise RestError(f'JSON Value: {value} is not of expected type: string')
    return value.encode('utf-8')


def predict_inputs(body: dict, inputs: Dict[str, tf.dtypes.DType]
                   ) -> Tuple[str, Dict[str, tf.Tensor]]:
    """(signature name, input tensors) of a Predict body, for a signature whose inputs are
    `inputs` (name -> dtype). Row format ("instances") and columnar ("inputs")."""
    signature = body.get('signature_name', DEFAULT_SIGNATURE)
    if ('instances' in body) == ('inputs' in body):
        raise RestError('Missing \'inputs\' or \'instances\' key')
    if 'instances' in body:
        rows = body['instances']
        if len(inputs) == 1:   # one named input: the items are its values
            columns = {next(iter(inputs)): rows}
        else:                  # several: one object per instance, a key per input
            columns = {name: [row[name] for row in rows] for name in inputs}
    else:
        given = body['inputs']
        columns = given if isinstance(given, dict) else {next(iter(inputs)): given}
    tensors = {}
    for name, values in columns.items():
        if name not in inputs:
            raise RestError(f'JSON object: does not have named input: {name}')
        if inputs[name] == tf.string:
            tensors[name] = tf.constant([_string(v) for v in values], tf.string)
        else:
            tensors[name] = tf.constant(values, inputs[name])
    return signature, tensors


def _feature(name: str, value) -> tf.train.Feature:
    """json_tensor.cc AddValueToFeature: one kind per feature; a JSON number with a decimal
    point (a Python float) is a float, without one an int64; text and b64 are bytes."""
    values = value if isinstance(value, list) else [value]
    kinds = set()
    for item in values:
        if item is None or isinstance(item, list):
            raise RestError(f'Feature: {name} has element with unexpected JSON type')
        if isinstance(item, bool) or isinstance(item, int):
            kinds.add('int64')
        elif isinstance(item, float):
            kinds.add('float')
        else:
            kinds.add('bytes')
    if len(kinds) > 1:
        raise RestError(f'Unexpected element type in feature: {name}')
    kind = kinds.pop() if kinds else 'bytes'
    if kind == 'int64':
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))
    if kind == 'float':
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[_string(v) for v in values]))


def classify_examples(body: dict) -> Tuple[str, List[tf.train.Example]]:
    """(signature name, Examples) of a Classify body."""
    if 'context' in body:
        raise NotImplementedError('context is not transcribed (the project sends none)')
    examples = body.get('examples')
    if not isinstance(examples, list) or not examples:
        raise RestError("When method is classify, key 'examples' is expected as a non-empty "
                        'list')
    return body.get('signature_name', DEFAULT_SIGNATURE), [
        tf.train.Example(features=tf.train.Features(feature={
            name: _feature(name, value) for name, value in example.items()}))
        for example in examples]


def classify_response(outputs: Dict[str, tf.Tensor], num_examples: int) -> dict:
    """classifier.cc's checks on `classes` and `scores`, then the JSON TF Serving answers."""
    classes, scores = outputs.get('classes'), outputs.get('scores')
    if classes is None and scores is None:
        raise RestError('Expected classification outputs "classes" and/or "scores"')
    for tensor, dtype in ((classes, tf.string), (scores, tf.float32)):
        if tensor is not None and (tensor.shape.rank != 2 or tensor.dtype != dtype
                                   or tensor.shape[0] != num_examples):
            raise RestError(f'Expected Tensor shape: [batch_size num_classes] of {dtype.name}, '
                            f'got {tensor.shape} {tensor.dtype.name}')
    if classes is not None and scores is not None and classes.shape != scores.shape:
        raise RestError('Tensors class and score should match in shape')
    return {'results': [
        [[label.decode('utf-8'), float(score)] for label, score in zip(labels, values)]
        for labels, values in zip(classes.numpy(), scores.numpy())]}


def predict_response(outputs: Dict[str, tf.Tensor]) -> dict:
    """MakeRowFormatJsonFromTensors: one object per batch row (several outputs); strings are
    written as text unless the output's name ends in `_bytes`."""
    batch = {int(t.shape[0]) for t in outputs.values()}
    if len(batch) != 1:
        raise RestError(f'inconsistent batch sizes {sorted(batch)}')

    def value(name, array):
        if isinstance(array, np.ndarray):
            return [value(name, item) for item in array]
        if isinstance(array, bytes):
            if name.endswith('_bytes'):
                return {'b64': base64.b64encode(array).decode()}
            return array.decode('utf-8')
        return array.item() if hasattr(array, 'item') else array

    arrays = {name: tensor.numpy() for name, tensor in outputs.items()}
    return {'predictions': [{name: value(name, array[row]) for name, array in arrays.items()}
                            for row in range(batch.pop())]}
