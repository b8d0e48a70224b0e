"""Line diffs whose cost stays near linear in the file's size (issue #36).

`difflib.SequenceMatcher(autojunk=False)` is quadratic on repeated lines (blank lines, `}`): an
agent's one-line edit of a 20 000-line file took seconds. Here the common head and tail are
trimmed first, then the middle is split at lines that occur once on each side (patience diff:
the longest run of them in the same order on both sides), and what is left between two such
anchors is trimmed again and, when it holds no unique line, diffed with Myers' O((N+M)·D)
algorithm. When that too would cost more than a fixed budget, the rest is one replaced block:
still a correct edit script, only not the shortest one.

The answer has difflib's shape (`opcodes` like `get_opcodes`, `unified_diff` like
`difflib.unified_diff`) so the callers read as before.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Hashable, Iterator, Sequence
from operator import eq

Opcode = tuple[str, int, int, int, int]  # (tag, i1, i2, j1, j2) as difflib's get_opcodes
Block = tuple[int, int, int]  # (i, j, n): a[i:i+n] == b[j:j+n]

_MYERS_BUDGET = 1_000_000  # steps of one Myers run before its range is taken as one replaced block
_MAX_D = 2_000  # edits one Myers run may find (its trace is kept in memory: O(D²))
_ALIGNED_MIN = 1_024  # lines on each side from which a range is first split at its aligned runs
_ALIGNED_RUN = re.compile(rb"\x01{64,}")  # 64 lines equal in place: a run the edit left untouched


def opcodes(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[Opcode]:
    """How to turn `a` into `b`: "equal", "replace", "delete" and "insert" ranges in order,
    covering both sequences, as `difflib.SequenceMatcher.get_opcodes`."""
    found: list[Opcode] = []
    i = j = 0
    for ai, bj, size in matching_blocks(a, b):
        tag = "replace" if i < ai and j < bj else "delete" if i < ai else "insert" if j < bj else ""
        if tag:
            found.append((tag, i, ai, j, bj))
        i, j = ai + size, bj + size
        if size:
            found.append(("equal", ai, i, bj, j))
    return found


def matching_blocks(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[Block]:
    """Runs of equal lines, increasing on both sides, adjacent runs joined, ending with the
    (len(a), len(b), 0) sentinel as difflib's `get_matching_blocks`."""
    xs, ys = list(a), list(b)  # str lines keep their hash: no interning needed
    pairs: list[Block] = []
    ranges = [(0, len(xs), 0, len(ys))]
    while ranges:  # a stack, not recursion: nested ranges can be as many as lines
        ranges.extend(_split(xs, ys, *ranges.pop(), pairs))
    pairs.sort()
    joined: list[Block] = []
    for i, j, n in pairs:
        if joined and joined[-1][0] + joined[-1][2] == i and joined[-1][1] + joined[-1][2] == j:
            joined[-1] = (joined[-1][0], joined[-1][1], joined[-1][2] + n)
        else:
            joined.append((i, j, n))
    joined.append((len(a), len(b), 0))
    return joined


def _split(
    xs: list[Hashable], ys: list[Hashable], a0: int, a1: int, b0: int, b1: int, pairs: list[Block]
) -> list[tuple[int, int, int, int]]:
    """Match the common head and tail of xs[a0:a1] and ys[b0:b1] into `pairs`; the ranges left to
    match (between unique anchors), or none when the middle is settled here."""
    head = 0
    while a0 + head < a1 and b0 + head < b1 and xs[a0 + head] == ys[b0 + head]:
        head += 1
    if head:
        pairs.append((a0, b0, head))
        a0, b0 = a0 + head, b0 + head
    tail = 0
    while a1 - tail > a0 and b1 - tail > b0 and xs[a1 - tail - 1] == ys[b1 - tail - 1]:
        tail += 1
    if tail:
        pairs.append((a1 - tail, b1 - tail, tail))
        a1, b1 = a1 - tail, b1 - tail
    if a0 == a1 or b0 == b1:
        return []
    if min(a1 - a0, b1 - b0) >= _ALIGNED_MIN:
        aligned = _aligned_runs(xs, ys, a0, a1, b0, b1, pairs)
        if aligned:
            return aligned
    anchors = _unique_anchors(xs, ys, a0, a1, b0, b1)
    if not anchors:
        pairs.extend(_myers(xs, ys, a0, a1, b0, b1))
        return []
    # Between two anchors the lines are often equal already: one run across them, not a range each.
    ranges: list[tuple[int, int, int, int]] = []
    i, j = a0, b0  # where the lines after the last anchor start
    run: tuple[int, int] | None = None  # where the run of matched lines reaching (i, j) starts
    for ai, bj in [*anchors, (a1, b1)]:
        if (ai == i and bj == j) or (ai - i == bj - j and xs[i:ai] == ys[j:bj]):
            run = run or (i, j)
        else:
            if run is not None:
                pairs.append((run[0], run[1], i - run[0]))
            ranges.append((i, ai, j, bj))
            run = (ai, bj)
        i, j = ai + 1, bj + 1
    if run is not None and run[0] < a1:
        pairs.append((run[0], run[1], a1 - run[0]))
    return ranges


