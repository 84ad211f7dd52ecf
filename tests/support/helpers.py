"""Helpers shared by tests (importable because pytest.ini puts tests/ on the path)."""
import os
import shutil
import sys

from pipeline.definition import beam_mode
from pipeline.definition.config import SETUP_FILE_ARG

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIGITS = os.path.join(REPO_ROOT, 'data', 'digits')
# Beam args of a Beam executor run in a test's own process: in-process, as local runs on small
# inputs choose, with the project's setup file, as every run has it
# (pipeline/definition/beam_mode.py); without a dependency flag TFX would build a package of itself
# in a temporary folder first.
IN_PROCESS_BEAM = [*beam_mode.IN_PROCESS, SETUP_FILE_ARG]


def digit_png(name: str, file_name: str, size: int = 8) -> bytes:
    """The PNG of one embedded 8x8 digit; size > 8 scales it up (bilinear) to size x size, for
    tests that need images big enough for the default augmentation (under 10 px it does nothing)."""
    with open(os.path.join(DIGITS, name, file_name), 'rb') as handle:
        encoded = handle.read()
    if size == 8:
        return encoded
    import io
    from PIL import Image
    buffer = io.BytesIO()
    Image.open(io.BytesIO(encoded)).resize((size, size), Image.BILINEAR).save(buffer, 'PNG')
    return buffer.getvalue()


def copy_digits(dest: str, classes=('0', '1', '2'), per_class: int = 30, size: int = 8) -> str:
    """Copies the first `per_class` PNGs of each class into dest/<class>/ (scaled to size x size,
    see digit_png); returns dest."""
    for name in classes:
        os.makedirs(os.path.join(dest, name), exist_ok=True)
        for file_name in sorted(os.listdir(os.path.join(DIGITS, name)))[:per_class]:
            if size == 8:
                shutil.copy(os.path.join(DIGITS, name, file_name),
                            os.path.join(dest, name, file_name))
            else:
                with open(os.path.join(dest, name, file_name), 'wb') as handle:
                    handle.write(digit_png(name, file_name, size))
    return dest


def run_pipeline(cfg):
    """Runs create_pipeline(cfg) with LocalDagRunner; returns the run's summary from ML Metadata."""
    from tfx import v1 as tfx  # heavy: imported by the e2e tests only
    from pipeline.definition import factory
    from pipeline.runs import summary as summary_lib
    tfx.orchestration.LocalDagRunner().run(factory.create_pipeline(cfg))
    return summary_lib.read_latest_run(cfg.metadata_path, cfg.name)


def smoke_sample_config(base: str):
    """The e2e tests' sample: 3 classes x 30 digits under base/data, the smoke config writing to
    base/out, validated against the curated digits schema."""
    from pipeline.definition import config as config_lib
    data = copy_digits(os.path.join(base, 'data'))
    return config_lib.smoke_config(data, os.path.join(base, 'out'),
                                   schema_path=config_lib.DIGITS_SCHEMA)


def runner_command(data: str, out: str, *flags: str, digits_schema: bool = True) -> list:
    """argv of `runner.py --local` on data into out (run with cwd=REPO_ROOT), validated against
    the curated digits schema (8x8 images only; digits_schema=False leaves the runner's default,
    an inferred schema); flags are added as given."""
    schema = ['--schema', os.path.join(REPO_ROOT, 'data', 'schema', 'digits.pbtxt')]
    return [sys.executable, 'runner.py', '--local', '--data', data, '--output', out,
            *(schema if digits_schema else []), *flags]


def stop_group_when(command: list, ready, sig) -> tuple:
    """Starts command (`[sys.executable, ...]`, cwd REPO_ROOT) in a session and process group of
    its own, in a child of the warm interpreter (warm_python.start), sends the group sig once
    ready() is true, and checks that nothing of the group is left alive; returns the ended
    process (its returncode), its stdout and stderr. SIGINT reaches it as a terminal's Ctrl-C
    does (KeyboardInterrupt in Python), whatever this test session ignores."""
    import subprocess
    import tempfile
    import time
    import warm_python
    with tempfile.TemporaryDirectory(prefix='stopped-') as folder:
        out, err = os.path.join(folder, 'stdout'), os.path.join(folder, 'stderr')
        child = warm_python.start(command[1:], REPO_ROOT, dict(os.environ), out, err,
                                  new_session=True)
        deadline = time.time() + 300
        while not ready():
            assert child.poll() is None, open(out).read() + open(err).read()
            assert time.time() < deadline, 'not ready within 300 s'
            time.sleep(0.05)
        os.killpg(child.pid, sig)
        code = child.wait(timeout=120)
        with open(out, errors='replace') as stdout, open(err, errors='replace') as stderr:
            process = subprocess.CompletedProcess(command, code, stdout.read(), stderr.read())
    # Zombies excluded: a killed child has ended, only its reaping by init may be pending.
    listed = subprocess.run(['ps', '-s', str(child.pid), '-o', 'stat=,args='],
                            capture_output=True, text=True).stdout.splitlines()
    alive = [line for line in listed if not line.lstrip().startswith('Z')]
    assert alive == [], f'processes of the run are still alive: {alive}'
    return process, process.stdout, process.stderr


