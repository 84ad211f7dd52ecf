"""pipeline/local/score.py without a pipeline run: the progress lines of a long stage."""
import time

from pipeline.local import score as local_score


class _Stages:
    current = 'BulkInferrer'

    def elapsed(self):
        return 90.0


def test_a_long_stage_gets_a_line_per_interval_and_none_after_stop():
    lines = []
    heartbeat = local_score.Heartbeat(_Stages(), lines.append, interval=0.05)
    heartbeat.start()
    time.sleep(0.3)
    heartbeat.stop()
    count = len(lines)
    assert count >= 2 and set(lines) == {'  BulkInferrer: running for 90 s'}
    time.sleep(0.15)
    assert len(lines) == count


def test_no_line_between_stages():
    lines = []
    stages = _Stages()
    stages.current = None
    heartbeat = local_score.Heartbeat(stages, lines.append, interval=0.05)
    heartbeat.start()
    time.sleep(0.2)
    heartbeat.stop()
    assert lines == []
