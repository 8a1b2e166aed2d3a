# SPDX-License-Identifier: MIT
"""Deterministic allocation workload for program-python (run-program.sh python).

Exercises CPython's allocator paths (small objects through pymalloc arenas, which come from
malloc/mmap, and larger buffers directly from malloc/realloc): dict and string churn,
comprehensions, threads building and exchanging objects through queues, json round trips,
re, and gc of reference cycles. Every printed line is independent of timing, thread
scheduling and hash randomisation, so the output must be identical with and without the
preloaded allocator."""
import gc
import hashlib
import json
import queue
import re
import sys
import threading


class Rng:
    """Tiny LCG so the workload does not depend on the random module's implementation."""

    def __init__(self, seed):
        self.state = seed & 0xFFFFFFFFFFFFFFFF

    def next(self):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        return self.state >> 33

    def word(self, n):
        letters = "abcdefghijklmnopqrstuvwxyz"
        return "".join(letters[self.next() % 26] for _ in range(n))


def digest(obj):
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def dict_and_string_churn(rng):
    table = {}
    for i in range(200000):
        key = rng.word(3 + i % 5)
        table[key] = table.get(key, "") + str(i % 97)
        if i % 7 == 0 and len(table) > 100:
            # delete the oldest key: dicts resize down and up again
            del table[next(iter(table))]
    joined = ",".join(f"{k}={v[:8]}" for k, v in sorted(table.items()))
    return len(table), len(joined), hashlib.sha256(joined.encode()).hexdigest()[:16]


def comprehension_churn(rng):
    total = 0
    shapes = []
    for round_ in range(40):
        n = 2000 + rng.next() % 3000
        squares = [i * i for i in range(n)]
        buckets = {i % 37: [] for i in range(n)}
        for value in squares:
            buckets[value % 37].append(value)
        strings = [str(v) * (1 + v % 3) for v in squares[: n // 4]]
        nested = [[c for c in s] for s in strings[:200]]
        total += sum(len(b) for b in buckets.values()) + sum(map(len, strings)) + sum(map(len, nested))
        shapes.append(len(buckets))
        del squares, buckets, strings, nested
    return total, sum(shapes)


def worker(index, inbox, outbox, results):
    """Builds objects, passes them on to the next worker, consumes what it is given."""
    rng = Rng(1000 + index)
    consumed = 0
    checksum = 0
    for step in range(1500):
        record = {
            "worker": index,
            "step": step,
            "words": [rng.word(4 + rng.next() % 6) for _ in range(20)],
            "numbers": list(range(step % 50)),
        }
        outbox.put(record)
        got = inbox.get()
        # objects allocated by another thread are read, copied and dropped here
        copy = json.loads(json.dumps(got))
        consumed += len(copy["words"]) + len(copy["numbers"])
        checksum = (checksum * 31 + sum(len(w) for w in copy["words"]) + copy["step"]) % 1000000007
    results[index] = (consumed, checksum)


def threads_exchanging(count=6):
    queues = [queue.Queue(maxsize=4) for _ in range(count)]
    results = [None] * count
    threads = [
        # worker i reads queue i and writes queue i+1: a ring
        threading.Thread(target=worker, args=(i, queues[i], queues[(i + 1) % count], results))
        for i in range(count)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def json_round_trips(rng):
    doc = {
        "items": [
            {"id": i, "name": rng.word(8), "tags": [rng.word(3) for _ in range(i % 5)], "value": i * 1.5}
            for i in range(3000)
        ],
        "meta": {"nested": [[j, {"k": str(j)}] for j in range(500)]},
    }
    text = ""
    for _ in range(30):
        text = json.dumps(doc, sort_keys=True)
        doc = json.loads(text)
    return len(text), digest(doc)


def regex_work(rng):
    lines = [f"{rng.word(5)}-{rng.next() % 10000} {rng.word(7)}@{rng.word(4)}.org x={rng.next() % 999}" for _ in range(60000)]
    pattern = re.compile(r"^([a-z]+)-(\d+) (\w+)@(\w+)\.org x=(\d+)$")
    emails = 0
    total = 0
    for line in lines:
        m = pattern.match(line)
        if m:
            emails += 1
            total += int(m.group(2)) + int(m.group(5))
    replaced = re.sub(r"\d+", lambda m: str(len(m.group(0))), "\n".join(lines[:2000]))
    words = re.findall(r"[a-z]{6,}", replaced)
    return emails, total, len(replaced), len(words)


class Node:
    def __init__(self, value):
        self.value = value
        self.peer = None
        self.payload = [value] * 10


def gc_cycles():
    collected = 0
    for _ in range(20):
        nodes = [Node(i) for i in range(2000)]
        for a, b in zip(nodes, nodes[1:] + nodes[:1]):
            a.peer = b   # a ring of reference cycles, freed only by the collector
        del nodes, a, b
        collected += gc.collect()
    return collected > 0


def main():
    rng = Rng(42)
    print("dict-churn", *dict_and_string_churn(rng))
    print("comprehensions", *comprehension_churn(rng))
    for i, (consumed, checksum) in enumerate(threads_exchanging()):
        print("thread", i, consumed, checksum)
    print("json", *json_round_trips(rng))
    print("re", *regex_work(rng))
    print("gc-collected-cycles", gc_cycles())
    big = bytearray()
    for i in range(2000):
        big += bytes([i % 256]) * 500     # realloc growth of one large buffer
    print("bytearray", len(big), hashlib.sha256(big).hexdigest()[:16])
    sys.stdout.flush()
    # stderr is compared too
    print("workload done", file=sys.stderr)


if __name__ == "__main__":
    main()
