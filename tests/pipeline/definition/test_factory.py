"""Unit tests: create_pipeline wires the stages for a curated or an inferred schema (no run)."""
import dataclasses

from pipeline.definition import config as config_lib
from pipeline.definition import factory

COMMON = ['ImageExampleGen', 'StatisticsGen', 'ExampleValidator', 'AnomalyGate', 'ImageTrainer',
          'ServedModelBaseline', 'DriftCheck', 'Evaluator', 'Pusher']


def _ids(tmp_path, **overrides):
    cfg = config_lib.smoke_config(config_lib.DEFAULT_DATA, str(tmp_path), **overrides)
    built = factory.create_pipeline(cfg)
    return [component.id for component in built.components], built


def test_a_curated_schema_is_imported_and_an_absent_one_inferred(tmp_path):
    ids, _ = _ids(tmp_path, schema_path=config_lib.DIGITS_SCHEMA)
    assert sorted(ids) == sorted(COMMON + ['ImportSchemaGen'])
    ids, _ = _ids(tmp_path, schema_path=None)
    assert sorted(ids) == sorted(COMMON + ['SchemaGen'])


def test_the_inferred_schema_is_kept_under_the_root_and_the_gate_says_how_to_change_it(tmp_path):
    _, built = _ids(tmp_path, schema_path=None)
    nodes = {c.id: c for c in built.components}
    root = built.pipeline_info.pipeline_root
    assert nodes['SchemaGen'].exec_properties['pipeline_root'] == root
    hint = nodes['AnomalyGate'].exec_properties['schema_hint']
    assert f'{root}/_schema/schema.pbtxt' in hint and '--schema FILE' in hint
    _, curated = _ids(tmp_path, schema_path=config_lib.DIGITS_SCHEMA)
    gate = [c for c in curated.components if c.id == 'AnomalyGate'][0]
    assert config_lib.DIGITS_SCHEMA in gate.exec_properties['schema_hint']


def test_drift_thresholds_reach_drift_check_and_its_output_the_evaluator(tmp_path):
    _, built = _ids(tmp_path)
    nodes = {c.id: c for c in built.components}
    drift = nodes['DriftCheck']
    assert drift.exec_properties['max_label_drift'] == 0.30
    assert drift.exec_properties['max_numeric_drift'] == 0.15
    assert nodes['Evaluator'].inputs['drift'] is drift.outputs['drift']
    assert nodes['Evaluator'].exec_properties['max_regression'] == 1.0  # smoke: no bar


def test_the_beam_args_and_the_metadata_store_reach_the_pipeline(tmp_path):
    _, built = _ids(tmp_path, beam_args=('--direct_num_workers=1',))
    assert built.beam_pipeline_args == ['--direct_num_workers=1']
    assert built.metadata_connection_config.sqlite.filename_uri == str(
        tmp_path / 'metadata.sqlite')


def test_every_training_worker_gets_train_shards_of_its_own(tmp_path):
    cfg = config_lib.smoke_config(config_lib.DEFAULT_DATA, str(tmp_path))
    cfg = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, workers=4))
    example_gen, trainer = [c for c in factory.create_components(cfg)
                            if c.id in ('ImageExampleGen', 'ImageTrainer')]
    assert example_gen.exec_properties['num_shards'] == 4  # smoke asks for 2
    assert example_gen.exec_properties['min_train_shards'] == 4
    assert trainer.exec_properties['num_workers'] == 4


def test_an_orchestrators_environment_reaches_its_components_and_the_shard_rule(tmp_path):
    """What differs on Kubeflow is passed in, not patched afterwards: the trainer's launcher
    (whose pods each read shards of their own), its task's platform config, the Pusher's
    orchestrator entries."""
    import json
    from launch import launchers
    from pipeline.kubeflow.jobs import tfjob
    cfg = config_lib.smoke_config(config_lib.DEFAULT_DATA, str(tmp_path))
    pods = launchers.Choice('kubernetes', tfjob.TFJobSpec(workers=3, image='i').to_json())
    platform = object()  # stands for TFX's platform config message: handed on as it is
    env = factory.Environment(launcher=pods, trainer_platform_config=platform,
                              pusher_config={'run_end': {'keep_runs': 2}})
    built = {c.id: c for c in factory.create_components(
        dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, global_batch_size=48)),
        env)}
    ingest = built['ImageExampleGen'].exec_properties
    assert (ingest['num_shards'], ingest['min_train_shards']) == (3, 3)  # smoke asks for 2
    assert launchers.Choice.from_json(built['ImageTrainer'].exec_properties['launcher']) == pods
    assert built['ImageTrainer'].platform_config is platform
    custom = built['Pusher'].exec_properties['custom_config']
    assert json.loads(custom)['run_end'] == {'keep_runs': 2}
    local = {c.id: c for c in factory.create_components(cfg)}  # no environment: nothing set
    assert 'launcher' not in local['ImageTrainer'].exec_properties
    assert local['ImageTrainer'].platform_config is None
    assert 'run_end' not in json.loads(local['Pusher'].exec_properties['custom_config'])


def test_the_training_window_reaches_ingestion(tmp_path):
    cfg = config_lib.smoke_config(config_lib.DEFAULT_DATA, str(tmp_path))
    assert cfg.ingest.window == 3  # the default: the last 3 spans
    cfg = dataclasses.replace(cfg, ingest=dataclasses.replace(cfg.ingest, window=5))
    (example_gen,) = [c for c in factory.create_components(cfg)
                      if c.id == 'ImageExampleGen']
    assert example_gen.exec_properties['window'] == 5


def test_ingestion_and_the_trainer_learn_the_pipeline_root(tmp_path):
    # They keep what outlives an execution under it (core/stable_paths.py).
    _, built = _ids(tmp_path)
    got = {c.id: c.exec_properties.get('pipeline_root') for c in built.components}
    assert got['ImageExampleGen'] == got['ImageTrainer'] == built.pipeline_info.pipeline_root
    assert built.pipeline_info.pipeline_root == str(tmp_path / 'pipeline_root')
