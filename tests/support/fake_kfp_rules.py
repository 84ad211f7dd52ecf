"""What KFP's API server checks, transcribed for fake_kfp_server.py: the upload's template parse,
the pipeline name rule, robfig/cron v1's parser, and multi-user authorization. Test support only.

Sources: kubeflow/pipelines master (VERSION 2.17.0), backend/src/apiserver/..., and
github.com/robfig/cron v1.2.0 (the version KFP's go.mod pins). Each rule names its function.
A refusal is a KfpError carrying the gRPC code and the two messages the server keeps: the
external one (what details[0].message and the upload's error_message show) and the internal
chain (what the gateway's top-level "message" shows, Go's wrapped errors joined by ": ").
"""
import json
import re

import yaml
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

# grpc-gateway runtime.HTTPStatusFromCode, for the codes the server's UserErrors use.
HTTP_STATUS = {'InvalidArgument': (3, 400), 'Unauthenticated': (16, 401),
               'PermissionDenied': (7, 403), 'NotFound': (5, 404), 'AlreadyExists': (6, 409),
               'Internal': (13, 500)}


class KfpError(Exception):
    def __init__(self, code: str, external: str, internal: str = None):
        super().__init__(external)
        self.code, self.external = code, external
        # common/util/error.go NewInvalidInputError: internal "Invalid input error: <message>".
        self.internal = internal or {'InvalidArgument': 'Invalid input error: '}.get(
            code, f'{code}: ') + external

    def wrap(self, message: str) -> 'KfpError':
        """util.Wrap: the internal chain grows, the external message and code stay."""
        self.internal = f'{message}: {self.internal}'
        return self


def invalid(message: str) -> KfpError:
    return KfpError('InvalidArgument', message)


def not_found(kind: str, name: str) -> KfpError:
    # common/util/error.go NewResourceNotFoundError
    return KfpError('NotFound', f'{kind} {name} not found')


def _is_pipeline_spec(document) -> bool:
    """template.go isPipelineSpec: protojson.Unmarshal (unknown fields are errors), then a
    non-empty pipelineInfo.name and a root. A PipelineJob wrapper fails here."""
    spec = pipeline_spec_pb2.PipelineSpec()
    try:
        json_format.ParseDict(document, spec, ignore_unknown_fields=False)
    except (json_format.ParseError, TypeError, ValueError, AttributeError):
        return False
    return bool(spec.pipeline_info.name) and spec.HasField('root')


def _is_kubernetes_platform_spec(document) -> bool:
    """v2_template.go IsPlatformSpecWithKubernetesConfig: protojson.Unmarshal into a PlatformSpec
    (unknown fields are errors, so `platform:` for `platforms:` fails), then a `kubernetes`
    platform. The executors' configs are Structs here: not checked until a run is compiled
    (check_kubernetes_configs)."""
    platform = pipeline_spec_pb2.PlatformSpec()
    try:
        json_format.ParseDict(document, platform, ignore_unknown_fields=False)
    except (json_format.ParseError, TypeError, ValueError, AttributeError):
        return False
    return 'kubernetes' in platform.platforms


def parse_template(data: bytes):
    """template.go New -> inferTemplateFormat -> v2_template.go NewV2SpecTemplate. Returns
    (PipelineSpec, PlatformSpec or None) as dicts. YAML or JSON, several documents allowed: one
    PipelineSpec, and at most one PlatformSpec with a `kubernetes` platform (how kfp's compiler
    writes platform-specific features: a second YAML document); a document that is neither is
    skipped without a word. Not modelled: v1 Argo workflows (isArgoWorkflow)."""
    try:
        documents = [d for d in yaml.safe_load_all(data) if isinstance(d, dict)]
    except yaml.YAMLError as error:
        raise invalid(f'failed to parse pipeline spec YAML: {error}')
    specs = [d for d in documents if _is_pipeline_spec(d)]
    if not specs:
        raise invalid('unknown template format')
    # NewV2SpecTemplate's loop, in document order: a second spec or a second platform spec is
    # refused when it is met.
    spec = platform = None
    for document in documents:
        if _is_pipeline_spec(document):
            if spec is not None:
                raise invalid('multiple pipeline specs provided')
            spec = document
            version = spec.get('schemaVersion', spec.get('schema_version', ''))
            if version != '2.1.0':  # SCHEMA_VERSION_2_1_0
                raise invalid('KFP only supports schema version 2.1.0, but the pipeline spec '
                              f'has version {version}')
            # Unanchored regexp.MatchString: any lowercase letter or digit somewhere passes.
            if not re.search(r'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*',
                             spec_name(spec)):
                raise invalid("invalid v2 pipeline spec: name should consist of lower case "
                              "alphanumeric characters, '-' or '.', and must start and end with "
                              "an alphanumeric character")
        elif _is_kubernetes_platform_spec(document):
            if platform is not None:
                raise invalid('multiple platform specs provided')
            platform = document
    return spec, platform


