"""The executor of a compiled Argo Workflow: what Argo's controller and the kubelet do with the
Workflow KFP's API server creates for a run, with each pod a process.

Transcribed from argo-workflows (v4, github.com/argoproj/argo-workflows):
- DAG templates (workflow/controller/dag.go executeDAG / executeDAGTask): a task runs once every
  task its `depends` names is fulfilled; `depends` is evaluated over the results of those tasks
  (evaluateDependsLogic: `<task>.Succeeded|Failed|Errored|Skipped|Omitted|Daemoned`, `&&`, `||`,
  `!`, parentheses; a bare task name expands to `(T.Succeeded || T.Skipped || T.Daemoned)`,
  workflow/common/ancestry.go expandDependency). False: the task is Omitted. Then its arguments
  are resolved (resolveDependencyReferences: `{{tasks.T.outputs.parameters.P}}`), its `when` is
  evaluated (steps.go shouldExecute: govaluate, bare words as strings), false: Skipped.
- The DAG's phase (assessDAGPhase): over its leaf tasks (findLeafTaskNames), Failed or Error if
  the branch of any is (an omitted task inherits the failed phase of the branch it hangs on),
  else Succeeded. failFast (the default) stops starting tasks once the phase is decided failed.
- Parameters (workflow/common/util.go ProcessArgs / substituteParams): a template's inputs take
  the task's arguments, else their `default`, else the template fails; `{{workflow.*}}` and
  global parameters are substituted, then `{{inputs.parameters.*}}`,
  `{{outputs.parameters.P.path}}`, `{{pod.name}}`, `{{node.name}}`; a tag Argo does not know
  (e.g. KFP's `{{$}}` inside a component's JSON) is left as it is.
- Output parameters (workflow/executor/executor.go SaveParameters): read from `valueFrom.path`
  in the main container's filesystem, else `valueFrom.default`, else the node errors; a single
  trailing newline is trimmed.
- The pod (workflow/controller/workflowpod.go createWorkflowPod): the template's container named
  `main`, its initContainers and volumes, then `podSpecPatch` applied as a strategic merge patch
  on the PodSpec (workflow/util ApplyPodSpecPatch → k8s.io/apimachinery strategicpatch, with the
  PodSpec's merge keys: containers/initContainers/volumes by name, env by name, volumeMounts by
  mountPath, ports by containerPort; other lists replaced). Pod names as util/pod_name.go
  GeneratePodName (v2): `<workflow>-<template>-<fnv32a(node name)>`; the pod carries the
  annotation `workflows.argoproj.io/node-name` (the launcher reads its retry index from it).
- What the kubelet gives each container: env with `fieldRef` (metadata.name/uid/namespace),
  `secretKeyRef` and `configMapKeyRef` read from the API (a missing one keeps the container from
  starting: CreateContainerConfigError), `envFrom` ConfigMaps (`optional` ones may be absent),
  the Service env `KUBERNETES_SERVICE_HOST/PORT`, HOSTNAME; the service account's token, CA and
  namespace at /var/run/secrets/kubernetes.io/serviceaccount; an /etc/hosts; emptyDir volumes
  shared by the pod's containers; each container's own filesystem (here: its own /tmp).

Each container runs as a process in its own mount namespace (`unshare --mount`, with
`--user --map-root-user` when not root) under a root made of the host's system folders, the
pod's volumes, a private /tmp and /run, and the service-account folder: KFP's programs use those
absolute paths. The network is the host's (the cluster's Service names map to loopback addresses
in /etc/hosts, what the cluster DNS does). Init containers run first, in order, then `main`.

Not transcribed (said so): Argo's own `init`/`wait` containers and its emissary wrapper (the
harness reads output files itself after the container exits); retries, timeouts, exit handlers,
loops (withItems/withParam), artifacts, daemons; securityContext (the processes run as the
namespace's root); resource limits. Pods run one at a time (the machines have 2 cores); Argo
starts every ready task at once, so independent tasks' order here is the template's order.
"""
import copy
import dataclasses
import datetime
import json
import os
import random
import re
import shlex
import subprocess
import time
import uuid
from typing import Dict, List, Optional

