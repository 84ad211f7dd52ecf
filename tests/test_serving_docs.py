"""docs/serving.md's REST bodies, read from the page and run against exported SavedModels.

Each `POST /v1/models/<model>:<verb>` line followed by a JSON block is one request. Its
placeholders are filled (a PNG, a serialized tf.Example), it is converted as TF Serving
converts JSON (tests/support/tf_serving_json.py) and fed to the signature it names, of a model
exported by the trainer's own export: `digits` is an image model (saved_models.py's brightness
classifier), `wine` a table model. The answer is converted back to TF Serving's JSON.
"""
import base64
import copy
import json
import os
import re

import pytest
import tensorflow as tf

import saved_models
import tf_serving_json as rest
from core import features, inputs
from training import export
from helpers import REPO_ROOT
from models import mlp

PAGE = os.path.join(REPO_ROOT, 'docs', 'serving.md')
IMAGE_CLASSES = ('dark', 'bright')
WINE_CLASSES = ('class_0', 'class_1', 'class_2')
WINE = inputs.InputSpec(kind='tabular', numeric=(
    ('alcohol', 13.0, 0.8), ('malic_acid', 2.3, 1.1), ('ash', 2.4, 0.3),
    ('magnesium', 99.7, 14.3)))
PNG = saved_models.png(0.05)   # a dark image: the brightness model says 'dark'


def _requests():
    text = open(PAGE, encoding='utf-8').read()
    found = re.findall(r'^POST /v1/models/(\w+):(\w+)\n```json\n(.*?)\n```', text, re.M | re.S)
    return [(model, verb, json.loads(body)) for model, verb, body in found]


@pytest.fixture(scope='module')
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp('rest')
    digits = export.export_serving_model(
        saved_models.brightness_model((8, 8, 1), [0.1, 0.9]), str(root / 'digits'), (8, 8, 1),
        IMAGE_CLASSES)
    wine = export.export_serving_model(
        mlp.build_model(inputs.builder_input_shape(WINE, (8, 8, 1)), len(WINE_CLASSES)),
        str(root / 'wine'), (8, 8, 1), WINE_CLASSES, WINE)
    return {'digits': tf.saved_model.load(digits), 'wine': tf.saved_model.load(wine)}


def _fill(value):
    """The page's placeholders, replaced by real content."""
    if isinstance(value, dict):
        return {k: _fill(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v) for v in value]
    if value == '<base64 of a PNG>':
        return base64.b64encode(PNG).decode()
    if value == '<base64 of a serialized tf.Example>':
        example = features.make_example(PNG, None, None, 8, 8, 'night.png')
        return base64.b64encode(example.SerializeToString()).decode()
    return value


def _call(model, verb, body):
    """What TF Serving would answer (as JSON) to this body."""
    if verb == 'classify':
        signature, examples = rest.classify_examples(body)
        outputs = model.signatures[signature](
            inputs=tf.constant([e.SerializeToString() for e in examples]))
        return rest.classify_response(outputs, len(examples))
    signature_name = body.get('signature_name', rest.DEFAULT_SIGNATURE)
    signature = model.signatures[signature_name]
    specs = signature.structured_input_signature[1]
    _, tensors = rest.predict_inputs(body, {n: s.dtype for n, s in specs.items()})
    return rest.predict_response(signature(**tensors))


def test_the_page_has_one_request_per_signature():
    assert [(model, verb, body.get('signature_name', 'serving_default'))
            for model, verb, body in _requests()] == [
        ('digits', 'predict', 'predict_images'), ('digits', 'predict', 'serving_default'),
        ('digits', 'classify', 'classify'), ('wine', 'classify', 'classify')]


@pytest.mark.parametrize('index', range(4))
def test_each_request_is_answered_as_the_page_says(models, index):
    model, verb, body = _requests()[index]
    answer = json.loads(json.dumps(_call(models[model], verb, _fill(body))))
    if verb == 'predict':
        (prediction,) = answer['predictions']
        assert prediction['class_names'] == ['dark'] and prediction['class_ids'] == 0
        assert sum(prediction['probabilities']) == pytest.approx(1.0, abs=1e-5)
    else:
        (result,) = answer['results']
        classes = IMAGE_CLASSES if model == 'digits' else WINE_CLASSES
        assert [label for label, _ in result] == list(classes)
        assert sum(score for _, score in result) == pytest.approx(1.0, abs=1e-5)
        if model == 'digits':
            assert max(result, key=lambda pair: pair[1])[0] == 'dark'


def test_an_integer_for_a_numeric_column_is_refused_as_the_page_warns(models):
    _, _, body = _requests()[3]
    wrong = copy.deepcopy(body)
    wrong['examples'][0]['magnesium'] = 100   # no decimal point: an int64 feature
    with pytest.raises(tf.errors.InvalidArgumentError):
        _call(models['wine'], 'classify', wrong)
