"""Sorting a million 64-bit keys in bounded memory, for the index and the crawl report.

``sorted()`` of a million keys in an ``array`` makes a Python int and a list slot for each
at once (~44 bytes a key): at the end of a million-page crawl the runner's report and merge
(the keys file, the segments' records) peaked at 129-194 MiB, these sorts the largest part
(bench/RESULTS.md, issue 22).  Here the keys are split by their top byte into 256 runs,
which are in key order, and each run is sorted alone: the arrays (8 bytes a key, twice)
and a 256th of the Python ints.  Imports nothing of the project.
"""

from __future__ import annotations

from array import array


def sorted_keys(keys: array[int]) -> array[int]:
    """``keys`` of typecode ``Q`` (unsigned 64-bit) sorted, as a new array."""
    runs: list[array[int]] = [array("Q") for _ in range(256)]
    for k in keys:
        runs[k >> 56].append(k)
    out = array("Q")
    for b in range(256):
        out.extend(sorted(runs[b]))
        runs[b] = array("Q")  # each run freed once copied out
    return out


def sorted_pairs(keys: array[int], values: array[int]) -> tuple[array[int], array[int]]:
    """``keys`` of typecode ``q`` (signed 64-bit, e.g. ``hash()``) sorted and ``values``
    (typecode ``q``) in the same order, equal keys in the order they came (stable).
    ``keys`` and ``values`` are emptied."""
    runs_k: list[array[int]] = [array("q") for _ in range(256)]
    runs_v: list[array[int]] = [array("q") for _ in range(256)]
    for k, v in zip(keys, values, strict=True):
        b = (k >> 56) + 128  # -128..127, in key order
        runs_k[b].append(k)
        runs_v[b].append(v)
    del keys[:], values[:]
    out_k, out_v = array("q"), array("q")
    for b in range(256):
        rk, rv = runs_k[b], runs_v[b]
        runs_k[b] = runs_v[b] = array("q")
        order = sorted(range(len(rk)), key=rk.__getitem__)
        out_k.extend(map(rk.__getitem__, order))
        out_v.extend(map(rv.__getitem__, order))
    return out_k, out_v
