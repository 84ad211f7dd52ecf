"""Checkpoints and the kept quarantine land where the pipeline root says, whatever the layout.

The output URIs below are laid out as open-source KFP lays them out,
`<root>/<pipeline>/<run id>/<task>/<uuid>/<key>` (backend/src/v2/metadata/client.go
GetPipeline, driver.go provisionOutputs), and as Vertex AI does; the trainer's executor runs
with its training replaced by a stand-in that records the checkpoint folder it was given.
"""
import json
import os
import re

import pytest
from tfx.types import Channel, artifact_utils, standard_artifacts

from core import stable_paths
from components.ingest.formats import rules
from components.ingest.graph import checks
from components.ingest.component import ImageExampleGen
from components.ingest.graph.params import IngestParams
from components.trainer import executor
from training import job as job_lib
from components.trainer.component import ImageTrainer
from training.params import TrainParams
from training.result import TrainResult
from ingest_helpers import ingest_do

ROOT = 'gs://bucket/out/pipeline_root'


def _artifact(kind, uri):
    artifact = kind()
    artifact.uri = uri
    return artifact


def _kfp(run, uuid, task, key):
    return f'{ROOT}/digits/{run}/{task}/{uuid}/{key}'


def _examples(uri):
    """Examples as ingestion describes them; the stand-in training never reads the records."""
    examples = _artifact(standard_artifacts.Examples, uri)
    examples.split_names = artifact_utils.encode_split_names(['train', 'eval'])
    examples.set_string_custom_property('class_names', json.dumps(['0', '1']))
    examples.set_int_custom_property('num_written_train', 40)
    return examples


def _properties(**overrides):
    return dict(dict(
        model_builder='models.resnet.build_model', image_height=8, image_width=8, channels=1,
        train_steps=5, train_epochs=0.0, eval_steps=0, global_batch_size=8,
        accumulation_steps=1, mixed_precision='float32', optimizer='adam', learning_rate=1e-3,
        warmup_steps=0, checkpoint_interval=1, seed=1, devices='[]', pipeline_root=ROOT),
        **overrides)


@pytest.fixture
def given_checkpoint_dirs(monkeypatch):
    """Runs the trainer's executor on output URIs; returns each attempt's checkpoint folder."""
    folders = []

    def train_and_export(job, serving_dir, log_dir, checkpoint_dir):
        folders.append(checkpoint_dir)
        return TrainResult(steps_run=5, stop_reason='stand-in')
    monkeypatch.setattr(job_lib, 'train_and_export', train_and_export)
    monkeypatch.setattr(executor.unchanged, 'write_record', lambda *args: None)
    monkeypatch.setattr(executor.window, 'write_training_data', lambda *args: None)

    def attempt(examples_uri, model_uri, run_uri, **overrides):
        executor.Executor().Do(
            {'examples': [_examples(examples_uri)]},
            {'model': [_artifact(standard_artifacts.Model, model_uri)],
             'model_run': [_artifact(standard_artifacts.ModelRun, run_uri)]},
            _properties(**overrides))
        return folders[-1]
    return attempt


def test_every_attempt_of_a_training_finds_the_same_checkpoints_under_kfp_and_vertex(
        given_checkpoint_dirs):
    examples = _kfp('run-a', 'u1', 'imageexamplegen', 'examples')
    first = given_checkpoint_dirs(examples, _kfp('run-a', 'u2', 'imagetrainer', 'model'),
                                  _kfp('run-a', 'u2', 'imagetrainer', 'model_run'))
    assert re.fullmatch(re.escape(f'{ROOT}/_checkpoints/ImageTrainer/') + '[0-9a-f]{16}', first)
    # A new run whose ingestion was a cache hit: the same Examples, new task folders.
    assert given_checkpoint_dirs(examples, _kfp('run-b', 'u7', 'imagetrainer', 'model'),
                                 _kfp('run-b', 'u7', 'imagetrainer', 'model_run')) == first
    # The same training laid out as Vertex AI lays it out, and as LocalDagRunner does.
    assert given_checkpoint_dirs(examples, f'{ROOT}/123/digits-1/imagetrainer_9/model',
                                 f'{ROOT}/123/digits-1/imagetrainer_9/model_run') == first
    assert given_checkpoint_dirs(examples, f'{ROOT}/ImageTrainer/model/12',
                                 f'{ROOT}/ImageTrainer/model_run/12') == first
    # New Examples without a fingerprint (ingestion ran again), or other settings: another
    # training, a fresh start. (With fingerprints, the same spans ingested the same way are the
    # same training wherever they are: tests/components/trainer/test_executor.py.)
    reingested = _kfp('run-c', 'u8', 'imageexamplegen', 'examples')
    assert given_checkpoint_dirs(reingested, _kfp('run-c', 'u9', 'imagetrainer', 'model'),
                                 _kfp('run-c', 'u9', 'imagetrainer', 'model_run')) != first
    assert given_checkpoint_dirs(examples, _kfp('run-d', 'u3', 'imagetrainer', 'model'),
                                 _kfp('run-d', 'u3', 'imagetrainer', 'model_run'),
                                 learning_rate=3e-3) != first


