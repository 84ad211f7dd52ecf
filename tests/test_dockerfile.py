"""The task image runs as a non-root user (no Docker here: the Dockerfile's instructions are read).

A namespace with the "restricted" Pod Security Standard admits a pod only with runAsNonRoot,
which the kubelet can verify only for a numeric USER; the user needs a writable HOME and the
checkout (Beam's staging of setup.py writes there)."""
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _instructions():
    with open(os.path.join(REPO, 'Dockerfile')) as handle:
        text = re.sub(r'\\\n', ' ', handle.read())  # continuation lines join their instruction
    return [line.split(None, 1) for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith('#')]


def test_the_image_runs_as_a_numeric_non_root_user_with_a_writable_home():
    instructions = _instructions()
    users = [argument.strip() for keyword, argument in instructions if keyword == 'USER']
    uid, _, gid = users[-1].partition(':')
    assert uid.isdigit() and int(uid) > 0 and (not gid or gid.isdigit())
    last_user = max(i for i, (keyword, _) in enumerate(instructions) if keyword == 'USER')
    assert not [k for k, _ in instructions[last_user + 1:] if k == 'RUN']  # installs ran as root
    runs = ' '.join(argument for keyword, argument in instructions if keyword == 'RUN')
    home = dict(argument.split('=', 1) for keyword, argument in instructions
                if keyword == 'ENV')['HOME']
    assert f'--uid {uid}' in runs and f'--home-dir {home}' in runs and '--create-home' in runs
    workdir = [argument for keyword, argument in instructions if keyword == 'WORKDIR'][-1]
    owned = re.search(rf'chown -R {uid}:\d+ (\S+)', runs)
    assert owned and owned.group(1) == workdir.strip()
