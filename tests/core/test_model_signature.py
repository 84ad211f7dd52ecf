"""Unit tests of model descriptions: what the export writes, and when two models differ."""
import json
import os

from core import inputs, model_signature
from training import export
from models import mlp

import saved_models

IMAGES = inputs.InputSpec()


def _table(numeric=('alcohol', 'ash'), categorical=()):
    return inputs.InputSpec(kind='tabular', numeric=tuple((c, 0.0, 1.0) for c in numeric),
                            categorical=tuple(categorical))


def test_the_export_writes_the_description_beside_the_model(tmp_path):
    model = saved_models.exported_model(tmp_path / 'm', ['cat', 'dog'], image_shape=(28, 28, 3))
    folder = os.path.join(model.uri, 'Format-Serving')
    with open(os.path.join(folder, 'assets.extra', 'model_signature.json')) as handle:
        written = json.load(handle)
    assert written == {'class_names': ['cat', 'dog'], 'num_classes': 2, 'input': {
        'kind': 'image', 'height': 28, 'width': 28, 'channels': 3, 'storage': 'encoded'}}
    assert model_signature.read(folder) == written


def test_a_table_model_describes_its_columns_and_an_older_one_its_kind(tmp_path):
    spec = _table(('alcohol', 'ash'), ('region',))
    model = mlp.build_model(inputs.builder_input_shape(spec, (8, 8, 1)), 3)
    folder = export.export_serving_model(model, str(tmp_path / 'm'), (8, 8, 1), 'xyz', spec)
    assert model_signature.read(folder) == {'class_names': ['x', 'y', 'z'], 'num_classes': 3,
                                            'input': {'kind': 'tabular',
                                                      'numeric': ['alcohol', 'ash'],
                                                      'categorical': ['region']}}
    os.remove(os.path.join(folder, model_signature.SIGNATURE_FILE))
    assert model_signature.read(folder) == {'num_classes': 3, 'input': {'kind': 'tabular'}}


def test_an_older_export_still_tells_class_count_and_input_kind(tmp_path):
    model = saved_models.exported_model(tmp_path / 'm', list('abcd'))
    folder = os.path.join(model.uri, 'Format-Serving')
    os.remove(os.path.join(folder, model_signature.SIGNATURE_FILE))
    assert model_signature.read(folder) == {'num_classes': 4, 'input': {'kind': 'image'}}


def test_same_classes_and_input_are_compatible():
    a = model_signature.describe(['x', 'y'], (8, 8, 1), IMAGES)
    assert model_signature.incompatibility(a, dict(a)) is None


def test_class_names_and_their_order_matter():
    served = model_signature.describe([str(d) for d in range(10)], (8, 8, 1), IMAGES)
    four = model_signature.describe(['a', 'b', 'c', 'd'], (8, 8, 1), IMAGES)
    assert model_signature.incompatibility(served, four) == (
        "served model predicts classes ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']; "
        "this model predicts ['a', 'b', 'c', 'd']")
    swapped = model_signature.describe(['y', 'x'], (8, 8, 1), IMAGES)
    assert model_signature.incompatibility(
        model_signature.describe(['x', 'y'], (8, 8, 1), IMAGES), swapped) is not None


def test_long_class_lists_are_shortened():
    many = model_signature.describe([f'c{i}' for i in range(100)], (8, 8, 1), IMAGES)
    few = model_signature.describe(['a'], (8, 8, 1), IMAGES)
    reason = model_signature.incompatibility(many, few)
    assert "'c11', ... (100 classes)]; this model predicts ['a']" in reason
    assert "'c12'" not in reason


def test_image_size_channels_and_storage_are_part_of_the_input():
    served = model_signature.describe(['a'], (8, 8, 1), IMAGES)
    assert model_signature.incompatibility(
        served, model_signature.describe(['a'], (8, 8, 3), IMAGES)) == (
        'served model takes 8×8×1 images; this model takes 8×8×3 images')
    raw = inputs.InputSpec(storage='raw', channels=1)
    assert model_signature.incompatibility(
        served, model_signature.describe(['a'], (8, 8, 1), raw)) == (
        'served model takes 8×8×1 images; this model takes 8×8×1 images stored as raw pixels')


def test_table_columns_matter_by_name_and_kind_not_by_order():
    served = model_signature.describe(['a', 'b'], (1, 1, 1), _table())
    reordered = model_signature.describe(['a', 'b'], (1, 1, 1), _table(('ash', 'alcohol')))
    assert model_signature.incompatibility(served, reordered) is None
    other = model_signature.describe(['a', 'b'], (1, 1, 1), _table(('ash',), ('region',)))
    assert model_signature.incompatibility(served, other) == (
        'served model takes table columns [alcohol, ash]; '
        'this model takes table columns [ash, region (categorical)]')
    image = model_signature.describe(['a', 'b'], (8, 8, 1), IMAGES)
    assert model_signature.incompatibility(image, served) == (
        'served model takes 8×8×1 images; this model takes table columns [alcohol, ash]')


def test_classes_and_input_both_differing_give_both_reasons():
    served = model_signature.describe(['a'], (8, 8, 1), IMAGES)
    other = model_signature.describe(['b'], (16, 16, 1), IMAGES)
    assert model_signature.incompatibility(served, other).count('; ') == 3


def test_an_unreadable_graph_is_unknown_and_blocks_nothing(tmp_path):
    (tmp_path / 'saved_model.pb').write_bytes(b'\xff\xff not a graph')
    unknown = model_signature.read(str(tmp_path))
    assert unknown == {}
    assert model_signature.incompatibility(
        unknown, model_signature.describe(['a'], (8, 8, 1), IMAGES)) is None
