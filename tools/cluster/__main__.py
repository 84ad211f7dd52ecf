"""python -m tools.cluster up|down|status (make cluster, make cluster-down)."""
import argparse
import sys

from tools.cluster import cluster, layout


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog='python -m tools.cluster',
        description='A real single-node Kubernetes for the cluster tests (docs/testing.md).')
    parser.add_argument('action', choices=['up', 'down', 'status'])
    args = parser.parse_args(argv)
    where = layout.Layout()
    try:
        if args.action == 'up':
            cluster.up(where)
        elif args.action == 'down':
            cluster.down(where)
        else:
            up = cluster.running(where)
            print(f'running: KUBECONFIG={where.kubeconfig}' if up else 'not running')
            return 0 if up else 1
    except (RuntimeError, OSError) as error:
        print(f'cluster {args.action}: {error}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
