"""The in-sandbox relay: 127.0.0.1:<port> of the sandbox's own network namespace, bytes
relayed to the model channel's socket (tasks/sandbox/channel.py).

Most agent CLIs and the openai client take a TCP base URL, not a Unix socket; this gives
them one without giving the sandbox a network. It runs INSIDE the sandbox, under the
environment's interpreter, which every run has (the suite's own `bin/python`, the same
path under `local` and `docker`; the host's /usr/bin/python3 is not in every docker image).
That interpreter may be any Python 3.4 or later, so this file is stdlib-only and avoids
newer syntax (no f-strings, annotations or walrus); it is started with `-I -S`, so neither
the program's folder (a `socket.py` there) nor the environment's packages can shadow the
standard library. It is no boundary: the sandbox may as well talk to the socket itself.

Usage: python -I -S -c "<this file>" SOCKET PORT (tasks/sandbox/model_access.py). It returns once it listens (the sandbox's
shell then starts the command) and serves from a forked child, which dies with the run.
"""

import os
import socket
import sys
import threading


def pump(source, sink):
    """Copy until `source` ends, then end `sink`'s writing half (keep-alive works through)."""
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    try:
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def serve(client, path):
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=pump, args=(upstream, client))
    back.daemon = True
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def main():
    path, port = sys.argv[1], int(sys.argv[2])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    if os.fork():
        os._exit(0)
    quiet = os.open(os.devnull, os.O_RDWR)  # the run's output stays the command's alone
    for fd in (0, 1, 2):
        os.dup2(quiet, fd)
    while True:
        client, _ = listener.accept()
        worker = threading.Thread(target=serve, args=(client, path))
        worker.daemon = True
        worker.start()


if __name__ == "__main__":
    main()