def run_log(console: str) -> str:
    """The text of the run log that a `runner.py --local` console output names first."""
    first = console.splitlines()[0]
    assert '; log: ' in first, console
    with open(first.split('; log: ', 1)[1]) as log:
        return log.read()


def mlmd_artifact(**custom):
    """An ML Metadata Artifact with these custom properties: str as string, int (and bool) as
    int, float as double values, as TFX records them."""
    from ml_metadata.proto import metadata_store_pb2
    artifact = metadata_store_pb2.Artifact()
    for key, value in custom.items():
        field = ('string_value' if isinstance(value, str) else
                 'double_value' if isinstance(value, float) else 'int_value')
        setattr(artifact.custom_properties[key], field, value)
    return artifact


def unlearnable_model(input_shape, num_classes):
    """A model builder (for ImageTrainer tests) whose predictions training cannot change: its
    one trainable layer is multiplied by 0, so every held-out evaluation is identical and early
    stopping's patience decides alone, whatever the default model is."""
    import keras
    inputs = keras.Input(input_shape)
    flat = keras.layers.Flatten()(inputs)
    learned = keras.layers.Dense(num_classes)(flat)
    fixed = keras.layers.Dense(num_classes, trainable=False, name='fixed')(flat)
    outputs = keras.layers.Add()([fixed, keras.layers.Lambda(lambda t: t * 0.0)(learned)])
    return keras.Model(inputs, outputs)


def _mirrored_png(encoded: bytes) -> bytes:
    import io
    from PIL import Image
    buffer = io.BytesIO()
    Image.open(io.BytesIO(encoded)).transpose(Image.FLIP_LEFT_RIGHT).save(buffer, 'PNG')
    return buffer.getvalue()


def write_digit_examples(path, classes, per_class, offset=0, size=8, mirrored_too=False):
    """Writes GZIP TFRecords of real digit PNGs (size x size, see digit_png), as ingestion does;
    mirrored_too adds each one mirrored left-right under the same label (a set whose labels
    mirroring keeps, by construction). Returns the Examples."""
    import tensorflow as tf  # heavy: only the tests that write records import it
    from core import features
    examples = []
    for label, name in enumerate(classes):
        folder = os.path.join(DIGITS, name)
        for file_name in sorted(os.listdir(folder))[offset:offset + per_class]:
            encoded = digit_png(name, file_name, size)
            for png, tag in ((encoded, ''), (_mirrored_png(encoded), ' mirrored'))[
                    :2 if mirrored_too else 1]:
                examples.append(features.make_example(png, label, name, size, size,
                                                      f'{name}/{file_name}{tag}'))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path, options='GZIP') as writer:
        for example in examples:
            writer.write(example.SerializeToString())
    return examples


def run_command(command: list, timeout: float = 900):
    """subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout)
    for a `[sys.executable, 'runner.py', ...]` command, in a child of the warm interpreter
    (warm_python.py: TFX imported once per session) instead of a fresh one. Not for tests of
    what the console shows while TF starts (tests/e2e/test_console_e2e.py starts fresh ones)."""
    import warm_python
    assert command[0] == sys.executable, command
    return warm_python.run_captured(command[1:], REPO_ROOT, timeout)


def runner_cli(*args, timeout: float = 60):
    """`python runner.py ARGS` in a fresh interpreter, output captured: for what answers before
    TFX is imported (--help, flag errors), where a fresh process is quick."""
    import subprocess
    return subprocess.run([sys.executable, 'runner.py', *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=timeout)


def runner_configs(*flags):
    """(PipelineConfig, KubeflowConfig or None) that runner.py builds from these flags."""
    import runner
    from pipeline.definition import presets
    return presets.from_args(runner.build_parser().parse_args(list(flags)))


def version_folders(serving_dir: str) -> list:
    """The names in a serving folder but models.config (core/serving_labels.py),
    which the Pusher writes beside the version folders; sorted as listed."""
    return sorted(name for name in os.listdir(serving_dir) if name != 'models.config')
