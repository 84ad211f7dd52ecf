"""A TFX executor that writes into its output on the store every half second for a minute, as a
trainer writes checkpoints: the task of the Kubeflow store-fault test
(tests/pipeline/kubeflow/test_entrypoint_store_faults.py). Test support only."""
import time

import tensorflow as tf
from tfx.dsl.components.base import base_executor


class Executor(base_executor.BaseExecutor):

    def Do(self, input_dict, output_dict, exec_properties):
        model, = output_dict['model']
        for step in range(120):
            with tf.io.gfile.GFile(f'{model.uri}/checkpoint-{step}', 'wb') as handle:
                handle.write(b'weights' * 1000)
            time.sleep(0.5)
