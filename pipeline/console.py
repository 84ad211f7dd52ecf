"""What a local run shows on the console: one line per stage as it ends, training progress.

    ImageExampleGen     complete   4.1 s  1,797 examples, 0 rejected
    ImageTrainer        cached     0.3 s  eval accuracy 0.9919

Everything else goes to the run's log file (pipeline/logs.py). TFX's LocalDagRunner logs
"Component X is running." and "... is finished." around each stage; `StageLines`, a handler on
absl's logger, times the stage between the two and then reads its state (complete or cached) and
key figure from ML Metadata, the record the summary is made from too. Training progress comes
as the training's events (training/progress.py; a chief worker's are relayed to this process):
one updating tqdm line with ETA on a terminal, a line per quarter of the steps otherwise (a log
file or CI output wants no carriage returns).
"""
import logging
import textwrap
import time
from typing import Callable, List, Optional, TextIO

from tqdm import tqdm

from core import properties
from training import progress as progress_lib
from pipeline import summary as summary_lib
from pipeline import summary_text

_RUNNING, _FINISHED = 'Component %s is running.', 'Component %s is finished.'
_log = logging.getLogger('pipeline.console')
_custom = summary_lib.custom_property


class Console:
    """Writes lines to the console and the same lines to the log."""

    def __init__(self, stream: TextIO, verbose: bool = False):
        # Verbose: the log file is streamed to the console already (pipeline/logs.py).
        self.stream, self.verbose = stream, verbose
        self.tty = stream.isatty() and not verbose

    def line(self, text: str) -> None:
        for part in text.splitlines():
            _log.info(part)
        if not self.verbose:
            self.stream.write(text + '\n')
            self.stream.flush()


def _examples(summary):
    for examples in summary.outputs.get('Examples', []):
        written = sum(_custom(examples, properties.num_written(s)) or 0 for s in ('train', 'eval'))
        return f'{written:,} examples, {_custom(examples, properties.NUM_REJECTED) or 0:,} rejected'


def _trained(summary):
    model = summary.trained_model()
    if model is not None and _custom(model, 'eval_accuracy') is not None:
        return f'eval accuracy {_custom(model, "eval_accuracy"):.4f}'


def _baseline(summary):
    model = summary.baseline_model()
    if model is not None:
        served = _custom(model, properties.SERVED_VERSION)
        return 'nothing served yet' if served < 0 else f'served version {served}'


def _blessing(summary):
    for blessing in summary.outputs.get('ModelBlessing', []):
        return 'blessed' if _custom(blessing, properties.BLESSED) else 'not blessed'


def _pushed(summary):
    for pushed in summary.outputs.get('PushedModel', []):
        if not _custom(pushed, properties.PUSHED):
            return 'not pushed'
        return f'version {_custom(pushed, properties.PUSHED_VERSION)}'


def _drift(summary):
    values = summary_text.drift_values(summary)
    exceeded = [v['feature'] for v in values if v['exceeded']]
    if exceeded:
        return 'drift: ' + ', '.join(exceeded)
    return 'within thresholds' if values else 'not measured'


def _scoring_model(summary):  # runner.py --score (pipeline/scoring.py)
    for model in summary.outputs.get('Model', []):
        if _custom(model, properties.MODEL_VERSION) is not None:
            return f'version {_custom(model, properties.MODEL_VERSION)}'


def _scored(summary):
    for result in summary.outputs.get('InferenceResult', []):
        if _custom(result, properties.NUM_SCORED) is not None:
            return (f'{_custom(result, properties.NUM_SCORED):,} scored, '
                    f'{_custom(result, properties.NUM_QUARANTINED):,} quarantined')


# The figure each stage's line ends with, read from its outputs (stages not named: none).
KEY_FIGURES = {'ImageExampleGen': _examples, 'AnomalyGate': lambda s: 'no anomalies',
               'ImageTrainer': _trained, 'ServedModelBaseline': _baseline,
               'DriftCheck': _drift, 'Evaluator': _blessing, 'Pusher': _pushed,
               'ScoringModel': _scoring_model, 'ScoreWriter': _scored}


