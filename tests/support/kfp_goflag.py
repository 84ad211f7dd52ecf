"""Go's `flag` package as KFP's driver and launcher-v2 parse their command lines, and the glog
flags every KFP Go program also accepts, transcribed for the Python stand-ins of those programs.

What is transcribed (Go's src/flag/flag.go, FlagSet with ExitOnError as flag.CommandLine is):
- parseOne(): `-name`, `--name`, `-name=value`, `--name value`; a bool flag takes no separate
  value (`-name=false` only); parsing stops at the first argument that is not a flag, at `-`, and
  after `--` (consumed); `-help` / `-h`, when not defined, print the usage and exit 0;
- the errors, printed with the usage to stderr before exit 2: "flag provided but not defined:
  -x", "bad flag syntax: ---x", "flag needs an argument: -x", "invalid value %q for flag -x: ...",
  "invalid boolean value %q for -x: parse error";
- Set(): strconv.ParseBool for bools, strconv.ParseInt(s, 0, 64) for ints ("parse error",
  "value out of range"); PrintDefaults() for the usage (sorted, `-name type`, the help, the
  default when not the zero value, strings quoted);
- github.com/golang/glog's flags (glog_flags.go): -v, -vmodule, -log_backtrace_at,
  -stderrthreshold (values that validate as glog's Set methods do), -logtostderr,
  -alsologtostderr, -log_dir, -log_link, -logbuflevel.
Test support only.
"""
import dataclasses
import re
import sys
from typing import Dict, List, Optional


class FlagExit(SystemExit):
    """What os.Exit does after a parse failure (2) or -help (0); the text went to stderr."""


@dataclasses.dataclass
class Flag:
    name: str
    kind: str          # 'string', 'int', 'bool', or a glog value kind
    default: object
    usage: str


_BOOL = {'1': True, 't': True, 'T': True, 'TRUE': True, 'true': True, 'True': True,
         '0': False, 'f': False, 'F': False, 'FALSE': False, 'false': False, 'False': False}
_SEVERITIES = ('INFO', 'WARNING', 'ERROR', 'FATAL')

# glog v1 glog_flags.go / glog_file.go: the flags a KFP Go main gets on flag.CommandLine.
GLOG_FLAGS = [
    Flag('alsologtostderr', 'bool', False, 'log to standard error as well as files'),
    Flag('log_backtrace_at', 'glog_trace', '', 'when logging hits line file:N, emit a stack '
         'trace'),
    Flag('log_dir', 'string', '', 'If non-empty, write log files in this directory'),
    Flag('log_link', 'string', '', 'If non-empty, add symbolic links in this directory to the '
         'log files'),
    Flag('logbuflevel', 'int', 0, "Buffer log messages logged at this level or lower (-1 means "
         "don't buffer; 0 means buffer INFO only; ...). Has limited applicability on non-prod "
         'platforms.'),
    Flag('logtostderr', 'bool', False, 'log to standard error instead of files'),
    Flag('stderrthreshold', 'glog_severity', '2', 'logs at or above this threshold go to '
         'stderr'),
    Flag('v', 'glog_level', '0', 'log level for V logs'),
    Flag('vmodule', 'glog_vmodule', '', 'comma-separated list of pattern=N settings for '
         'file-filtered logging'),
]


# Flags declared alike (name, default, help) by both cmd/driver/main.go and
# cmd/launcher-v2/main.go.
KFP_COMMON_FLAGS = [
    Flag('pipeline_name', 'string', '', 'pipeline context name'),
    Flag('run_id', 'string', '', 'pipeline run uid'),
    Flag('ml_pipeline_server_port', 'string', '8887', 'The port of the ML pipeline API server.'),
    Flag('log_level', 'string', '1', 'The verbosity level to log.'),
    Flag('publish_logs', 'string', 'true',
         'Whether to publish component logs to the object store'),
    Flag('cache_disabled', 'bool', False, 'Disable cache globally.'),
    Flag('ca_cert_path', 'string', '', 'The path to the CA certificate to trust on connections '
         'to the ML pipeline API server and metadata server.'),
    Flag('ml_pipeline_tls_enabled', 'bool', False,
         'Set to true if mlpipeline API server serves over TLS.'),
    Flag('metadata_tls_enabled', 'bool', False, 'Set to true if MLMD serves over TLS.'),
]


