"""The trainer's TrainResult on the Model artifact: the one place it is recorded in ML Metadata.

Names and value types are TrainResult.to_properties' (training/result.py): the run summary and
the report read them back with TrainResult.from_properties.
"""
from tfx import types

from training.result import TrainResult


def record(model: types.Artifact, result: TrainResult) -> None:
    """Sets each recorded field of `result` as a custom property of `model`."""
    for name, value in result.to_properties().items():
        if isinstance(value, str):
            model.set_string_custom_property(name, value)
        elif isinstance(value, int):
            model.set_int_custom_property(name, value)
        else:
            model.set_float_custom_property(name, value)
