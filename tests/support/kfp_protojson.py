"""The JSON that KFP's driver and launcher write, for their Python stand-ins (built on
kfp_go_json.py, Go's encoding/json rules shared with kfp_argo_compiler.py).

- protojson(message): google.golang.org/protobuf/encoding/protojson Marshal (what the driver puts
  in the pod spec patch as --executor_input and --component_spec, what the launcher substitutes
  for `{{$}}`): fields in field-number order under their JSON names, map entries and Struct
  fields sorted by key (protojson's order.GenericKeyOrder), proto3 defaults left out, int64 as
  strings, enums by name, numbers as internal/encoding/json appendFloat writes them. protojson
  also inserts a space after some separators at random ("unstable" on purpose,
  internal/detrand); this writes none, so compare such texts as parsed JSON, not as bytes.
- go_json(value): encoding/json Marshal of maps and slices built in Go struct field order (the
  pod spec patch, k8s.io/api core/v1 PodSpec): compact, `<`, `>`, `&`, U+2028 and U+2029
  escaped as \\u003c ... (encoding/json's HTMLEscape default).
- format_float(x, 'f'): strconv.FormatFloat(x, 'f', -1, 64) (PbValueToText, the launcher's
  number placeholders).
Test support only.
"""
import decimal
import json
import math

from google.protobuf import json_format

import kfp_go_json

_WKT_MAPS = ('google.protobuf.Struct',)
_WKT_VALUES = ('google.protobuf.Value', 'google.protobuf.ListValue')


def path_error(op: str, path: str, error: OSError) -> str:
    """How Go's *fs.PathError prints: "open /x: no such file or directory"."""
    return f'{op} {path}: {(error.strerror or str(error)).lower()}'


def format_float(number: float, fmt: str = 'f') -> str:
    """strconv.FormatFloat(number, fmt, -1, 64) for fmt 'f' (shortest digits, no exponent)."""
    assert fmt == 'f'
    if math.isnan(number) or math.isinf(number):
        return {'nan': 'NaN', 'inf': '+Inf', '-inf': '-Inf'}[repr(number)]
    text = format(decimal.Decimal(repr(number)).normalize(), 'f')
    return '-0' if text == '0' and math.copysign(1.0, number) < 0 else text


def _encode(value, html: bool) -> str:
    """encoding/json (html: its HTMLEscape default) or protojson (no HTML escaping) of decoded
    JSON whose dicts are already in the order to write."""
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return kfp_go_json.go_float(value)
    if isinstance(value, str):
        if html:
            return kfp_go_json._go_string(value)  # pylint: disable=protected-access
        text = json.dumps(value, ensure_ascii=False)
        return text.replace('\u2028', '\\u2028').replace('\u2029', '\\u2029')
    if isinstance(value, dict):
        return '{' + ','.join(f'{_encode(str(k), html)}:{_encode(v, html)}'
                              for k, v in value.items()) + '}'
    if isinstance(value, (list, tuple)):
        return '[' + ','.join(_encode(v, html) for v in value) + ']'
    raise TypeError(type(value))


def go_json(value) -> str:
    """encoding/json Marshal of `value` (dicts keep the order given: Go struct field order)."""
    return _encode(value, html=True)


def _order(descriptor, data):
    """`data` (MessageToDict of a message of `descriptor`) with map entries sorted by key."""
    name = descriptor.full_name
    if name in _WKT_MAPS:
        return sort_all(data)
    if name in _WKT_VALUES:
        return sort_all(data)
    if not isinstance(data, dict):
        return data
    fields = {f.json_name: f for f in descriptor.fields}
    out = {}
    for key, value in data.items():
        field = fields.get(key)
        if field is None or field.message_type is None:
            out[key] = value
            continue
        message = field.message_type
        if message.GetOptions().map_entry:
            value_field = message.fields_by_name['value']
            out[key] = {k: (_order(value_field.message_type, v) if value_field.message_type
                            else v) for k, v in sorted(value.items())}
        elif field.label == field.LABEL_REPEATED:
            out[key] = [_order(message, item) for item in value]
        else:
            out[key] = _order(message, value)
    return out


def sort_all(data):
    if isinstance(data, dict):
        return {k: sort_all(v) for k, v in sorted(data.items())}
    if isinstance(data, list):
        return [sort_all(v) for v in data]
    return data


def protojson_value(message):
    """The JSON value protojson writes for `message`, as Python data in protojson's order."""
    data = json_format.MessageToDict(message, preserving_proto_field_name=False)
    return _order(message.DESCRIPTOR, data)


def protojson(message) -> str:
    """protojson.Marshal(message), compact (see the module docstring)."""
    return _encode(protojson_value(message), html=False)