def _aligned_runs(
    xs: list[Hashable], ys: list[Hashable], a0: int, a1: int, b0: int, b1: int, pairs: list[Block]
) -> list[tuple[int, int, int, int]]:
    """Match the long runs of lines equal at the same offset from (a0, b0), or else from (a1, b1),
    into `pairs`: the ranges before, between and after them, left to match; none when there is no
    such run.

    An edit in place (the usual agent edit: lines changed, as many as before) leaves the rest of a
    file's middle aligned, and lines added or removed leave it aligned with one end. Finding that
    in C (one comparison per line, a regex over the result) costs a fraction of counting every
    line for unique anchors, and leaves small ranges."""
    size = min(a1 - a0, b1 - b0)
    for i0, j0 in ((a0, b0), (a1 - size, b1 - size)):
        same = bytes(map(eq, xs[i0 : i0 + size], ys[j0 : j0 + size]))  # 1 where the lines are equal
        ranges: list[tuple[int, int, int, int]] = []
        i, j = a0, b0  # where the lines after the last run start
        for run in _ALIGNED_RUN.finditer(same):
            start, stop = run.span()
            ranges.append((i, i0 + start, j, j0 + start))
            pairs.append((i0 + start, j0 + start, stop - start))
            i, j = i0 + stop, j0 + stop
        if ranges:
            ranges.append((i, a1, j, b1))
            return ranges
    return []


def _unique_anchors(
    xs: list[Hashable], ys: list[Hashable], a0: int, a1: int, b0: int, b1: int
) -> list[tuple[int, int]]:
    """The longest run, in order on both sides, of lines that occur exactly once on each side."""
    in_a, in_b = Counter(xs[a0:a1]), Counter(ys[b0:b1])  # counted in C
    at_b = {line: j for j, line in enumerate(ys[b0:b1], b0) if in_b[line] == 1 and in_a[line] == 1}
    return _longest_increasing([(i, at_b[line]) for i, line in enumerate(xs[a0:a1], a0) if line in at_b])


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of `pairs` (sorted by the first item) increasing in the second
    (patience sorting: O(n log n)); the pairs as they are when no line moved, the usual case."""
    if all(pairs[n][1] < pairs[n + 1][1] for n in range(len(pairs) - 1)):
        return pairs
    tops: list[int] = []  # the smallest last second item of an increasing run of each length
    top_index: list[int] = []
    before: list[int] = []
    for n, (_i, j) in enumerate(pairs):
        pile = bisect_left(tops, j)
        if pile == len(tops):
            tops.append(j)
            top_index.append(n)
        else:
            tops[pile] = j
            top_index[pile] = n
        before.append(top_index[pile - 1] if pile else -1)
    run: list[tuple[int, int]] = []
    n = top_index[-1] if top_index else -1
    while n >= 0:
        run.append(pairs[n])
        n = before[n]
    run.reverse()
    return run


def _myers(xs: list[Hashable], ys: list[Hashable], a0: int, a1: int, b0: int, b1: int) -> list[Block]:
    """The matching runs of a shortest edit script of xs[a0:a1] → ys[b0:b1] (Myers 1986), or none
    (one replaced block) when finding it would take more than the budget."""
    n, m = a1 - a0, b1 - b0
    max_d = min(n + m, _MAX_D)
    off = max_d + 1
    v = [0] * (2 * max_d + 3)
    trace: list[list[int]] = []  # v after each d, for the diagonals -d..d
    steps = 0
    for d in range(max_d + 1):
        for k in range(-d, d + 1, 2):
            down = k == -d or (k != d and v[off + k - 1] < v[off + k + 1])  # down: a line inserted
            x = v[off + k + 1] if down else v[off + k - 1] + 1  # or right: a line deleted
            y = x - k
            start = x
            while x < n and y < m and xs[a0 + x] == ys[b0 + y]:
                x += 1
                y += 1
            steps += x - start + 1
            v[off + k] = x
            if x >= n and y >= m:
                return _myers_path(trace, n, m, d, a0, b0)
        if steps > _MYERS_BUDGET:
            return []
        trace.append(v[off - d : off + d + 1])
    return []


def _myers_path(trace: list[list[int]], x: int, y: int, d: int, a0: int, b0: int) -> list[Block]:
    """The diagonal runs of the path that reached (x, y) after `d` edits, walked back."""
    blocks: list[Block] = []
    for step in range(d, 0, -1):
        v = trace[step - 1]  # diagonals -(step-1)..(step-1) at index k + step - 1
        k = x - y
        down = k == -step or (k != step and v[k - 1 + step - 1] < v[k + 1 + step - 1])
        prev_k = k + 1 if down else k - 1
        prev_x = v[prev_k + step - 1]
        prev_y = prev_x - prev_k
        mid_x = prev_x if down else prev_x + 1
        if x > mid_x:
            blocks.append((a0 + mid_x, b0 + mid_x - k, x - mid_x))
        x, y = prev_x, prev_y
    if x > 0:
        blocks.append((a0, b0, x))  # the snake from the start
    return blocks


def unified_diff(a: Sequence[str], b: Sequence[str], fromfile: str = "", tofile: str = "", n: int = 3) -> Iterator[str]:
    """`difflib.unified_diff(a, b, fromfile, tofile, n=n)`'s lines, from `opcodes`."""
    started = False
    for group in _grouped(opcodes(a, b), n):
        if not started:
            started = True
            yield f"--- {fromfile}\n"
            yield f"+++ {tofile}\n"
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in a[i1:i2])
                continue
            yield from ("-" + line for line in a[i1:i2])
            yield from ("+" + line for line in b[j1:j2])


def _range(start: int, stop: int) -> str:
    """A hunk's range as the unified format writes it (difflib's _format_range_unified)."""
    length = stop - start
    first = start + 1 if length else start
    return str(first) if length == 1 else f"{first},{length}"


def _grouped(codes: list[Opcode], n: int) -> Iterator[list[Opcode]]:
    """The changes with up to `n` lines of context, in hunks (difflib's get_grouped_opcodes)."""
    if not codes:
        codes = [("equal", 0, 1, 0, 1)]
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = (tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2)
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = (tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n))
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * n:
            group.append((tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            yield group
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group