def glog(severity: str, message: str) -> None:
    """A glog line on stderr, as KFP's mains log (logtostderr set in their init):
    "<I|W|E|F>mmdd hh:mm:ss.uuuuuu <pid> main.go] <message>"."""
    import os  # pylint: disable=import-outside-toplevel
    import time  # pylint: disable=import-outside-toplevel
    now = time.time()
    stamp = time.strftime('%m%d %H:%M:%S', time.gmtime(now)) + f'.{int(now % 1 * 1e6):06d}'
    sys.stderr.write(f'{severity}{stamp} {os.getpid():7d} main.go] {message}\n')


class ProgramError(RuntimeError):
    """The error a KFP main returns: glog.Exit prints it as an "F" line, exit status 1."""


class GoPanic(Exception):
    """A Go runtime panic: "panic: ..." on stderr, exit status 2."""


def run_program(flags: List['Flag'], argv: Optional[List[str]], body, prefix: str = '') -> int:
    """A KFP main: flag.Parse(), the log level line, then body(values, args); its
    ProgramError (or NotImplementedError: not transcribed) ends as glog.Exit, prefixed."""
    flag_set = FlagSet(sys.argv[0], flags)
    try:
        flag_set.parse(sys.argv[1:] if argv is None else argv)
    except FlagExit as exit_:
        return exit_.code
    glog('I', f"Setting log level to: '{flag_set['log_level']}'")
    try:
        body(flag_set.values, flag_set.args)
    except GoPanic as panic:
        sys.stderr.write(f'panic: {panic}\n[signal SIGSEGV: segmentation violation]\n')
        return 2
    except ProgramError as error:
        glog('F', f'{prefix}{error}')
        return 1
    except NotImplementedError as error:
        glog('F', f'{prefix}not transcribed: {error}')
        return 1
    return 0


class _ValueError(Exception):
    pass


def _go_quote(text: str) -> str:
    """Go's %q for the texts flags hold (printable ASCII and \\n, \\t, quotes)."""
    out = []
    for char in text:
        if char in '"\\':
            out.append('\\' + char)
        elif char == '\n':
            out.append('\\n')
        elif char == '\t':
            out.append('\\t')
        elif ord(char) < 0x20 or ord(char) == 0x7f:
            out.append(f'\\x{ord(char):02x}')
        else:
            out.append(char)
    return '"' + ''.join(out) + '"'


def _atoi(text: str) -> int:
    """strconv.Atoi's error text, as glog's Level and severity Set report it."""
    if not re.fullmatch(r'[+-]?[0-9]+', text):
        raise _ValueError(f'strconv.Atoi: parsing {_go_quote(text)}: invalid syntax')
    return int(text)


def _parse_int(text: str) -> int:
    """strconv.ParseInt(s, 0, 64) as flag's intValue.Set / int64Value.Set use it (numError)."""
    body = text[1:] if text[:1] in '+-' else text
    sign = -1 if text[:1] == '-' else 1
    base, digits = 10, body
    lower = body.lower()
    if lower.startswith('0x'):
        base, digits = 16, body[2:]
    elif lower.startswith('0o'):
        base, digits = 8, body[2:]
    elif lower.startswith('0b'):
        base, digits = 2, body[2:]
    elif body.startswith('0') and len(body) > 1:
        base, digits = 8, body[1:]
    # base 0 allows underscores between digits (and after a base prefix).
    if not digits or digits.startswith('_') and base == 10 or digits.endswith('_') \
            or '__' in digits:
        raise _ValueError('parse error')
    try:
        value = sign * int(digits.replace('_', ''), base)
    except ValueError:
        raise _ValueError('parse error')
    if not -2 ** 63 <= value < 2 ** 63:
        raise _ValueError('value out of range')
    return value


