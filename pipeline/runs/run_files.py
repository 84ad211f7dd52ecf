"""A run's own files in its output folder, beside ML Metadata, named by its run id.

    logs/<run id>.log              all the run printed (pipeline/runs/logs.py)
    logs/<run id>.summary.json     how it ended (pipeline/runs/notify.py)
    reports/<name>.html            its report page, its pictures in reports/<name>/
                                   (pipeline/report/page.py; <name> is run_file_name(run id))

The local runs write them (pipeline/local/), the report's history reads the summaries back, and
retention deletes those of the runs it no longer keeps (pipeline/runs/retention.py): their names
are here, below all three.
"""
import re

LOGS_DIR = 'logs'
REPORTS_DIR = 'reports'


def run_file_name(run_id: str) -> str:
    """The run id as a file name: letters, digits, '.', '_' and '-' only (':' is not portable)."""
    return re.sub(r'[^A-Za-z0-9._-]', '_', run_id).strip('.') or 'run'
