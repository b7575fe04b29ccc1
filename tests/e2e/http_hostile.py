"""Hostile HTTP clients against a status endpoint, until SIGTERM; then prints what they saw (JSON).

usage: http_hostile.py HOST PORT

Keeps SLOW connections that send a request a byte at a time (slowloris), opens bursts of idle
connections beyond the server's connection limit, and sends malformed requests in a loop: random
bytes, an unknown method, an unknown path, headers of 32 KiB, a declared body of 1 MiB, a bare
line; and now and then a good GET /metrics, counting the answers by status.
"""
import json
import random
import signal
import socket
import sys
import threading
import time

SLOW = 40
BURST = 100
stop = threading.Event()
lock = threading.Lock()
seen = {"statuses": {}, "closed_unanswered": 0, "good_ok": 0, "good_failed": 0, "slow_dropped": 0}


def count(key, sub=None):
    with lock:
        if sub is None:
            seen[key] += 1
        else:
            seen[key][sub] = seen[key].get(sub, 0) + 1


def exchange(host, port, payload, timeout=5.0):
    """Sends payload, returns the status code answered, or None when closed unanswered."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            try:
                s.sendall(payload)
            except OSError:
                pass
            data = b""
            while b"\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            if data.startswith(b"HTTP/"):
                return int(data.split(b" ")[1])
    except OSError:
        pass
    return None


def slowloris(host, port):
    request = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200 + b"\r\n\r\n"
    while not stop.is_set():
        try:
            with socket.create_connection((host, port), timeout=10) as s:
                for byte in request:
                    if stop.is_set():
                        return
                    s.sendall(bytes([byte]))
                    time.sleep(0.5)
        except OSError:
            count("slow_dropped")
            time.sleep(0.2)


def bursts(host, port):
    while not stop.is_set():
        held = []
        for _ in range(BURST):
            try:
                held.append(socket.create_connection((host, port), timeout=2))
            except OSError:
                pass
        time.sleep(1.0)
        for s in held:
            s.close()


def malformed(host, port):
    rng = random.Random(7)
    payloads = [
        lambda: bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 512))),
        lambda: b"BREW /coffee HTTP/1.1\r\nHost: x\r\n\r\n",
        lambda: b"GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n",
        lambda: b"GET / HTTP/1.1\r\nX-Big: " + b"b" * 32768 + b"\r\n\r\n",
        lambda: b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n" + b"c" * 4096,
        lambda: b"\r\n\r\n",
        lambda: b"GET /metrics HTTP/9.9\r\n\r\n",
    ]
    # The slow and idle connections keep the server at its connection limit; a new connection
    # takes the place of the oldest one waiting for a request, so most of these are answered.
    # Half the time, send a kind that has not been answered yet, so that every kind's status is
    # seen rather than left to chance.
    unanswered = list(range(len(payloads)))
    while not stop.is_set():
        kind = rng.choice(unanswered) if unanswered and rng.random() < 0.5 else rng.randrange(len(payloads))
        status = exchange(host, port, payloads[kind]())
        if status is None:
            count("closed_unanswered")
        else:
            count("statuses", str(status))
            if kind in unanswered:
                unanswered.remove(kind)
        # Hundreds of bad requests a second: hostile, while leaving the (shared) cores to the job.
        time.sleep(0.005)
        if rng.random() < 0.05:
            good = exchange(host, port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            count("good_ok" if good == 200 else "good_failed")


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    threads = [threading.Thread(target=slowloris, args=(host, port), daemon=True) for _ in range(SLOW)]
    threads.append(threading.Thread(target=bursts, args=(host, port), daemon=True))
    threads += [threading.Thread(target=malformed, args=(host, port), daemon=True) for _ in range(2)]
    for t in threads:
        t.start()
    while not stop.is_set():
        stop.wait(0.2)
    for t in threads:
        t.join(timeout=3)
    with lock:
        print(json.dumps(seen, sort_keys=True))


if __name__ == "__main__":
    main()
