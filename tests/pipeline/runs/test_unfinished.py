"""pipeline/runs/unfinished.py: a run ended from outside its stages (the store watch) leaves no
execution RUNNING in ML Metadata, and touches no other run's."""
from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2 as pb

from pipeline.runs import unfinished


def _store(path):
    config = pb.ConnectionConfig()
    config.sqlite.filename_uri = str(path)
    return metadata_store.MetadataStore(config)


def test_unfinished_executions_of_the_run_are_marked_failed(tmp_path):
    path = tmp_path / 'metadata.sqlite'
    store = _store(path)
    run_type = store.put_context_type(pb.ContextType(name='pipeline_run'))
    kinds = {name: store.put_execution_type(pb.ExecutionType(name=f'tfx.components.{name}'))
             for name in ('StatisticsGen', 'ImageTrainer', 'Evaluator')}
    ours, other = store.put_contexts([pb.Context(type_id=run_type, name='run-2'),
                                      pb.Context(type_id=run_type, name='run-1')])
    states = {'StatisticsGen': pb.Execution.COMPLETE, 'ImageTrainer': pb.Execution.RUNNING,
              'Evaluator': pb.Execution.NEW}
    ours_context, other_context = store.get_contexts_by_id([ours, other])
    for name, state in states.items():
        execution = pb.Execution(type_id=kinds[name], last_known_state=state)
        store.put_execution(execution, [], [ours_context])
    elsewhere = pb.Execution(type_id=kinds['ImageTrainer'], last_known_state=pb.Execution.RUNNING)
    store.put_execution(elsewhere, [], [other_context])

    assert sorted(unfinished.mark_failed(str(path), 'run-2')) == ['Evaluator', 'ImageTrainer']
    after = {e.type_id: e.last_known_state for e in store.get_executions_by_context(ours)}
    assert after == {kinds['StatisticsGen']: pb.Execution.COMPLETE,
                     kinds['ImageTrainer']: pb.Execution.FAILED,
                     kinds['Evaluator']: pb.Execution.FAILED}
    other_state, = [e.last_known_state for e in store.get_executions_by_context(other)]
    assert other_state == pb.Execution.RUNNING   # another run's: not ours to end
    assert unfinished.mark_failed(str(path), 'run-2') == []
    assert unfinished.mark_failed(str(path), 'no-such-run') == []
    assert unfinished.mark_failed(str(tmp_path / 'absent.sqlite'), 'run-2') == []
