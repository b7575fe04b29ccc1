"""A TCP relay on 127.0.0.1 that records every byte it forwards, in both directions.

usage: recording_relay.py TARGET_HOST:PORT RECORDING PORT_FILE
Listens on a free port of 127.0.0.1 (written to PORT_FILE), forwards each connection to TARGET
and appends what passes to RECORDING. Runs until killed.
"""
import socket
import sys
import threading


def pump(source, sink, recording, lock):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            with lock:
                recording.write(data)
                recording.flush()
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main():
    target, recording_path, port_file = sys.argv[1:4]
    host, port = target.rsplit(":", 1)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(listener.getsockname()[1]))
    import os
    os.rename(port_file + ".tmp", port_file)
    lock = threading.Lock()
    recording = open(recording_path, "ab")
    while True:
        client, _ = listener.accept()
        upstream = socket.create_connection((host, int(port)))
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=pump, args=(a, b, recording, lock), daemon=True).start()


if __name__ == "__main__":
    main()