ANNOTATION_NODE_NAME = 'workflows.argoproj.io/node-name'
MAIN = 'main'  # workflow/common/common.go MainContainerName
_TAG = re.compile(r'{{\s*([^{}]*?)\s*}}')
# Tags whose absence is an error in Argo (template.Replace with allowUnresolved false for the
# template's own scope); others (KFP's {{$}}, {{$.inputs...}} placeholders) pass through.
_STRICT = ('inputs.', 'outputs.', 'tasks.', 'workflow.', 'steps.')
_RESULTS = ('Succeeded', 'Failed', 'Errored', 'Skipped', 'Omitted', 'Daemoned', 'AnySucceeded',
            'AllFailed')
# Node phases (pkg/apis/workflow/v1alpha1/workflow_types.go NodePhase).
SUCCEEDED, FAILED, ERROR, SKIPPED, OMITTED = 'Succeeded', 'Failed', 'Error', 'Skipped', 'Omitted'
_FAILED = (FAILED, ERROR)


class WorkflowError(Exception):
    """The workflow could not be run as Argo would (a malformed template or expression)."""


# ---------------------------------------------------------------------------------------------
# Expressions


def _tokens(text):
    pattern = re.compile(r'\s*(?:(&&|\|\||==|!=|<=|>=|[!()<>])|("(?:[^"\\]|\\.)*"|'
                         r"'(?:[^'\\]|\\.)*')|([A-Za-z0-9_.\-]+))")
    pos, out = 0, []
    text = text.rstrip()
    while pos < len(text):
        match = pattern.match(text, pos)
        if not match:
            raise WorkflowError(f'cannot parse expression {text!r} at {pos}')
        op, quoted, word = match.groups()
        out.append(('op', op) if op else ('str', quoted[1:-1]) if quoted else ('word', word))
        pos = match.end()
    return out


class _Parser:
    """Boolean expressions with ||, &&, !, ==, !=, <, >, <=, >= and parentheses, over a function
    giving each bare word its value (govaluate's and expr-lang's precedence for these)."""

    def __init__(self, text, word):
        self.tokens, self.word, self.i = _tokens(text), word, 0

    def parse(self):
        value = self._or()
        if self.i != len(self.tokens):
            raise WorkflowError(f'unexpected {self.tokens[self.i][1]!r}')
        return value

    def _peek(self):
        return self.tokens[self.i][1] if self.i < len(self.tokens) and \
            self.tokens[self.i][0] == 'op' else None

    def _or(self):
        return self._chain('||', self._and, lambda a, b: bool(a) or bool(b))

    def _and(self):
        return self._chain('&&', self._cmp, lambda a, b: bool(a) and bool(b))

    def _chain(self, op, operand, combine):
        """operand (op operand)*, every operand evaluated (no short cut: an unknown task in
        either side is an error, as expr-lang reports it)."""
        value = operand()
        while self._peek() == op:
            self.i += 1
            value = combine(value, operand())
        return value

    def _cmp(self):
        value = self._unary()
        op = self._peek()
        if op in ('==', '!=', '<', '>', '<=', '>='):
            self.i += 1
            right = self._unary()
            return {'==': value == right, '!=': value != right}.get(op) if op in ('==', '!=') \
                else _order(op, value, right)
        return value

    def _unary(self):
        if self._peek() == '!':
            self.i += 1
            return not self._unary()
        if self._peek() == '(':
            self.i += 1
            value = self._or()
            if self._peek() != ')':
                raise WorkflowError('missing )')
            self.i += 1
            return value
        if self.i >= len(self.tokens):
            raise WorkflowError('expression ends early')
        kind, text = self.tokens[self.i]
        self.i += 1
        if kind == 'str':
            return text
        if kind == 'op':
            raise WorkflowError(f'unexpected {text!r}')
        return self.word(text)


