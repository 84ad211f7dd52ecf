"""The scoring pipeline's wiring (pipeline/definition/scoring.py): what each component is given."""
import json
import os

from tfx.proto import bulk_inferrer_pb2
from tfx.utils import proto_utils

from core import inputs
from pipeline.definition import config as config_lib
from pipeline.definition import scoring


def _pipeline(tmp_path, model_spec=None, **ingest):
    cfg = config_lib.smoke_config(str(tmp_path), str(tmp_path / 'out'), **ingest)
    score = config_lib.ScoreConfig(str(tmp_path / 'new'), version=2,
                                   output_dir=str(tmp_path / 'final'))
    return cfg, scoring.create_pipeline(cfg, score, model_spec)


def test_unlabelled_ingestion_the_version_and_the_classify_signature(tmp_path):
    cfg, pipeline = _pipeline(tmp_path)
    assert pipeline.pipeline_info.pipeline_name == 'smoke-score'
    assert pipeline.pipeline_info.pipeline_root == str(tmp_path / 'out' / 'scoring' /
                                                       'pipeline_root')
    assert not pipeline.enable_cache
    gen, model, inferrer, writer = pipeline.components
    props = gen.exec_properties
    assert props['unlabelled'] == 1 and props['max_rejected_fraction'] == 1.0
    assert props['window'] == 1 and props['input_base'] == str(tmp_path / 'new')
    assert json.loads(props['input_config'])['splits'][0]['pattern'] == '*'
    assert props['pipeline_root'].startswith(os.path.join(str(tmp_path / 'out'), 'scoring'))
    assert model.exec_properties == {'serving_dir': cfg.serving_dir, 'version': 2}
    spec = proto_utils.json_to_proto(inferrer.exec_properties['model_spec'],
                                     bulk_inferrer_pb2.ModelSpec())
    assert list(spec.model_signature_name) == ['classify']
    assert writer.exec_properties['output_dir'] == str(tmp_path / 'final')
    assert writer.inputs['examples'] is gen.outputs['examples']


def test_ingestion_stores_the_input_as_the_model_parses_it(tmp_path):
    raw = inputs.InputSpec(kind='image', storage='raw', channels=1)
    gen = _pipeline(tmp_path, raw)[1].components[0]
    assert (gen.exec_properties['image_storage'], gen.exec_properties['channels']) == ('raw', 1)
    table = inputs.InputSpec(kind='tabular', numeric=(('size', 1.0, 2.0),),
                             categorical=('colour',))
    gen = _pipeline(tmp_path, table, source='csv')[1].components[0]
    assert json.loads(gen.exec_properties['feature_types']) == {
        'colour': 'categorical', 'size': 'numeric'}
