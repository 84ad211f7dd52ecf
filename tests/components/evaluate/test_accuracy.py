"""The TFMA-native accuracy gives Keras' SparseCategoricalAccuracy, through TFMA's own metric
machinery (the computations the Evaluator builds from the pipeline's eval config)."""
import numpy as np
import pytest
import tf_keras
from tensorflow_model_analysis.metrics import metric_specs, metric_types

from components.evaluate import accuracy
from pipeline.definition import factory
from components.evaluate.params import EvalParams


def _combiner(example_weighted=False):
    """The combiner TFMA builds for the pipeline's accuracy config (as its evaluator would)."""
    eval_config = factory.make_eval_config(EvalParams(min_accuracy=0.5))
    metric = next(m for m in eval_config.metrics_specs[0].metrics
                  if m.class_name == 'SparseCategoricalAccuracy')
    assert metric.module == accuracy.__name__   # not the Keras metric of the same name
    instance = metric_specs.metric_instance(metric)
    assert isinstance(instance, accuracy.SparseCategoricalAccuracy)
    computations = instance.computations(example_weighted=example_weighted)
    assert [c.keys[0].name for c in computations] == [accuracy.NAME]
    return computations[0].combiner


def _inputs(label, prediction, weight=1.0):
    return metric_types.StandardMetricInputs(
        labels=np.array([label]), predictions=np.array(prediction, dtype=np.float32),
        example_weights=np.array([weight]))


def _accumulate(combiner, examples, parts=3):
    """Adds the examples in several accumulators and merges them, as Beam's bundles do."""
    accumulators = [combiner.create_accumulator() for _ in range(parts)]
    for index, example in enumerate(examples):
        accumulators[index % parts] = combiner.add_input(accumulators[index % parts], example)
    return combiner.extract_output(combiner.merge_accumulators(accumulators))


def test_it_equals_keras_sparse_categorical_accuracy_with_ties_and_weights():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, size=200)
    probs = rng.dirichlet(np.ones(4), size=200).astype(np.float32)
    probs[:20] = [0.4, 0.4, 0.1, 0.1]   # ties: the first maximum is the prediction, as in Keras
    labels[:5] = 0                      # the first maximum, so right
    labels[5:20] = 1                    # tied with class 0, so wrong (15 of them: the last
    # maximum taken instead would change the figure)
    weights = rng.uniform(0.5, 2.0, size=200)
    keras_plain = tf_keras.metrics.SparseCategoricalAccuracy()
    keras_plain.update_state(labels, probs)
    keras_weighted = tf_keras.metrics.SparseCategoricalAccuracy()
    keras_weighted.update_state(labels, probs, sample_weight=weights)

    plain = _accumulate(_combiner(), [_inputs(label, p) for label, p in zip(labels, probs)])
    weighted = _accumulate(_combiner(example_weighted=True),
                           [_inputs(label, p, w) for label, p, w in zip(labels, probs, weights)])
    assert list(plain.values())[0] == pytest.approx(float(keras_plain.result()), abs=1e-6)
    assert list(weighted.values())[0] == pytest.approx(float(keras_weighted.result()), abs=1e-6)
    assert 0.1 < list(plain.values())[0] < 0.5   # random guesses: neither all right nor none


def test_no_examples_give_zero_as_keras_does():
    combiner = _combiner()
    assert list(combiner.extract_output(combiner.create_accumulator()).values()) == [0.0]
    assert float(tf_keras.metrics.SparseCategoricalAccuracy().result()) == 0.0


def test_a_dense_label_or_a_binarized_spec_is_refused_with_its_reason():
    with pytest.raises(ValueError, match='one integer label per example'):
        _combiner().add_input(_combiner().create_accumulator(),
                              _inputs([0, 1, 0], [0.2, 0.7, 0.1]))
    with pytest.raises(ValueError, match='binarize and aggregate settings do not apply'):
        accuracy.SparseCategoricalAccuracy().computations(
            sub_keys=[metric_types.SubKey(class_id=1)])
