"""A task for tests/test_kfp_launcher_rules.py: records what the launcher handed it.

    python tests/support/kfp_task_probe.py EXECUTOR_INPUT_JSON RECORD_FILE [WRITTEN_JSON]

Saves the ExecutorInput it got to RECORD_FILE (with any ExecutorOutput already in its output
file, as TFX's run_executor reads a hook's parameters there, and its AWS_* environment),
writes a file into each output artifact's URI, then writes WRITTEN_JSON (an ExecutorOutput as
a dict, {} if absent) to the output file.
With `--hook`, it only writes {"parameterValues": {"from_hook": "yes"}} to the output file, as a
preCacheCheck hook does. No TFX imports, so the rules tests stay fast.
"""
import json
import os
import sys


def main(argv):
    executor_input = json.loads(argv[1])
    output_file = executor_input['outputs']['outputFile']
    if argv[2] == '--hook':
        with open(output_file, 'w') as handle:
            json.dump({'parameterValues': {'from_hook': 'yes'}}, handle)
        return
    found = None
    if os.path.exists(output_file):
        with open(output_file) as handle:
            found = json.load(handle)
    with open(argv[2], 'w') as handle:
        json.dump({'executor_input': executor_input, 'found_output': found,
                   'env': {k: v for k, v in os.environ.items() if k.startswith('AWS_')}},
                  handle)
    for key, artifacts in executor_input['outputs'].get('artifacts', {}).items():
        if key != 'executor-logs':
            os.makedirs(artifacts['artifacts'][0]['uri'], exist_ok=True)
            with open(os.path.join(artifacts['artifacts'][0]['uri'], 'data.txt'), 'w') as data:
                data.write(key)
    print('probe ran')
    os.makedirs(os.path.dirname(output_file), exist_ok=True)
    with open(output_file, 'w') as handle:
        handle.write(argv[3] if len(argv) > 3 else '{}')


if __name__ == '__main__':
    main(sys.argv)
