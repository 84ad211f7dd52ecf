"""Unit tests: the pipeline config rejects bad values with messages that name the field."""
import dataclasses

import pytest

from components.evaluate.params import EvalParams
from components.ingest.graph.params import IngestParams
from components.push.params import PushParams
from pipeline.definition import config, presets
from pipeline.definition.config_kubeflow import KubeflowConfig
from training.params import TrainParams


def test_defaults_are_valid_and_paths_derive_from_output(tmp_path):
    cfg = config.default_config(output_dir=str(tmp_path / 'out'))
    assert cfg.pipeline_root == str(tmp_path / 'out' / 'pipeline_root')
    assert cfg.metadata_path == str(tmp_path / 'out' / 'metadata.sqlite')
    assert cfg.serving_dir == str(tmp_path / 'out' / 'serving')
    assert cfg.ingest.data_dir == config.DEFAULT_DATA
    assert cfg.beam_args == ()  # chosen by the input's size at run time (beam_mode.py)


@pytest.mark.parametrize('make, field', [
    (lambda: IngestParams(train_percent=-1), 'train_percent'),
    (lambda: IngestParams(train_percent=100), 'train_percent'),
    (lambda: IngestParams(num_shards=-1), 'num_shards'),
    (lambda: IngestParams(source='avro'), 'source'),
    (lambda: IngestParams(image_size=(0, 8)), 'image_size'),
    (lambda: IngestParams(image_storage='png'), 'image_storage'),
    (lambda: IngestParams(feature_types=(('x', 'text'),)), 'feature_types'),
    (lambda: IngestParams(split_key=''), 'split_key'),
    (lambda: IngestParams(max_rejected_fraction=1.0), 'max_rejected_fraction'),
    (lambda: IngestParams(encoding='no-such-codec'), 'encoding'),
    (lambda: IngestParams(convert_formats=('EPS',)), 'convert_formats'),
    (lambda: IngestParams(max_image_pixels=0), 'max_image_pixels'),
    (lambda: IngestParams(max_csv_record_bytes=0), 'max_csv_record_bytes'),
    (lambda: TrainParams(train_steps=-1), 'train_steps'),
    (lambda: TrainParams(train_epochs=-1.0), 'train_epochs'),
    (lambda: TrainParams(train_steps=30, freeze_epochs=1), 'freeze_epochs'),
    (lambda: TrainParams(train_epochs=3.0, freeze_epochs=3), 'freeze_epochs'),
    (lambda: TrainParams(patience=-1), 'patience'),
    (lambda: TrainParams(validation_percent=60), 'validation_percent'),
    (lambda: TrainParams(time_budget_minutes=-1.0), 'time_budget_minutes'),
    (lambda: TrainParams(global_batch_size=-1), 'global_batch_size'),
    (lambda: TrainParams(label_smoothing=1.0), 'label_smoothing'),
    (lambda: TrainParams(learning_rate=0.0), 'learning_rate'),
    (lambda: TrainParams(train_steps=10, warmup_steps=10), 'warmup_steps'),
    (lambda: TrainParams(image_size=(8,)), 'image_size'),
    (lambda: TrainParams(channels=2), 'channels'),
    (lambda: TrainParams(model_builder='build_model'), 'model_builder'),
    (lambda: TrainParams(augment='heavy'), 'augment must be one of'),
    (lambda: EvalParams(min_accuracy=1.5), 'min_accuracy'),
    (lambda: PushParams(keep_versions=0), 'keep_versions'),
    (lambda: presets.named_config('large', '/data', '/out'), 'config must be one of'),
    (lambda: config.PipelineConfig(name='has space'), 'name'),
    (lambda: config.PipelineConfig(schema_path='/no/such/schema.pbtxt'), 'schema'),
])
def test_invalid_values_are_rejected(make, field):
    with pytest.raises(ValueError, match=field):
        make()


def test_configs_are_frozen():
    cfg = config.default_config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.name = 'other'


def test_the_default_length_is_epochs_with_early_stopping():
    train = TrainParams()
    assert train.train_steps == 0 and train.train_epochs == 0.0  # epochs from the data
    assert (train.patience, train.validation_percent, train.time_budget_minutes) == (3, 10, 0.0)
    # A fixed length bounds the warm-up; epochs do not (the trainer clamps it to the data).
    assert TrainParams(train_steps=0, warmup_steps=500).warmup_steps == 500
    with pytest.raises(ValueError, match='warmup_steps'):
        TrainParams(train_steps=30, warmup_steps=30)


def test_smoke_variant_is_small_and_runs_beam_by_input_size(tmp_path):
    cfg = config.smoke_config(str(tmp_path), str(tmp_path / 'out'))
    assert 0 < cfg.train.train_steps <= 30  # a fixed length, not the default's epochs
    assert cfg.beam_args == ()
    assert cfg.ingest.data_dir == str(tmp_path)