def _order(op, a, b):
    try:
        a, b = float(a), float(b)
    except (TypeError, ValueError):
        raise WorkflowError(f'cannot compare {a!r} {op} {b!r}') from None
    return {'<': a < b, '>': a > b, '<=': a <= b, '>=': a >= b}[op]


def _literal(word):
    """govaluate: true/false and numbers are literals; steps.go shouldExecute turns every other
    bare word (a VARIABLE token) into a string."""
    if word in ('true', 'false'):
        return word == 'true'
    try:
        return float(word)
    except ValueError:
        return word


def evaluate_when(expression: str) -> bool:
    """steps.go shouldExecute."""
    if not expression:
        return True
    return bool(_Parser(expression, _literal).parse())


def expand_depends(depends: str) -> str:
    """ancestry.go GetTaskDependencies: a bare task name becomes
    (T.Succeeded || T.Skipped || T.Daemoned) (expandDependency, no continueOn)."""
    def expand(match):
        name = match.group(0)
        if '.' in name:
            return name
        return f'({name}.Succeeded || {name}.Skipped || {name}.Daemoned)'
    return re.sub(r'[a-zA-Z0-9][-a-zA-Z0-9]*?\.[A-Z][a-zA-Z]+|[a-zA-Z0-9][-a-zA-Z0-9]*',
                  expand, depends)


def depends_tasks(depends: str) -> List[str]:
    names = []
    for match in re.finditer(r'([a-zA-Z0-9][-a-zA-Z0-9]*?)\.([A-Z][a-zA-Z]+)|'
                             r'([a-zA-Z0-9][-a-zA-Z0-9]*)', depends):
        name = match.group(1) or match.group(3)
        if match.group(2) and match.group(2) not in _RESULTS:
            # ancestry.go ValidateTaskResults
            raise WorkflowError(f"task result '{match.group(2)}' for task '{name}' is invalid")
        if name not in names:
            names.append(name)
    return names


def evaluate_depends(depends: str, phases: Dict[str, str]) -> bool:
    """dag.go evaluateDependsLogic over the phases of the tasks it names."""
    def word(text):
        name, _, result = text.rpartition('.')
        if name not in phases:
            raise WorkflowError(f'depends names an unknown task {name!r}')
        phase = phases[name]
        return {'Succeeded': phase == SUCCEEDED, 'Failed': phase == FAILED,
                'Errored': phase == ERROR, 'Skipped': phase == SKIPPED,
                'Omitted': phase == OMITTED, 'Daemoned': False, 'AnySucceeded': False,
                'AllFailed': False}[result]
    return bool(_Parser(expand_depends(depends), word).parse())


# ---------------------------------------------------------------------------------------------
# Substitution and the pod spec


def substitute(value, scope: Dict[str, str], strict=True):
    """Every `{{name}}` of scope in every string of value (single pass, as Argo's template.Replace
    over the template's JSON). A strict tag missing from scope is an error."""
    if isinstance(value, dict):
        return {k: substitute(v, scope, strict) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, scope, strict) for v in value]
    if not isinstance(value, str):
        return value

    def replace(match):
        name = match.group(1)
        if name in scope:
            return scope[name]
        if strict and name.startswith(_STRICT):
            raise WorkflowError(f'failed to resolve {{{{{name}}}}}')
        return match.group(0)
    return _TAG.sub(replace, value)


# k8s.io/api core/v1 types.go: `patchStrategy:"merge" patchMergeKey:"..."` of the PodSpec's lists.
_MERGE_KEYS = {'containers': 'name', 'initContainers': 'name', 'ephemeralContainers': 'name',
               'volumes': 'name', 'imagePullSecrets': 'name', 'hostAliases': 'ip',
               'env': 'name', 'volumeMounts': 'mountPath', 'ports': 'containerPort',
               'volumeDevices': 'devicePath', 'resourceClaims': 'name'}


