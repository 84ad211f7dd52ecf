"""Names of the artifact properties one stage writes and another (or the run summary) reads.

One spelling per name, so a writer and its readers cannot drift apart: a stage records a fact
on its output artifact under one of these names, and the next stage, the console, the summary
and the report read it back with the same constant. Names that belong to one shared module stay
there (window.py: the training window; image_shape.py: stored image sizes; versions.py: the
Pusher's reuse records). The trainer's metrics are a TrainResult's fields (training/result.py).
No TFX imports.
"""

# Examples (the ingestion stage).
NUM_REJECTED = 'num_rejected'        # records quarantined, all reasons
CLASS_NAMES = 'class_names'          # JSON list, in label order
INPUT_SPEC = 'input_spec'            # inputs.InputSpec as JSON; absent = encoded images
MISSING_VALUES = 'missing_values'    # a table's imputed empty values (JSON)
SPLIT_REASON = 'split_reason'        # the train share of the span and why


def num_written(split: str) -> str:
    """The examples written to a split ('train', 'eval')."""
    return f'num_written_{split}'


NUM_WRITTEN_TRAIN = num_written('train')
NUM_WRITTEN_EVAL = num_written('eval')

# Model (the trainer), besides its metrics.
INPUT_STATEMENT = 'input_statement'  # how the image input size was chosen, for people
AUGMENT = 'augment'
FLIP = 'flip'

# The served-model baseline (a reference to <serving>/<version>/, not a copy).
SERVED_VERSION = 'served_version'    # NO_VERSION: nothing served yet
SERVED_PATH = 'served_path'
INCOMPATIBLE_REASON = 'incompatible_reason'  # why the served model is not compared
NO_VERSION = -1

# ModelBlessing (the evaluator). 'blessed' is TFX's own name, kept for its readers.
BLESSED = 'blessed'                  # 1 = blessed
BLESSING_REASONS = 'blessing_reasons'  # JSON list of why not blessed; [] = blessed
COMPARED_VERSION = 'compared_version'  # served version compared with; -1 = none (drift too)
NOT_COMPARED = 'not_compared'        # 'served version N: why it was not compared'
REGRESSION_CHECK = 'regression_check'  # the no-regression rule's figures

# Drift (the drift check).
DRIFT_VALUES = 'drift_values'        # JSON list of measured values
DRIFT_REASONS = 'drift_reasons'      # JSON list of thresholds exceeded
DRIFT_TEXT = 'drift_text'            # the one line the summary shows

# PushedModel (TFX's own names).
PUSHED = 'pushed'
PUSHED_VERSION = 'pushed_version'
PUSHED_DESTINATION = 'pushed_destination'

# Batch scoring (runner.py --score): the Model ScoringModel places and the predictions
# (an InferenceResult) ScoreWriter writes; ScoreWriter reads the Examples' QUARANTINE_URI.
QUARANTINE_URI = 'quarantine_uri'    # Examples: the quarantine file of the newest span
MODEL_VERSION = 'model_version'      # the serving/ version that scored
MODEL_PATH = 'model_path'            # its folder
NUM_INPUTS = 'num_inputs'            # inputs found = scored + quarantined
NUM_SCORED = 'num_scored'
NUM_QUARANTINED = 'num_quarantined'

# PushedModel (components/push/executor.py): the label its version got in models.config
# (stable | canary | '' when a newer push moved it), and the stable version after the push.
SERVING_LABEL = 'serving_label'
STABLE_VERSION = 'stable_version'

# ModelBlessing (the evaluator): both models' accuracy on the same examples (the eval splits of
# the run's window), for the report's history (components/evaluate/figures.py).
CANDIDATE_ACCURACY = 'candidate_accuracy'
SERVED_ACCURACY = 'served_accuracy'  # absent when no served model was compared
EVAL_EXAMPLES = 'eval_examples'      # examples both were evaluated on
