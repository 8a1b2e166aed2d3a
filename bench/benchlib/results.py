# SPDX-License-Identifier: MIT
"""Result files. A run writes into its --out directory (default bench/results/) three files
with one stem, <prefix><date>-<host>[-quick]: the report (.md), one chart (suite: .png, which
the README embeds; mem: .svg) and the raw data (.json.gz, every run's numbers: gzip keeps a
committed run at about a tenth of the plain JSON)."""
import gzip
import json
import os
import re
import socket
import time


def stem(prefix, quick):
    host = re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname()) or "host"
    return "%s%s-%s%s" % (prefix, time.strftime("%Y%m%d-%H%M%S"), host, "-quick" if quick else "")


def write_json(path, data, **dump_options):
    """Write data as gzip-compressed JSON to path (which ends in .json.gz)."""
    # mtime=0: the same data gives the same bytes, so a re-written file is no change for git
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write((json.dumps(data, **dump_options) + "\n").encode())


def read_json(path):
    """The data of a result file: .json.gz, or a plain .json of an older run."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def strip_json(path):
    """path without .json.gz (or .json): the stem the run's other files share."""
    for ext in (".json.gz", ".json"):
        if path.endswith(ext):
            return path[:-len(ext)]
    return path


def write_text(path, text):
    with open(path, "w") as f:
        f.write(text)
    return os.path.basename(path)
