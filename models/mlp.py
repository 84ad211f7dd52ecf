"""A small MLP over a table's numeric and categorical columns: the default builder for CSV data.

The builder contract is the same as for images (see models/resnet.py): a function
`(input_shape, num_classes) -> keras.Model` with float32 logits. For a table, `input_shape` is
a dict with 'numeric': (n,) and/or 'categorical': (m,), matching the model-input dict that
`core/inputs.py` builds: standardised floats (an empty value imputed with the train
mean) followed by one 0/1 missing-value indicator per column that had empty values, and one hash
bucket per categorical column. Each categorical column gets its own slice of one embedding table.
"""
from typing import Mapping, Sequence

import keras
from keras import layers

from core.inputs import CATEGORICAL_BUCKETS

EMBEDDING_SIZE = 8


def build_model(input_shape: Mapping[str, Sequence[int]], num_classes: int,
                hidden: Sequence[int] = (64, 64), dropout: float = 0.1) -> keras.Model:
    """Numeric values and embedded categories, concatenated, through ReLU layers to logits."""
    model_inputs, parts = {}, []
    if 'numeric' in input_shape:
        model_inputs['numeric'] = keras.Input(shape=tuple(input_shape['numeric']), name='numeric')
        parts.append(model_inputs['numeric'])
    if 'categorical' in input_shape:
        (columns,) = input_shape['categorical']
        ids = keras.Input(shape=(columns,), dtype='int64', name='categorical')
        model_inputs['categorical'] = ids
        # Column i's buckets are rows [i*B, (i+1)*B) of the table: no collisions across columns.
        offsets = keras.ops.arange(columns, dtype='int64') * CATEGORICAL_BUCKETS
        embedded = layers.Embedding(columns * CATEGORICAL_BUCKETS, EMBEDDING_SIZE)(ids + offsets)
        parts.append(layers.Flatten()(embedded))
    if not parts:
        raise ValueError(f'input_shape has neither numeric nor categorical columns: {input_shape}')
    x = parts[0] if len(parts) == 1 else layers.Concatenate()(parts)
    for width in hidden:
        x = layers.Dense(width, activation='relu')(x)
        x = layers.Dropout(dropout)(x)
    logits = layers.Dense(num_classes, dtype='float32', name='logits')(x)
    return keras.Model(model_inputs, logits, name='tabular_mlp')
