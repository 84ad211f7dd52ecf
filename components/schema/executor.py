"""Executor of our SchemaGen: the kept schema, or one inferred now and kept (kept.py).

The output artifact holds `schema.pbtxt`, as the stock SchemaGen writes it, and says where the
schema came from in `schema_source` ("kept" or "inferred") and `schema_path` (the kept file).
"""
import os
from typing import Any, Dict, List

from absl import logging
import tensorflow_data_validation as tfdv
from tfx import types
from tfx.components.statistics_gen import stats_artifact_utils
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils
from tfx.utils import io_utils

from core import features
from components.schema import kept

SCHEMA_FILE = 'schema.pbtxt'   # the stock SchemaGen's file name, which ExampleValidator reads
SOURCE_PROPERTY = 'schema_source'
PATH_PROPERTY = 'schema_path'


def infer(statistics: types.Artifact, infer_feature_shape: bool):
    """The stock SchemaGen's inference: every split of the statistics."""
    schema = None
    for split in artifact_utils.decode_split_names(statistics.split_names):
        stats = stats_artifact_utils.load_statistics(statistics, split).proto()
        schema = (tfdv.infer_schema(stats, infer_feature_shape=infer_feature_shape)
                  if schema is None else
                  tfdv.update_schema(schema, stats, infer_feature_shape=infer_feature_shape))
    if schema is None:
        raise ValueError(f'no statistics to infer a schema from in {statistics.uri}')
    return without_source_domain(schema)


def without_source_domain(schema):
    """The schema without a value domain on the source path. TFDV infers one when few names
    repeat (a CSV span's rows all name its one file); kept, it would refuse every later span,
    whose files have other names. The path is provenance, not data to validate."""
    for feature in schema.feature:
        if feature.name == features.SOURCE_KEY and feature.WhichOneof('domain_info'):
            shared = feature.domain if feature.HasField('domain') else None
            feature.ClearField(feature.WhichOneof('domain_info'))
            if shared and not any(f.domain == shared for f in schema.feature):
                kept_domains = [d for d in schema.string_domain if d.name != shared]
                del schema.string_domain[:]
                schema.string_domain.extend(kept_domains)
    return schema


class Executor(base_executor.BaseExecutor):

    def Do(self, input_dict: Dict[str, List[types.Artifact]],
           output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        root = exec_properties['pipeline_root']
        output = artifact_utils.get_single_instance(output_dict['schema'])
        schema = kept.read(root)
        source = 'kept'
        if schema is None:
            statistics = artifact_utils.get_single_instance(input_dict['statistics'])
            inferred = infer(statistics, bool(exec_properties['infer_feature_shape']))
            schema = kept.keep(root, inferred)
            source = 'inferred'
            logging.info('Schema inferred from this run\'s data and kept in %s: later runs are '
                         'judged against it.', kept.path(root))
        else:
            logging.info('Schema: the one kept in %s.', kept.path(root))
        io_utils.write_pbtxt_file(os.path.join(output.uri, SCHEMA_FILE), schema)
        output.set_string_custom_property(SOURCE_PROPERTY, source)
        output.set_string_custom_property(PATH_PROPERTY, kept.path(root))