def stored_spec(spec: dict, platform) -> dict:
    """A version's pipeline_spec as the API shows it (api_converter.go toApiPipelineVersion ->
    api_util.go YamlStringToPipelineSpecStruct): the spec itself, or with a platform spec both
    as fields `pipeline_spec` and `platform_spec`."""
    return spec if platform is None else {'pipeline_spec': spec, 'platform_spec': platform}


def check_kubernetes_configs(stored: dict) -> None:
    """What compiling a recurring run from the stored spec refuses (resource_manager.go CreateJob
    -> v2_template.go ScheduledWorkflow -> argocompiler.Compile): the spec is compiled by the
    transcription kfp_argo_compiler (compared with KFP 2.17.0's own compiler), so a platform
    spec the real compiler refuses, e.g. an executor config that does not parse strictly as a
    KubernetesExecutorConfig, is refused with its chain: `Failed to create a recurring run
    during scheduled workflow creation: Failed to compile job: compiling DAG "root": compiling
    task "T": error creating executor for "T": failed to unmarshal kubernetes config: ...`. A
    plain Go error, so code Internal and "Internal error: ..." outside (util/error.go
    ToGRPCError); the Go stack trace %+v adds is not imitated. The parameters are not checked
    here (ScheduledWorkflow's validatePipelineJobInputs): the recurring runs we create pass none.
    """
    if 'platform_spec' not in stored:
        return
    import kfp_argo_compiler  # it reads uploads through this module
    import kfp_argo_templates
    spec = json_format.ParseDict(stored['pipeline_spec'], pipeline_spec_pb2.PipelineSpec())
    platform = json_format.ParseDict(stored['platform_spec'], pipeline_spec_pb2.PlatformSpec())
    kubernetes = platform.platforms['kubernetes'] if 'kubernetes' in platform.platforms else None
    try:
        kfp_argo_compiler.Compiler(pipeline_spec_pb2.PipelineJob(), spec, kubernetes,
                                   kfp_argo_templates.ServerConfig(None)).compile()
    except kfp_argo_compiler.CompileError as error:
        chain = ('Failed to create a recurring run during scheduled workflow creation: '
                 + error.wrap('Failed to compile job').message)
        raise KfpError('Internal', f'Internal error: {chain}', f'Internal error: {chain}')


def spec_name(spec: dict) -> str:
    """pipelineInfo.name, under either of the names protojson accepts."""
    return (spec.get('pipelineInfo') or spec.get('pipeline_info'))['name']


def validate_pipeline_name(name: str) -> None:
    """common/utils.go ValidatePipelineName, applied by resource_manager.go
    CreatePipelineAndPipelineVersion / CreatePipelineVersion to the spec's pipelineInfo.name."""
    if not name:
        raise invalid("pipeline's name cannot be empty")
    if len(name) > 128:
        raise invalid("pipeline's name must contain no more than 128 characters")
    if not re.fullmatch(r'[a-z0-9][a-z0-9-]{0,127}', name):  # pipelineNamePattern
        raise invalid("pipeline's name must contain only lowercase alphanumeric characters or "
                      "'-' and must start with alphanumeric characters")


def check_length(model: str, field: str, value: str, limit: int) -> None:
    """validation/length.go ValidateFieldLength (limits from LengthSpecs)."""
    if len(value) > limit:
        raise invalid(f'{model}.{field} length cannot exceed {limit}')


# ---- robfig/cron v1.2.0 parser.go: Parse = NewParser(Second | Minute | Hour | Dom | Month |
# DowOptional | Descriptor), called by server/api_converter.go toModelJob.
_MONTHS = dict(zip('jan feb mar apr may jun jul aug sep oct nov dec'.split(), range(1, 13)))
_DAYS = dict(zip('sun mon tue wed thu fri sat'.split(), range(7)))
_BOUNDS = ((0, 59, None), (0, 59, None), (0, 23, None), (1, 31, None), (1, 12, _MONTHS),
           (0, 6, _DAYS))  # spec.go: seconds, minutes, hours, dom, months, dow
