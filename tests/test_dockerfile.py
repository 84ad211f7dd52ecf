"""The task image runs as a non-root user: the Dockerfile's instructions are read, and the
image built from them (podman on a local base, tools/cluster/image.py) is run (`cluster`).

A namespace with the "restricted" Pod Security Standard admits a pod only with runAsNonRoot,
which the kubelet can verify only for a numeric USER; the user needs a writable HOME and the
checkout (Beam's staging of setup.py writes there)."""
import hashlib
import itertools
import json
import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _instructions():
    with open(os.path.join(REPO, 'Dockerfile')) as handle:
        text = re.sub(r'\\\n', ' ', handle.read())  # continuation lines join their instruction
    return [line.split(None, 1) for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith('#')]


def test_the_image_runs_as_a_numeric_non_root_user_with_a_writable_home():
    instructions = _instructions()
    users = [argument.strip() for keyword, argument in instructions if keyword == 'USER']
    uid, _, gid = users[-1].partition(':')
    assert uid.isdigit() and int(uid) > 0 and (not gid or gid.isdigit())
    last_user = max(i for i, (keyword, _) in enumerate(instructions) if keyword == 'USER')
    assert not [k for k, _ in instructions[last_user + 1:] if k == 'RUN']  # installs ran as root
    runs = ' '.join(argument for keyword, argument in instructions if keyword == 'RUN')
    home = dict(argument.split('=', 1) for keyword, argument in instructions
                if keyword == 'ENV')['HOME']
    assert f'--uid {uid}' in runs and f'--home-dir {home}' in runs and '--create-home' in runs
    workdir = [argument for keyword, argument in instructions if keyword == 'WORKDIR'][-1]
    owned = re.search(rf'chown -R {uid}:\d+ (\S+)', runs)
    assert owned and owned.group(1) == workdir.strip()


# -- The built image, run (podman with runc; tools/cluster/image.py builds it, cached) ----------

@pytest.fixture(scope='session')
def built_image():
    """The image's tag: built on the local debootstrap base when its inputs changed (the first
    time some 10 minutes; after a change of code alone, its last layers: seconds), else found at
    once."""
    from tools.cluster import image
    try:
        return image.ensure_image()
    except image.ImageError as error:
        pytest.fail(f'the image could not be built: {error}', pytrace=False)


_names = itertools.count()


def _run_in(tag, *command, volumes=(), timeout=300):
    """`podman run --rm` of the image as it is configured (its user, workdir and HOME), without
    a network; a container left by a timeout is removed."""
    from tools.cluster import image
    name = f'test-dockerfile-{os.getpid()}-{next(_names)}'
    mounts = [arg for volume in volumes for arg in ('--volume', volume)]
    try:
        return image.podman('run', '--rm', '--name', name, '--network', 'none', *mounts, tag,
                            *command, check=False, log=False, timeout=timeout)
    finally:
        image.podman('rm', '--force', '--ignore', name, check=False, log=False)


_PROBE = '''
import json, os
home = os.environ["HOME"]
for folder in (home, os.getcwd(), "/tmp"):
    with open(os.path.join(folder, "probe"), "w") as handle:
        handle.write("written")
    os.remove(os.path.join(folder, "probe"))
print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "home": home, "cwd": os.getcwd()}))
'''


@pytest.mark.cluster
def test_the_built_image_runs_as_uid_1000_with_a_writable_home_and_checkout(built_image):
    from tools.cluster import image
    config = json.loads(image.podman('image', 'inspect', built_image, log=False).stdout)[0]
    # What the kubelet reads for runAsNonRoot: a numeric, non-zero user in the image's config.
    assert config['Config']['User'] == '1000:1000'
    assert config['Config']['WorkingDir'] == '/pipeline'
    probe = _run_in(built_image, 'python', '-c', _PROBE)
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout) == {'uid': 1000, 'gid': 1000, 'home': '/home/pipeline',
                                        'cwd': '/pipeline'}


@pytest.mark.cluster
def test_the_task_entry_point_starts_in_the_built_image(built_image):
    """Every compiled task's command, up to its flags: TensorFlow, TFX and kfp import."""
    started = _run_in(built_image, 'python', '-m', 'pipeline.kubeflow.entrypoint', '--help')
    assert started.returncode == 0, started.stderr
    assert '--executor_class_path' in started.stdout


@pytest.mark.cluster
def test_the_built_image_holds_the_build_context_byte_for_byte(built_image):
    """/pipeline is the checkout as .dockerignore lets it in (the embedded digits, wine and
    schemas the compiled spec names among it), plus what pip's build of it writes there. The
    same file list is what the image's tag hashes (tools/cluster/image.py reads .dockerignore
    itself): were the two to differ, a change could leave a stale image under a current tag."""
    from tools.cluster import image
    # The checkout may have changed since the session's fixture built it: this checkout's own.
    built_image = image.ensure_image()
    listing = ('import hashlib, json, os\n'
               'files = {}\n'
               'for folder, _, names in os.walk("."):\n'
               '    for name in names:\n'
               '        path = os.path.relpath(os.path.join(folder, name))\n'
               '        files[path] = hashlib.sha256(open(path, "rb").read()).hexdigest()\n'
               'print(json.dumps(files))\n')
    found = _run_in(built_image, 'python', '-c', listing)
    assert found.returncode == 0, found.stderr
    # pip builds the project in place: build/ and the egg-info are the image's own.
    inside = {path: digest for path, digest in json.loads(found.stdout).items()
              if not re.match(r'build/|[^/]+\.egg-info/', path)}
    expected = {}
    for path in image.context_files(REPO):
        with open(os.path.join(REPO, path), 'rb') as handle:
            expected[path] = hashlib.sha256(handle.read()).hexdigest()
    assert sum(path.startswith('data/digits/') for path in expected) > 100
    assert inside == expected


@pytest.mark.cluster
def test_a_training_worker_trains_and_exports_in_the_built_image(built_image, tmp_path):
    """`python -m launch.worker` (a TFJob's or TrainJob's pod command) on a job and digit
    records of the host's, mounted: it trains as UID 1000 and exports a SavedModel."""
    from core import inputs
    from launch import worker
    from training import job as job_lib, loop
    from helpers import write_digit_examples
    for split, offset in (('train', 0), ('eval', 40)):
        write_digit_examples(str(tmp_path / split / 'part.gz'), ('0', '1'), 40, offset)
    inside = '/job'
    job = job_lib.TrainJob(
        train_pattern=f'{inside}/train/*', eval_pattern=f'{inside}/eval/*',
        class_names=('0', '1'), image_shape=(8, 8, 1), input_spec=inputs.InputSpec(),
        options=loop.LoopOptions.of(train_steps=10, global_batch_size=8, learning_rate=1e-3,
                                    steps_per_epoch=5, max_epochs=2.0,
                                    model_builder='models.resnet.build_model',
                                    devices=('/cpu:0',), image_size=(8, 8)),
        epochs=0.0, held_out_percent=0)
    (tmp_path / 'job.json').write_text(worker.job_to_json(job))
    tmp_path.chmod(0o777)   # the worker, UID 1000, writes its outputs next to the job
    trained = _run_in(built_image, 'python', '-m', worker.MODULE, f'{inside}/job.json',
                      f'{inside}/serving', f'{inside}/logs', f'{inside}/checkpoints',
                      volumes=[f'{tmp_path}:{inside}'], timeout=600)
    assert trained.returncode == 0, trained.stderr[-3000:]
    exported = [folder for folder, _, names in os.walk(tmp_path / 'serving')
                if 'saved_model.pb' in names]
    assert exported, sorted(os.listdir(tmp_path))
