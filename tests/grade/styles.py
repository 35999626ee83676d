"""A generated class of independent, correct answers to the exercises, written in different styles: for each
function several ways to write it, put together part by part, with equivalent rewrites of single lines (a flipped
comparison, `i -= 1` or `i = i - 1`, ...) chosen at random per line. Used to measure the similarity threshold
(lab/grade/outputs/similarity.py) and by its tests. Also: a copy of another answer with every name changed."""

from __future__ import annotations

import ast
import random
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Function -> parts; each part is a list of alternative bodies (indented by 4), concatenated in order.
BODIES: dict[str, list[list[str]]] = {
    "high_water_mark": [[
        """    if not match_indexes:
        raise ValueError("no match indexes")
    ordered = sorted(match_indexes, reverse=True)
    return ordered[len(match_indexes) // 2]
""", """    n = len(match_indexes)
    if n == 0:
        raise ValueError("empty")
    need = n // 2 + 1
    best = 0
    for candidate in set(match_indexes):
        holders = sum(1 for m in match_indexes if m >= candidate)
        if holders >= need and candidate > best:
            best = candidate
    return best
""", """    if len(match_indexes) < 1:
        raise ValueError("at least one node")
    ascending = sorted(match_indexes)
    return ascending[(len(ascending) - 1) // 2]
""", """    import heapq
    if not match_indexes:
        raise ValueError("no nodes")
    majority = len(match_indexes) // 2 + 1
    return heapq.nlargest(majority, match_indexes)[-1]
"""]],
    "on_replication_response": [[
        """    previous = match_index.get(follower, 0)
    if acknowledged > previous:
        match_index[follower] = acknowledged
""", """    match_index[follower] = max(acknowledged, match_index.get(follower, 0))
""", """    if follower not in match_index or match_index[follower] < acknowledged:
        match_index[follower] = acknowledged
"""], [
        """    candidate = high_water_mark(list(match_index.values()))
""", """    indexes = []
    for node in match_index:
        indexes.append(match_index[node])
    candidate = high_water_mark(indexes)
""", """    candidate = high_water_mark([m for m in match_index.values()])
"""], [
        """    if candidate <= current_hwm:
        return current_hwm
    if generation_at(candidate) != generation:
        return current_hwm
    return candidate
""", """    ok = candidate > current_hwm and generation_at(candidate) == generation
    return candidate if ok else current_hwm
""", """    result = current_hwm
    if candidate > result:
        if generation_at(candidate) == generation:
            result = candidate
    return result
"""]],
    "follower_append": [[
        """    if prev_index > log.log_end:
        return AppendResult(success=False, conflict_index=log.log_end + 1)
""", """    end = log.log_end
    if end < prev_index:
        return AppendResult(success=False, conflict_index=end + 1)
""", """    if not prev_index <= log.log_end:
        missing_from = log.log_end + 1
        return AppendResult(conflict_index=missing_from, success=False)
"""], [
        """    held = log.generation_at(prev_index)
    if held != prev_generation:
        first = prev_index
        while first > 1 and log.generation_at(first - 1) == held:
            first -= 1
        return AppendResult(success=False, conflict_index=first)
""", """    if log.generation_at(prev_index) != prev_generation:
        bad = log.generation_at(prev_index)
        index = prev_index
        while index > 1:
            if log.generation_at(index - 1) != bad:
                break
            index -= 1
        return AppendResult(success=False, conflict_index=index)
""", """    theirs = log.generation_at(prev_index)
    if theirs == prev_generation:
        pass
    else:
        start = prev_index
        for earlier in range(prev_index - 1, 0, -1):
            if log.generation_at(earlier) != theirs:
                break
            start = earlier
        return AppendResult(success=False, conflict_index=start)
"""], [
        """    skip = 0
    for entry in entries:
        if entry.index <= log.log_end and log.generation_at(entry.index) == entry.generation:
            skip += 1
        else:
            break
    rest = tuple(entries[skip:])
""", """    position = next((k for k, x in enumerate(entries)
                     if x.index > log.log_end or log.generation_at(x.index) != x.generation), len(entries))
    rest = tuple(entries[position:])
""", """    rest = ()
    i = 0
    while i < len(entries):
        e = entries[i]
        if e.index > log.log_end or log.generation_at(e.index) != e.generation:
            rest = tuple(entries[i:])
            break
        i += 1
"""], [
        """    truncate = rest[0].index if rest and rest[0].index <= log.log_end else None
    return AppendResult(success=True, truncate_from=truncate, append=rest, match_index=prev_index + len(entries))
""", """    conflict = None
    if len(rest) > 0 and rest[0].index <= log.log_end:
        conflict = rest[0].index
    matched = prev_index + len(entries)
    return AppendResult(success=True, match_index=matched, append=rest, truncate_from=conflict)
"""]],
    "check_read": [[
        """    if index < 1:
        return "not available: index %d does not exist" % index
    if index > high_water_mark:
        return "not available: index %d is above the high-water mark %d" % (index, high_water_mark)
    return None
""", """    if 1 <= index <= high_water_mark:
        return None
    if index <= 0:
        return f"not available: no index {index}"
    return f"not available: index {index} is above the high-water mark {high_water_mark}"
""", """    problem = None
    if index <= 0:
        problem = "not available: indexes start at 1"
    elif index > high_water_mark:
        problem = "not available: index {} is above the high-water mark {}".format(index, high_water_mark)
    return problem
"""]],
    "plan_truncation": [[
        """    doomed = [s.path for s in segments if s.first_index > index]
    holder = [s for s in segments if s.first_index <= index and index in s.offsets]
    if not holder and not doomed:
        raise ValueError("index %d is in no segment" % index)
    if holder:
        return TruncationPlan(delete=tuple(doomed), cut_path=holder[0].path, cut_offset=holder[0].offsets[index])
    return TruncationPlan(delete=tuple(doomed), cut_path=None, cut_offset=0)
""", """    plan_delete = []
    path = None
    offset = 0
    for seg in segments:
        if index < seg.first_index:
            plan_delete.append(seg.path)
            continue
        where = seg.offsets.get(index)
        if where is not None:
            path, offset = seg.path, where
    if path is None and len(plan_delete) == 0:
        raise ValueError("nothing to truncate")
    return TruncationPlan(delete=tuple(plan_delete), cut_path=path, cut_offset=offset)
""", """    found = None
    for s in segments:
        if s.first_index <= index and index in s.offsets:
            found = s
    later = tuple(s.path for s in segments if s.first_index > index)
    if found is None:
        if not later:
            raise ValueError(f"no segment holds index {index}")
        return TruncationPlan(delete=later, cut_path=None, cut_offset=0)
    return TruncationPlan(delete=later, cut_path=found.path, cut_offset=found.offsets[index])
"""]],
    "leader_epoch_end": [[
        """    i = log.log_end
    while i > 0 and log.generation_at(i) > of_generation:
        i -= 1
    return i
""", """    for index in range(log.log_end, 0, -1):
        if log.generation_at(index) <= of_generation:
            return index
    return 0
""", """    last = 0
    for index in range(1, log.log_end + 1):
        if log.generation_at(index) > of_generation:
            break
        last = index
    return last
"""]],
    "epoch_truncation_point": [[
        """    if end_index < log.log_end:
        return end_index + 1
    return None
""", """    return end_index + 1 if log.log_end > end_index else None
""", """    if log.log_end <= end_index:
        return None
    first_removed = end_index + 1
    return first_removed
"""]],
}

