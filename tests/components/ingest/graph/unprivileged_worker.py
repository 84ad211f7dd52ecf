"""Runs the image ingestion graph as user `nobody`, for the "no permission" case.

    python unprivileged_worker.py WARMUP_ROOT ROOT OUTPUT_DIR

Root ignores file permissions, so the test cannot see a permission error as root. This process
starts as root (the interpreter lives under /root, which `nobody` cannot enter), runs the graph
once on WARMUP_ROOT so that every lazily imported module is loaded, then drops to uid/gid 65534
for good and ingests ROOT. The kernel then really refuses the mode-000 file. Prints one line,
`RESULT {"counts": ..., "quarantine": [...]}`.
"""
import json
import os
import sys


def ingest(root: str, output_dir: str) -> dict:
    import apache_beam as beam
    from components.ingest.formats import images
    from components.ingest.graph import beam_pipeline, checks, stats
    options = beam_pipeline.IngestOptions(root=root, classes=tuple(images.list_classes(root)))
    pipeline = beam.Pipeline(argv=['--direct_running_mode=in_memory'])
    beam_pipeline.build_ingest(pipeline, options, output_dir)
    result = pipeline.run()
    result.wait_until_finish()
    beam_pipeline.finalize(output_dir, options)
    return {'counts': stats.read_counts(result),
            'quarantine': checks.read_quarantine(output_dir)}


def main() -> None:
    warmup_root, root, output_dir = sys.argv[1:4]
    ingest(warmup_root, os.path.join(output_dir, 'warmup'))
    os.setgid(65534)
    os.setuid(65534)
    assert os.getuid() == 65534 and os.geteuid() == 65534
    print('RESULT ' + json.dumps(ingest(root, os.path.join(output_dir, 'run'))), flush=True)


if __name__ == '__main__':
    main()