def stage_line(stage: str, state: str, seconds: float, figure: Optional[str] = None) -> str:
    return f'{stage:<20}{state.lower():<10}{seconds:5.1f} s  {figure or ""}'.rstrip()


class StageLines(logging.Handler):
    """Prints each stage's line as LocalDagRunner finishes it; knows the stage running now."""

    def __init__(self, console: Console,
                 read_run: Callable[[], Optional[summary_lib.RunSummary]]):
        super().__init__(level=logging.INFO)
        self._console, self._read_run = console, read_run
        self.current: Optional[str] = None
        self._started = 0.0

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg == _RUNNING:
            self.current, self._started = record.args[0], time.monotonic()
        elif record.msg == _FINISHED and self.current:
            summary = self._read_run()
            state = (summary and summary.states.get(self.current)) or 'COMPLETE'
            figure = KEY_FIGURES.get(self.current, lambda s: None)(summary) if summary else None
            self._console.line(stage_line(self.current, state, self.elapsed(), figure))
            self.current = None

    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def failed(self, first_line: str) -> None:
        if self.current:
            self._console.line(stage_line(self.current, 'failed', self.elapsed(),
                                          textwrap.shorten(first_line, 90, placeholder=' ...')))

    def interrupted_message(self, progress: Optional[progress_lib.Progress] = None) -> str:
        """The one line Ctrl-C prints: the training step (from the last progress event), or
        the stage, it stopped in."""
        if self.current and progress is not None and progress.running:
            resume_from = progress.checkpoint_step()
            if resume_from:
                return (f'interrupted at step {progress.step}; checkpoints kept; run the same '
                        f'command to resume (from step {resume_from})')
            return (f'interrupted at step {progress.step}, before the first checkpoint; run '
                    'the same command to train again')
        if self.current:
            return (f'interrupted in {self.current}; finished stages are cached; run the same '
                    'command to resume')
        return 'interrupted before any stage ran'


class TrainingProgress:
    """A progress listener (training/progress.py): a tqdm line on a terminal, else a line per
    quarter; `last` is the last event, for the line Ctrl-C prints."""

    def __init__(self, console: Console):
        self._console = console
        self.last: Optional[progress_lib.Progress] = None
        self._bar: Optional[tqdm] = None
        self._begin, self._begin_step, self._total = 0.0, 0, 0
        self._marks: List[int] = []

    def __call__(self, progress: progress_lib.Progress) -> None:
        self.last = progress
        if not progress.running:
            self.close()
        elif self._begin == 0:
            self._start(progress)
        elif progress.total != self._total:  # early stopping ended it before the planned total
            self.close()
            self._console.line(f'  training: stopped early at step {progress.step:,} of '
                               f'{self._total:,}')
        elif self._bar is not None:
            self._bar.update(progress.step - self._bar.n)
        elif self._marks and progress.step >= self._marks[0]:
            while self._marks and progress.step >= self._marks[0]:
                self._marks.pop(0)
            done = progress.step - self._begin_step
            eta = (time.monotonic() - self._begin) / done * (progress.total - progress.step)
            self._console.line(f'  training: step {progress.step:,}/{progress.total:,}, '
                               f'ETA {eta:.0f} s')

    def _start(self, progress: progress_lib.Progress) -> None:
        self._begin, self._begin_step = time.monotonic(), progress.start_step
        self._total = progress.total
        # Lines at a quarter, half and three quarters (the stage's own line says when it ends).
        self._marks = [m for m in (progress.total * k // 4 for k in (1, 2, 3))
                       if m > progress.start_step]
        if progress.start_step:
            self._console.line(f'  training: resuming at step {progress.start_step:,} of '
                               f'{progress.total:,}')
        if self._console.tty:
            self._bar = tqdm(total=progress.total, initial=progress.start_step, unit='step',
                             desc='  training', file=self._console.stream, leave=False,
                             dynamic_ncols=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self._begin = 0
