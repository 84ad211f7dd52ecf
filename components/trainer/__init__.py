"""Training stage: a custom TFX Trainer component that owns a tf.distribute training loop."""