def strategic_merge(original, patch):
    """strategicpatch.StrategicMergePatch(original, patch, v1.PodSpec{}) for the PodSpec's fields:
    maps merge (null deletes a key), lists with a merge key merge item by item (patched items in
    place, new ones appended), other lists and scalars are replaced."""
    if not isinstance(original, dict) or not isinstance(patch, dict):
        return copy.deepcopy(patch)
    merged = copy.deepcopy(original)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif key in _MERGE_KEYS and isinstance(value, list) and isinstance(merged.get(key), list):
            merged[key] = _merge_list(merged[key], value, _MERGE_KEYS[key])
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = strategic_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _merge_list(original, patch, key):
    merged = [copy.deepcopy(item) for item in original]
    for item in patch:
        for i, existing in enumerate(merged):
            if isinstance(item, dict) and existing.get(key) == item.get(key):
                merged[i] = strategic_merge(existing, item)
                break
        else:
            merged.append(copy.deepcopy(item))
    return merged


def fnv32a(text: str) -> int:
    value = 0x811c9dc5
    for byte in text.encode():
        value = ((value ^ byte) * 0x01000193) & 0xffffffff
    return value


def pod_name(workflow_name, node_name, template_name):
    """util/pod_name.go GeneratePodName, PodNameV2 (maxPrefixLength 253 - 10)."""
    if workflow_name == node_name:
        return workflow_name
    prefix = f'{workflow_name}-{template_name}' if template_name else workflow_name
    prefix = prefix[:242]
    return f'{prefix}-{fnv32a(node_name)}'


def generate_name(prefix):
    """apiserver's names.SimpleNameGenerator: 5 random characters of its alphabet."""
    return prefix + ''.join(random.choice('bcdfghjklmnpqrstvwxz2456789') for _ in range(5))


# ---------------------------------------------------------------------------------------------
# The run


@dataclasses.dataclass
class Node:
    name: str
    template: str
    phase: str = ''
    message: str = ''
    outputs: Dict[str, str] = dataclasses.field(default_factory=dict)
    pod: Optional[str] = None
    started: float = 0.0
    finished: float = 0.0