def test_the_pipeline_root_places_the_checkpoints_but_is_not_part_of_their_key():
    uris = ['/a/examples']
    here = stable_paths.checkpoint_dir('/here', 'ImageTrainer', uris, _properties())
    moved = stable_paths.checkpoint_dir('/moved', 'ImageTrainer', uris,
                                        _properties(pipeline_root='/moved'))
    assert os.path.relpath(here, '/here') == os.path.relpath(moved, '/moved')


def test_an_execution_compiled_without_the_pipeline_root_is_refused(
        tmp_path, given_checkpoint_dirs):
    with pytest.raises(ValueError, match=r"'pipeline_root' is missing: it names where "
                                         r'checkpoints and kept quarantines go'):
        given_checkpoint_dirs('/e', '/m', '/r', pipeline_root='')
    # Ingestion refuses before reading anything (the input base does not even exist).
    with pytest.raises(ValueError, match="'pipeline_root' is missing"):
        ingest_do(str(tmp_path / 'nowhere'), str(tmp_path / 'out'), pipeline_root='')
    # And neither component is built without one.
    with pytest.raises(ValueError, match='pipeline_root is required'):
        ImageExampleGen(IngestParams(data_dir=str(tmp_path)))
    with pytest.raises(ValueError, match='pipeline_root is required'):
        ImageTrainer(examples=Channel(type=standard_artifacts.Examples),
                     params=TrainParams(model_builder='models.resnet.build_model',
                                        global_batch_size=8, learning_rate=1e-3, train_steps=5,
                                        warmup_steps=0),
                     pipeline_root='')


def _quarantine_in(examples_uri):
    """A failed ingestion's quarantine inside its Examples folder (a local stand-in for one)."""
    folder = os.path.join(examples_uri, rules.QUARANTINE_DIR)
    os.makedirs(folder)
    line = rules.quarantine_line('a.png', rules.BadRecord('corrupt_image', 'bad bytes'))
    with open(os.path.join(folder, rules.QUARANTINE_FILE), 'w') as handle:
        handle.write(line + '\n')
    return examples_uri


def test_the_kept_quarantine_has_a_name_of_its_own_per_execution_under_kfp(tmp_path):
    root = str(tmp_path / 'pipeline_root')

    def kfp(run, uuid):
        return os.path.join(root, 'digits', run, 'imageexamplegen', uuid, 'examples')
    kept = checks.keep_quarantine(root, _quarantine_in(kfp('run-a', 'u1')))
    assert re.fullmatch(re.escape(os.path.join(root, '_quarantine', 'ImageExampleGen', ''))
                        + '[0-9a-f]{16}[.]jsonl', kept)
    with open(kept) as handle:
        assert json.loads(handle.read())['reason'] == 'corrupt_image'
    # The retried attempt reuses the driver's output URI, so it replaces its own copy; another
    # run's failure gets another file (KFP names every artifact folder `examples`).
    assert checks.kept_quarantine_path(root, kfp('run-a', 'u1')) == kept
    other = checks.keep_quarantine(root, _quarantine_in(kfp('run-b', 'u5')))
    assert other != kept and os.path.dirname(other) == os.path.dirname(kept)
    assert sorted(os.listdir(os.path.dirname(kept))) == sorted(
        os.path.basename(p) for p in (kept, other))