_UNITS = ('ns', 'us', '\u00b5s', '\u03bcs', 'ms', 's', 'm', 'h')  # Go time.unitMap


def _go_quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # strconv.Quote, for printable text


def _atoi(expr: str) -> int:
    """parser.go mustParseInt: strconv.Atoi (optional sign, decimal digits), no negatives."""
    if not re.fullmatch(r'[+-]?[0-9]+', expr):
        raise ValueError(f'Failed to parse int from {expr}: strconv.Atoi: parsing '
                         f'{_go_quote(expr)}: invalid syntax')
    number = int(expr)
    if not -2 ** 63 <= number < 2 ** 63:
        raise ValueError(f'Failed to parse int from {expr}: strconv.Atoi: parsing '
                         f'{_go_quote(expr)}: value out of range')
    if number < 0:
        raise ValueError(f'Negative number ({number}) not allowed: {expr}')
    return number


def _int_or_name(expr: str, names) -> int:
    """parser.go parseIntOrName: month and day names, any case."""
    if names and expr.lower() in names:
        return names[expr.lower()]
    return _atoi(expr)


def _get_range(expr: str, low: int, high: int, names) -> None:
    """parser.go getRange: number | number "-" number [ "/" number ], or * and ?."""
    range_and_step = expr.split('/')
    low_and_high = range_and_step[0].split('-')
    if low_and_high[0] in ('*', '?'):
        start, end = low, high
    else:
        start = _int_or_name(low_and_high[0], names)
        if len(low_and_high) > 2:
            raise ValueError(f'Too many hyphens: {expr}')
        end = _int_or_name(low_and_high[1], names) if len(low_and_high) == 2 else start
    if len(range_and_step) > 2:
        raise ValueError(f'Too many slashes: {expr}')
    step = _atoi(range_and_step[1]) if len(range_and_step) == 2 else 1
    if len(range_and_step) == 2 and len(low_and_high) == 1:
        end = high  # "N/step" means "N-max/step"
    if start < low:
        raise ValueError(f'Beginning of range ({start}) below minimum ({low}): {expr}')
    if end > high:
        raise ValueError(f'End of range ({end}) above maximum ({high}): {expr}')
    if start > end:
        raise ValueError(f'Beginning of range ({start}) beyond end of range ({end}): {expr}')
    if step == 0:
        raise ValueError(f'Step of range should be a positive number: {expr}')


def _go_duration(text: str, descriptor: str) -> None:
    """Go time.ParseDuration's grammar [-+]?([0-9]*(\\.[0-9]*)?[a-z]+)+ and its messages
    (overflow is not modelled)."""
    error = f'Failed to parse duration {descriptor}: time: invalid duration {_go_quote(text)}'
    rest = text[1:] if text[:1] in ('-', '+') and text else text
    if rest == '0':
        return
    if not rest:
        raise ValueError(error)
    while rest:
        number = re.match(r'([0-9]*)(?:\.([0-9]*))?', rest)
        if rest[0] not in '.0123456789' or not (number.group(1) or number.group(2)):
            raise ValueError(error)
        rest = rest[number.end():]
        unit = re.match(r'[^0-9.]*', rest).group(0)
        if not unit:
            raise ValueError(f'Failed to parse duration {descriptor}: time: missing unit in '
                             f'duration {_go_quote(text)}')
        if unit not in _UNITS:
            raise ValueError(f'Failed to parse duration {descriptor}: time: unknown unit '
                             f'{_go_quote(unit)} in duration {_go_quote(text)}')
        rest = rest[len(unit):]


def parse_cron(spec: str) -> None:
    """parser.go Parser.Parse with the default options; ValueError with robfig's message."""
    if not spec:
        raise ValueError('Empty spec string')
    if spec[0] == '@':  # parseDescriptor
        if spec in ('@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight',
                    '@hourly'):
            return
        if spec.startswith('@every '):
            return _go_duration(spec[len('@every '):], spec)
        raise ValueError(f'Unrecognized descriptor: {spec}')
    fields = spec.split()
    if not 5 <= len(fields) <= 6:  # seconds first; the day of week may be left out
        raise ValueError(f'Expected 5 to 6 fields, found {len(fields)}: {spec}')
    for field, (low, high, names) in zip(fields + ['*'], _BOUNDS):  # expandFields
        for expr in (e for e in field.split(',') if e):  # getField: strings.FieldsFunc
            _get_range(expr, low, high, names)