def test_the_source_chooses_data_schema_and_model_builder(tmp_path):
    images = presets.named_config('default', config.DEFAULT_DATA, str(tmp_path))
    table = presets.named_config('default', config.DEFAULT_CSV_DATA, str(tmp_path), source='csv')
    assert images.model_builder == 'models.resnet.build_model'
    assert table.model_builder == 'models.mlp.build_model'
    assert table.ingest.source == 'csv'
    assert presets.default_schema('csv', config.DEFAULT_CSV_DATA) == config.WINE_SCHEMA
    assert presets.default_schema('images', config.DEFAULT_DATA) == config.DIGITS_SCHEMA
    assert presets.default_schema('csv', str(tmp_path)) is None
    mine = dataclasses.replace(table, train=TrainParams(model_builder='my.models.build'))
    assert mine.model_builder == 'my.models.build'


def test_short_model_names_resolve_to_the_applications_import_path():
    for name in ('resnet50', 'efficientnet_b0', 'mobilenet_v3_small'):
        assert TrainParams(model_builder=name).model_builder == (
            f'models.applications.{name}')
    assert TrainParams(model_builder='my.models.build').model_builder == 'my.models.build'
    with pytest.raises(ValueError, match='one of resnet50, efficientnet_b0, mobilenet_v3_small '
                       "or an import path .*got 'resnet18'"):
        TrainParams(model_builder='resnet18')


def test_model_weights_must_be_an_existing_file_unless_on_a_cluster(tmp_path):
    missing = str(tmp_path / 'backbone.weights.h5')
    with pytest.raises(ValueError, match='model weights file not found'):
        config.PipelineConfig(train=TrainParams(model_weights=missing))
    config.PipelineConfig(train=TrainParams(model_weights=missing), check_paths=False)
    for bad in ('', 'gs://bucket/b.weights.h5'):  # Keras reads weights from local disk only
        with pytest.raises(ValueError, match='model_weights must be a local file path'):
            TrainParams(model_weights=bad)


@pytest.mark.parametrize('name', ['Image_Pipeline', 'has space', '-leading', 'x' * 129, ''])
def test_pipeline_names_follow_the_kubeflow_pipelines_rule(name):
    # common/utils.go ValidatePipelineName: ^[a-z0-9][a-z0-9-]{0,127}$, checked at upload.
    with pytest.raises(ValueError, match="Kubeflow Pipelines' API server refuses"):
        config.PipelineConfig(name=name)


def test_names_kubeflow_pipelines_takes_are_valid():
    for name in ('image-pipeline', 'smoke', '0day', 'x' * 128):
        assert config.PipelineConfig(name=name).name == name


_SCHEDULED = dict(image='img:1', endpoint='http://kfp', schedule='0 0 3 * * *')


@pytest.mark.parametrize('settings, message', [
    (dict(schedule='0 3 * * *'), 'six-field cron'),
    (dict(namespace='Team_ML'), 'namespace must be a Kubernetes namespace name'),
    (dict(token_env='KFP-TOKEN'), 'token_env must name an environment variable'),
    (dict(token_env='KFP_TOKEN', token_file='/t'), 'are alternatives'),
    (dict(token_file='/t', service_account_token=True), 'are alternatives'),
    (dict(endpoint=None, schedule=None, namespace='team-ml'), 'they need an endpoint'),
    (dict(endpoint=None), 'endpoint and schedule go together'),
])
def test_scheduling_settings_are_checked(settings, message):
    with pytest.raises(ValueError, match=message):
        KubeflowConfig(**dict(_SCHEDULED, **settings))


def test_scheduling_settings_kfp_accepts():
    for schedule in ('0 0 3 * * *', '@daily', '@every 6h'):
        assert KubeflowConfig(**dict(_SCHEDULED, schedule=schedule)).schedule == schedule
    kubeflow = KubeflowConfig(**_SCHEDULED, namespace='team-ml', token_env='KFP_TOKEN')
    assert (kubeflow.namespace, kubeflow.token_env) == ('team-ml', 'KFP_TOKEN')


def test_hostile_input_flags_set_the_ingest_limits(tmp_path):
    cfg = presets.from_flags('smoke', None, {
        'output': str(tmp_path), 'encoding': 'latin-1', 'max_image_pixels': 1000,
        'convert_formats': presets.parse_names('tiff, webp'), 'max_csv_record_bytes': 99})
    assert (cfg.ingest.encoding, cfg.ingest.max_image_pixels, cfg.ingest.convert_formats,
            cfg.ingest.max_csv_record_bytes) == ('latin-1', 1000, ('TIFF', 'WEBP'), 99)
