"""How KFP's Go backend turns messages into text, for kfp_argo_compiler.py: Go's encoding/json
(sorted map keys, no spaces, `<`, `>`, `&`, U+2028/9 escaped, float64 printed by its
floatEncoder), protojson + the round trip of argocompiler/proto.go stablyMarshalJSON, and
encoding/json applied to a generated protobuf Go struct (what argo.go hashValue hashes).
Test support only.

Sources: Go 1.24 src/encoding/json/encode.go (floatEncoder, appendString), google.golang.org/
protobuf encoding/protojson (the same float rule), kubeflow/pipelines 2.17.0
api/v2alpha1/go/pipelinespec/pipeline_spec.pb.go (the struct tags: proto field names,
`omitempty`, declaration order).
"""
import base64
import json
from decimal import Decimal
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor


def go_float(value: float) -> str:
    """encoding/json floatEncoder (bits=64): 'f' format with the shortest digits unless
    |v| < 1e-6 or >= 1e21, then 'e' with `e-07` cleaned to `e-7`."""
    if value != value or value in (float('inf'), float('-inf')):
        raise ValueError(f'json: unsupported value: {value}')
    magnitude = abs(value)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        text = repr(value)  # shortest digits, like strconv 'e' with precision -1
        mantissa, _, exponent = text.partition('e')
        sign, digits = exponent[0], exponent[1:].lstrip('0')
        return f'{mantissa}e{sign}{digits.rjust(2, "0")}'.replace('e-0', 'e-')
    text = format(Decimal(repr(value)), 'f')
    return text.rstrip('0').rstrip('.') if '.' in text else text  # -0.0 prints "-0" in Go


def sprint_float(value: float) -> str:
    """fmt.Sprintf("%v", float64) (argo's AnyStringPtr of a float): the shortest digits, as
    d.ddde±XX when the exponent is < -4 or >= 21 (fmt's threshold for %v), else plainly."""
    number = Decimal(repr(value))
    if not number:
        return repr(value).rstrip('0').rstrip('.')  # "0", "-0"
    sign, digits, exponent = number.normalize().as_tuple()
    scientific = len(digits) + exponent - 1
    if -4 <= scientific < 21:
        text = format(number, 'f')
        return text.rstrip('0').rstrip('.') if '.' in text else text
    mantissa = str(digits[0]) + ('.' + ''.join(map(str, digits[1:])) if len(digits) > 1 else '')
    return (f'{"-" if sign else ""}{mantissa}e{"-" if scientific < 0 else "+"}'
            f'{abs(scientific):02d}')


_ESCAPES = {'<': '\\u003c', '>': '\\u003e', '&': '\\u0026', '\u2028': '\\u2028',
            '\u2029': '\\u2029'}


def _go_string(text: str) -> str:
    out = json.dumps(text, ensure_ascii=False)  # control characters as Go escapes them
    return ''.join(_ESCAPES.get(char, char) for char in out)


def dumps(value: Any, numbers_as_float64: bool = True) -> str:
    """encoding/json.Marshal of a decoded JSON value (maps sorted by key). With
    numbers_as_float64 every number prints as the float64 json.Unmarshal made of it."""
    if value is None:
        return 'null'
    if value is True:
        return 'true'
    if value is False:
        return 'false'
    if isinstance(value, str):
        return _go_string(value)
    if isinstance(value, int):
        return go_float(float(value)) if numbers_as_float64 else str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, dict):
        return '{' + ','.join(f'{_go_string(k)}:{dumps(value[k], numbers_as_float64)}'
                              for k in sorted(value)) + '}'
    if isinstance(value, (list, tuple)):
        return '[' + ','.join(dumps(item, numbers_as_float64) for item in value) + ']'
    raise TypeError(f'json: unsupported type: {type(value).__name__}')


def proto_dict(message) -> dict:
    """protojson.Marshal as a decoded value: JSON names, defaults left out, enums by name,
    64-bit integers as strings (json_format follows the same proto3 JSON mapping)."""
    return json_format.MessageToDict(message)


def stably_marshal_json(message) -> str:
    """argocompiler/proto.go stablyMarshalJSON: protojson.Marshal, json.Unmarshal into an
    interface{}, json.Marshal again (keys sorted, numbers float64)."""
    return dumps(proto_dict(message))


def go_struct_json(message) -> str:
    """encoding/json.Marshal of a generated protobuf struct (argo.go hashValue): fields in
    declaration order under their proto names, each `omitempty` (zero scalars, empty lists and
    maps, nil messages left out), enums and int64 as numbers, bytes as base64. Oneofs (an
    interface field named after the Go oneof, not omitempty) are not transcribed."""
    descriptor = message.DESCRIPTOR
    for oneof in descriptor.oneofs:
        if not oneof.name.startswith('_'):  # proto3 `optional` is a pointer field in Go
            raise NotImplementedError(f'go_struct_json: oneof {descriptor.full_name}.{oneof.name}'
                                      ' (a Go interface field) is not transcribed')
    parts = []
    for field in descriptor.fields:
        value = getattr(message, field.name)
        optional = field.containing_oneof is not None  # Go pointer: present when set
        if field.label == FieldDescriptor.LABEL_REPEATED:
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                raise NotImplementedError(f'go_struct_json: map field {field.full_name}')
            if not value:
                continue
            text = '[' + ','.join(_go_struct_value(field, item) for item in value) + ']'
        elif field.message_type is not None:
            if not message.HasField(field.name):
                continue
            text = _go_struct_value(field, value)
        else:
            if (optional and not message.HasField(field.name)) or (not optional and not value):
                continue
            text = _go_struct_value(field, value)
        parts.append(f'{_go_string(field.name)}:{text}')
    return '{' + ','.join(parts) + '}'


def _go_struct_value(field, value) -> str:
    if field.message_type is not None:
        if field.message_type.full_name.startswith('google.protobuf.'):
            raise NotImplementedError(f'go_struct_json: well-known type in {field.full_name}')
        return go_struct_json(value)
    if field.type == FieldDescriptor.TYPE_BYTES:
        return _go_string(base64.b64encode(value).decode())
    if field.type == FieldDescriptor.TYPE_BOOL:
        return 'true' if value else 'false'
    if field.type == FieldDescriptor.TYPE_STRING:
        return _go_string(value)
    if field.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return go_float(value)
    return str(int(value))  # integers and enums (Go's int32 enum type) as numbers