def _set(flag: Flag, text: str):
    if flag.kind == 'string':
        return text
    if flag.kind == 'bool':
        if text not in _BOOL:
            raise _ValueError('parse error')
        return _BOOL[text]
    if flag.kind == 'int':
        return _parse_int(text)
    if flag.kind == 'glog_level':
        return _atoi(text)
    if flag.kind == 'glog_severity':  # glog severity.Set: a name, else a number
        if text.upper() in _SEVERITIES:
            return text.upper()
        number = _atoi(text)
        if not 0 <= number <= 3:
            raise _ValueError(f'Severity {number} out of range (min 0, max 3).')
        return number
    if flag.kind == 'glog_trace':  # glog traceLocation.Set
        if text and not re.fullmatch(r'[^:]+\.go:[0-9]+', text):
            raise _ValueError('syntax error: expect file.go:234')
        return text
    if flag.kind == 'glog_vmodule':  # glog moduleSpec.Set
        for part in filter(None, text.split(',')):
            pattern, _, level = part.partition('=')
            if not _ or not pattern or not re.fullmatch(r'[+-]?[0-9]+', level):
                raise _ValueError('syntax error: expect comma-separated list of filename=N')
        return text
    raise AssertionError(flag.kind)


class FlagSet:
    """flag.CommandLine of one program: its flags, then Parse()."""

    def __init__(self, program: str, flags: List[Flag]):
        self.program = program
        self.flags: Dict[str, Flag] = {f.name: f for f in flags}
        self.values: Dict[str, object] = {f.name: f.default for f in flags}
        self.actual: Dict[str, object] = {}   # the flags set on the command line
        self.args: List[str] = []

    def usage(self) -> str:
        """flag.Usage / PrintDefaults()."""
        lines = [f'Usage of {self.program}:']
        for name in sorted(self.flags):
            flag = self.flags[name]
            kind = {'bool': '', 'string': 'string', 'int': 'int'}.get(flag.kind, 'value')
            head = f'  -{name}' + (f' {kind}' if kind else '')
            text = head + ('\t' if len(head) <= 4 else '\n    \t') + \
                flag.usage.replace('\n', '\n    \t')
            if not self._is_zero(flag):
                default = (_go_quote(flag.default) if flag.kind == 'string'
                           else str(flag.default).lower() if flag.kind == 'bool'
                           else str(flag.default))
                text += f' (default {default})'
            lines.append(text)
        return '\n'.join(lines) + '\n'

    @staticmethod
    def _is_zero(flag: Flag) -> bool:
        return flag.default in ('', 0, False, '0') and flag.kind != 'glog_severity'

    def _fail(self, message: str):
        sys.stderr.write(message + '\n' + self.usage())
        raise FlagExit(2)

    def parse(self, argv: List[str]) -> 'FlagSet':
        """FlagSet.Parse(): the flags, then the rest in `args`."""
        args = list(argv)
        while args:
            arg = args[0]
            if len(arg) < 2 or arg[0] != '-':
                break
            minuses = 2 if arg[1] == '-' else 1
            if minuses == 2 and len(arg) == 2:  # "--" terminates the flags
                args.pop(0)
                break
            name = arg[minuses:]
            if not name or name[0] in '-=':
                self._fail(f'bad flag syntax: {arg}')
            args.pop(0)
            value: Optional[str] = None
            if '=' in name[1:]:
                index = name.index('=', 1)
                name, value = name[:index], name[index + 1:]
            flag = self.flags.get(name)
            if flag is None:
                if name in ('help', 'h'):
                    sys.stderr.write(self.usage())
                    raise FlagExit(0)
                self._fail(f'flag provided but not defined: -{name}')
            if flag.kind == 'bool':
                if value is None:
                    value = 'true'
                try:
                    self.values[name] = _set(flag, value)
                except _ValueError as error:
                    self._fail(f'invalid boolean value {_go_quote(value)} for -{name}: {error}')
            else:
                if value is None:
                    if not args:
                        self._fail(f'flag needs an argument: -{name}')
                    value = args.pop(0)
                try:
                    self.values[name] = _set(flag, value)
                except _ValueError as error:
                    self._fail(f'invalid value {_go_quote(value)} for flag -{name}: {error}')
            self.actual[name] = self.values[name]
        self.args = args
        return self

    def __getitem__(self, name: str):
        return self.values[name]