MODULES = ("high_water_mark", "leader", "follower", "reads", "wal_truncation", "leader_epoch")

# Equivalent rewrites of one line, each applied or not at random (a pattern, its replacement).
OPERAND = r"(?<![\w.\])])([\w.]+)"
REWRITES = [
    (re.compile(r"\b(\w+) -= 1\b"), r"\1 = \1 - 1"),
    (re.compile(r"\b(\w+) \+= 1\b"), r"\1 = \1 + 1"),
    (re.compile(r"if not (\w+):"), r"if len(\1) == 0:"),
    (re.compile(OPERAND + r" > ([\w.]+)(?=[ :)])"), r"\2 < \1"),
    (re.compile(OPERAND + r" <= ([\w.]+)(?=[ :)])"), r"\2 >= \1"),
    (re.compile(OPERAND + r" != ([\w.]+)(?=[ :)])"), r"not \1 == \2"),
    (re.compile(r"\breturn None$"), r"return"),
    (re.compile(r"^(\s+)return (.+)$"), r"\1result = \2\n\1return result"),
]
COMPARISON = re.compile(r" (<|>|<=|>=|==|!=) ")


def _chained(line: str) -> bool:
    """A chained comparison (1 <= i <= h): flipping one half would change its meaning."""
    return len(COMPARISON.findall(line)) > 1 and " and " not in line and " or " not in line


def _rewrite(body: str, rng: random.Random) -> str:
    out = []
    for line in body.splitlines():
        whole = line.count("(") == line.count(")")  # a statement on one line
        for pattern, repl in REWRITES:
            if whole and not _chained(line) and pattern.search(line) and rng.random() < 0.5:
                line = pattern.sub(repl, line, count=1)
        out.append(line)
    return "\n".join(out) + "\n"


def body(function: str, rng: random.Random) -> str:
    return "".join(_rewrite(rng.choice(part), rng) for part in BODIES[function])


def answer(module: str, rng: random.Random) -> str:
    """The student's file of one exercise module: the handout's stub with each function's
    `raise NotImplementedError(...)` replaced by a body in a style of its own."""
    stub = (ROOT / "exercises" / f"{module}.py").read_text()
    lines = stub.splitlines(keepends=True)
    tree = ast.parse(stub)
    cuts = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and isinstance(node.body[-1], ast.Raise):
            raise_ = node.body[-1]
            cuts.append((raise_.lineno - 1, raise_.end_lineno, body(node.name, rng)))
    for start, end, text in sorted(cuts, reverse=True):
        lines[start:end] = [text]
    return "".join(lines)


def student_files(seed: int) -> dict[str, bytes]:
    """files/exercises/<module>.py of one independent student, keyed as in a version 2 submission."""
    rng = random.Random(seed)
    return {f"exercises/{m}.py": answer(m, rng).encode() for m in MODULES}


def renamed(files: dict[str, bytes], seed: int = 0) -> dict[str, bytes]:
    """A copy with every local name changed: what a copier does to hide it."""
    import io
    import tokenize

    rng = random.Random(seed)
    out = {}
    for path, data in files.items():
        text = data.decode()
        tree = ast.parse(text)
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        new = {name: f"v{rng.randrange(10**6)}_{name[::-1]}" for name in sorted(names)}
        lines = text.splitlines(keepends=True)
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
                  if t.type == tokenize.NAME and t.string in new]
        for t in reversed(tokens):  # only the names themselves, never the same word in a docstring
            row, col = t.start
            lines[row - 1] = lines[row - 1][:col] + new[t.string] + lines[row - 1][t.end[1]:]
        out[path] = "".join(lines).encode()
    return out
