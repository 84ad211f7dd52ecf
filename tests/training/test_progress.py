"""Progress events (training/progress.py): published to subscribers, and carried across a
process boundary as lines, a change of step alone at most once per interval."""
import io

from training import progress


def test_subscribers_get_every_event_until_they_unsubscribe():
    seen = []
    unsubscribe = progress.subscribe(seen.append)
    reporter = progress.Reporter()
    reporter.update(step=3, total=10, running=True)
    unsubscribe()
    reporter.update(step=4)
    assert seen == [progress.Progress(step=3, total=10, running=True)]
    assert reporter.event.step == 4


def test_an_event_survives_its_line_and_other_lines_are_not_events():
    event = progress.Progress(step=7, total=9, start_step=2, checkpoint_dir='/c', running=True)
    assert progress.from_line(progress.to_line(event)) == event
    assert progress.from_line('step 7/9  loss 0.1') is None
    assert progress.from_line(progress.to_line(event)[:-5]) is None  # cut short by a kill


def test_the_line_writer_thins_step_changes_but_writes_every_other_change_at_once():
    stream = io.StringIO()
    writer = progress.LineWriter(stream, interval_s=3600)
    events = [progress.Progress(step=0, total=100, running=True)]
    events += [progress.Progress(step=s, total=100, running=True) for s in range(1, 60)]
    events += [progress.Progress(step=60, total=60, running=True),    # stopped early
               progress.Progress(step=60, total=60, running=False)]   # ended
    for event in events:
        writer(event)
    written = [progress.from_line(line) for line in stream.getvalue().splitlines()]
    assert written == [events[0], events[-2], events[-1]]