class Workflow:
    """One run of a Workflow dict through a pod runner (kfp_pods.PodRunner-like: `run_pod(pod,
    node) -> (exit code, message)` and `read_file(pod, container, path) -> str or None`)."""

    def __init__(self, workflow: dict, pods, namespace=None, log=print):
        self.spec = workflow['spec']
        self.metadata = copy.deepcopy(workflow['metadata'])
        self.templates = {t['name']: t for t in self.spec['templates']}
        self.pods = pods
        self.log = log
        self.name = self.metadata.get('name') or generate_name(self.metadata['generateName'])
        self.namespace = namespace or self.metadata.get('namespace', 'default')
        self.uid = str(uuid.uuid4())
        self.created = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
        self.metadata.update(name=self.name, namespace=self.namespace, uid=self.uid,
                             creationTimestamp=self.created.strftime('%Y-%m-%dT%H:%M:%SZ'))
        self.nodes: Dict[str, Node] = {}
        self.globals = {
            'workflow.name': self.name, 'workflow.namespace': self.namespace,
            'workflow.uid': self.uid,
            'workflow.creationTimestamp': self.metadata['creationTimestamp'],
            'workflow.serviceAccountName': self.spec.get('serviceAccountName', '')}
        for param in self.spec.get('arguments', {}).get('parameters', []):
            self.globals[f'workflow.parameters.{param["name"]}'] = str(param.get('value', ''))

    def run(self) -> str:
        """Runs the entrypoint; the workflow's phase."""
        node = self._execute(self.name, self.spec['entrypoint'], {})
        return node.phase

    # -- templates

    def _inputs(self, template, arguments: Dict[str, str]):
        """common.ProcessArgs: the argument, else the input's default, else an error."""
        values = {}
        for param in template.get('inputs', {}).get('parameters', []):
            name = param['name']
            if name in arguments:
                values[name] = arguments[name]
            elif 'value' in param:
                values[name] = str(param['value'])
            elif 'default' in param:
                values[name] = str(param['default'])
            else:
                raise WorkflowError(f'inputs.parameters.{name} was not supplied')
        return values

    def _execute(self, node_name, template_name, arguments) -> Node:
        template = self.templates[template_name]
        node = self.nodes[node_name] = Node(node_name, template_name, started=time.time())
        try:
            inputs = self._inputs(template, arguments)
            scope = dict(self.globals)
            scope.update({f'inputs.parameters.{k}': v for k, v in inputs.items()})
            if 'dag' in template:
                self._dag(node, template, scope)
            elif 'container' in template:
                self._container(node, template, scope)
            else:
                raise WorkflowError(f'template {template_name}: only dag and container '
                                    'templates are run by this executor')
        except WorkflowError as exc:
            node.phase, node.message = ERROR, str(exc)
        node.finished = time.time()
        return node

    def _dag(self, node, template, scope):
        tasks = {t['name']: t for t in template['dag']['tasks']}
        depends = {name: t.get('depends') or ' && '.join(t.get('dependencies', []))
                   for name, t in tasks.items()}
        needs = {name: depends_tasks(d) if d else [] for name, d in depends.items()}
        for name, names in needs.items():
            for dep in names:
                if dep not in tasks:
                    raise WorkflowError(f'task {name} depends on unknown task {dep}')
        # dag.go findLeafTaskNames: tasks no other task depends on.
        leaves = [n for n in tasks if not any(n in needs[o] for o in tasks)]
        done: Dict[str, Node] = {}
        failed_fast, held = False, set()
        while len(done) + len(held) < len(tasks):
            ready = [n for n in tasks if n not in done and n not in held
                     and all(d in done for d in needs[n])]
            if not ready:
                if failed_fast:
                    break
                raise WorkflowError(f'DAG {node.name} cannot proceed (a dependency cycle?)')
            name = ready[0]
            if failed_fast and (not depends[name] or evaluate_depends(
                    depends[name], {n: done[n].phase for n in needs[name]})):
                # failFast (the default): once the DAG has failed no new pod starts; a task
                # whose depends is not met is still marked Omitted in that pass.
                held.add(name)
                continue
            done[name] = self._task(node, tasks[name], depends[name], needs[name], done, scope)
            failed_fast = failed_fast or \
                self._dag_phase(leaves, needs, done, final=False) in _FAILED
        node.phase = self._dag_phase(leaves, needs, done, final=True)
        failed = [n for n in done.values() if n.phase in _FAILED]
        if failed:
            node.message = f'child {failed[0].name} {failed[0].phase.lower()}'

    def _dag_phase(self, leaves, needs, done, final):
        """dag.go assessDAGPhase: the branch phase of each leaf; an omitted (or not yet run) task
        takes a failed phase of a task it depends on."""
        def branch(name):
            node = done.get(name)
            if node is not None and node.phase not in (OMITTED,):
                return node.phase
            inherited = [branch(d) for d in needs[name]]
            failed = [p for p in inherited if p in _FAILED]
            if failed:
                return failed[0]
            return SUCCEEDED if node is not None else ''
        phases = [branch(leaf) for leaf in leaves]
        failed = [p for p in phases if p in _FAILED]
        if failed:
            return failed[0]
        if not final and '' in phases:
            return ''
        return SUCCEEDED

    def _task(self, dag_node, task, depends, needs, done, scope) -> Node:
        name = f'{dag_node.name}.{task["name"]}'
        phases = {n: done[n].phase for n in needs}
        if depends and not evaluate_depends(depends, phases):
            node = self.nodes[name] = Node(name, task['template'], OMITTED,
                                           'omitted: depends condition not met')
            return node
        # resolveDependencyReferences: the DAG's scope plus the outputs of finished tasks.
        local = dict(scope)
        for dep_name, dep in done.items():
            for key, value in dep.outputs.items():
                local[f'tasks.{dep_name}.outputs.parameters.{key}'] = value
            local[f'tasks.{dep_name}.status'] = dep.phase
        try:
            when = substitute(task.get('when', ''), local)
            if not evaluate_when(when):
                node = self.nodes[name] = Node(name, task['template'], SKIPPED,
                                               f"when '{when}' evaluated false")
                return node
            arguments = {}
            for param in task.get('arguments', {}).get('parameters', []):
                if 'value' in param:
                    arguments[param['name']] = substitute(str(param['value']), local)
                elif 'default' in param:
                    arguments[param['name']] = str(param['default'])
        except WorkflowError as exc:
            node = self.nodes[name] = Node(name, task['template'], ERROR, str(exc))
            return node
        return self._execute(name, task['template'], arguments)

    def _container(self, node, template, scope):
        outputs = template.get('outputs', {}).get('parameters', [])
        scope = dict(scope)
        scope.update({f'outputs.parameters.{p["name"]}.path': p['valueFrom']['path']
                      for p in outputs if p.get('valueFrom', {}).get('path')})
        name = pod_name(self.name, node.name, template['name'])
        scope['pod.name'] = name
        scope['node.name'] = node.name
        resolved = substitute(template, scope)
        main = dict(resolved['container'])
        main['name'] = MAIN
        spec = {'containers': [main], 'initContainers': resolved.get('initContainers', []),
                'volumes': resolved.get('volumes', []),
                'serviceAccountName': self.spec.get('serviceAccountName', 'default')}
        patch_text = resolved.get('podSpecPatch')
        if patch_text:
            # workflowpod.go: ApplyPodSpecPatch (YAML or JSON) as a strategic merge patch.
            try:
                patch = json.loads(patch_text)
            except json.JSONDecodeError:
                import yaml
                patch = yaml.safe_load(patch_text)
            if not isinstance(patch, dict):
                raise WorkflowError(f'podSpecPatch is not an object: {patch_text[:200]}')
            spec = strategic_merge(spec, patch)
        pod = {'apiVersion': 'v1', 'kind': 'Pod',
               'metadata': {'name': name, 'namespace': self.namespace, 'uid': str(uuid.uuid4()),
                            'labels': {'workflows.argoproj.io/workflow': self.name,
                                       **self.spec.get('podMetadata', {}).get('labels', {}),
                                       **resolved.get('metadata', {}).get('labels', {})},
                            'annotations': {ANNOTATION_NODE_NAME: node.name,
                                            **resolved.get('metadata', {}).get('annotations',
                                                                               {})}},
               'spec': spec, 'status': {'phase': 'Pending'}}
        node.pod = name
        code, message = self.pods.run_pod(pod, node)
        if code != 0:
            node.phase, node.message = FAILED, message
            return
        for param in outputs:
            source = param.get('valueFrom', {})
            if not source.get('path'):
                continue
            text = self.pods.read_file(pod, MAIN, source['path'])
            if text is None:
                if 'default' not in source:
                    node.phase = ERROR
                    node.message = f'open {source["path"]}: no such file or directory'
                    return
                text = str(source['default'])
            node.outputs[param['name']] = text[:-1] if text.endswith('\n') else text
        node.phase = SUCCEEDED


def shell_join(args):
    return ' '.join(shlex.quote(a) for a in args)


def run_logged(args, env, log_path, cwd=None):
    """A process with its output in log_path; its exit code."""
    with open(log_path, 'ab') as log:
        return subprocess.run(args, env=env, stdout=log, stderr=subprocess.STDOUT,
                              cwd=cwd).returncode


def host_folder(base, *parts):
    path = os.path.join(base, *parts)
    os.makedirs(path, exist_ok=True)
    return path
