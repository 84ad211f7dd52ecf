"""What a local run shows on the console: one line per stage as it ends, training progress.

    ImageExampleGen     complete   4.1 s  1,797 examples, 0 rejected
    ImageTrainer        cached     0.3 s  eval accuracy 0.9919

Everything else goes to the run's log file (pipeline/runs/logs.py). TFX's LocalDagRunner logs
"Component X is running." and "... is finished." around each stage; `StageLines`, a handler on
absl's logger, times the stage between the two and then reads its state (complete or cached) and
key figure (pipeline/runs/stages.py) from ML Metadata, the record the summary is made from too.
Training progress comes as the training's events (training/progress.py; a chief worker's are
relayed to this process): one updating tqdm line with ETA on a terminal, a line per quarter of
the steps otherwise (a log file or CI output wants no carriage returns).
"""
import logging
import textwrap
import time
from typing import Callable, List, Optional, TextIO

from tqdm import tqdm

from training import progress as progress_lib
from pipeline.runs import stages as stages_lib
from pipeline.runs import summary as summary_lib

_RUNNING, _FINISHED = 'Component %s is running.', 'Component %s is finished.'
_log = logging.getLogger('pipeline.local.console')


class Console:
    """Writes lines to the console and the same lines to the log."""

    def __init__(self, stream: TextIO, verbose: bool = False):
        # Verbose: the log file is streamed to the console already (pipeline/runs/logs.py).
        self.stream, self.verbose = stream, verbose
        self.tty = stream.isatty() and not verbose

    def line(self, text: str) -> None:
        for part in text.splitlines():
            _log.info(part)
        if not self.verbose:
            self.stream.write(text + '\n')
            self.stream.flush()


def stage_line(stage: str, state: str, seconds: float, figure: Optional[str] = None) -> str:
    """A stage's console line: its display name (pipeline/runs/stages.py), state, seconds,
    figure."""
    stage = stages_lib.stage(stage).display_name
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
            figure = stages_lib.stage(self.current).key_figure(summary) if summary else None
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
            name = stages_lib.stage(self.current).display_name
            return (f'interrupted in {name}; finished stages are cached; run the same command '
                    'to resume')
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
        elif progress.total != self._total and progress.step >= progress.total:
            self.close()  # early stopping ended it before the planned total
            self._console.line(f'  training: stopped early at step {progress.step:,} of '
                               f'{self._total:,}')
        elif progress.total != self._total:  # the length re-planned (training/replan.py)
            self._replanned(progress)
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

    def _replanned(self, progress: progress_lib.Progress) -> None:
        before, self._total = self._total, progress.total
        self._marks = [m for m in (progress.total * k // 4 for k in (1, 2, 3))
                       if m > progress.step]
        if self._bar is not None:
            self._bar.total = progress.total
            self._bar.refresh()
        else:
            self._console.line(f'  training: length re-planned at step {progress.step:,}: '
                               f'{progress.total:,} steps instead of {before:,}')

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self._begin = 0
