"""A TCP relay from listeners inside network namespaces to services on the host's loopback.

    python -m tools.cluster.relay NETNS LISTEN_IP:PORT TARGET_IP:PORT [LISTEN TARGET ...]

The API server, SeaweedFS and ML Metadata listen on 127.0.0.1 only, which no pod or namespace
can reach. A socket keeps the namespace it was made in, so this process enters NETNS just long
enough to bind its listeners there, comes back to its own namespace, and connects each accepted
connection to its target on the host's loopback. The stdlib only: it runs before any venv.
"""
import ctypes
import os
import socket
import sys
import threading

_CLONE_NEWNET = 0x40000000


def _setns(path: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, _CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f'setns {path}')
    finally:
        os.close(fd)


def _address(text: str):
    host, port = text.rsplit(':', 1)
    return host, int(port)


def listeners(netns: str, addresses):
    """Sockets bound inside netns (the calling thread comes back to its own namespace)."""
    home = f'/proc/self/task/{threading.get_native_id()}/ns/net'
    home_fd = os.open(home, os.O_RDONLY)
    try:
        _setns(f'/run/netns/{netns}')
        made = []
        for address in addresses:
            server = socket.socket()
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(address)
            server.listen(64)
            made.append(server)
        return made
    finally:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.setns(home_fd, _CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), 'setns back')
        os.close(home_fd)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end, how in ((sink, socket.SHUT_WR), (source, socket.SHUT_RD)):
            try:
                end.shutdown(how)
            except OSError:
                pass


def _serve(server: socket.socket, target) -> None:
    while True:
        client, _ = server.accept()
        try:
            upstream = socket.create_connection(target, timeout=10)
            upstream.settimeout(None)
        except OSError:
            client.close()   # the service is down: the client sees the connection end
            continue
        for source, sink in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pump, args=(source, sink), daemon=True).start()


def main(argv) -> None:
    netns, pairs = argv[0], argv[1:]
    if not pairs or len(pairs) % 2:
        raise SystemExit('usage: relay NETNS LISTEN TARGET [LISTEN TARGET ...]')
    listen = [_address(text) for text in pairs[0::2]]
    targets = [_address(text) for text in pairs[1::2]]
    threads = [threading.Thread(target=_serve, args=(server, target), daemon=True)
               for server, target in zip(listeners(netns, listen), targets)]
    for thread in threads:
        thread.start()
    print('relaying', ' '.join(pairs), 'in', netns, flush=True)
    for thread in threads:
        thread.join()


if __name__ == '__main__':
    main(sys.argv[1:])
