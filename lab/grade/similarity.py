"""Similar submissions, found on Spark: each student's exercise files as normalised token shingles (names and
literals abstracted, the handout's own stub lines left out), MinHash LSH (Spark ML) for the candidate pairs, whole
submissions and per exercise, against each other and against `solutions/`. Listed, never scored."""

from __future__ import annotations

import difflib
import html
import io
import json
import keyword
import tokenize
import zlib
from dataclasses import dataclass, field
from pathlib import Path

SHINGLE = 5  # tokens per shingle
FEATURES = 1 << 20  # shingles are hashed into this many features
HASH_TABLES = 10
SEED = 24
# Measured on generated classes of 30 independent correct answers in different styles (tests/grade/styles.py;
# bench/similarity.py prints the figures, docs/grading.md has them): the most similar independent pairs were at
# 0.61 to 0.74 whole and 0.85 to 0.94 in the one exercise file large enough to compare alone; a copy with its names
# changed is at 1.0.
WHOLE_THRESHOLD = 0.85
EXERCISE_THRESHOLD = 0.97
# An exercise file with fewer distinct shingles than this (about 25 lines of the student's own code) says too
# little on its own: two independent answers of a few short functions are often written alike, token for token.
# It still counts in the whole submission.
MIN_SHINGLES = 120
MIN_WHOLE_SHINGLES = 40
SOLUTIONS = "solutions/"  # the pseudo-student that holds the reference answers
WHOLE = "whole submission"


@dataclass
class Source:
    """One student's exercise file, normalised."""

    text: str
    lines: list[str]  # the normalised tokens of each source line ("" for a line left out)
    shingles: set[int] = field(default_factory=set)


@dataclass(frozen=True)
class Pair:
    scope: str  # WHOLE or a module path (exercises/leader.py)
    a: str
    b: str
    similarity: float
    matches: tuple  # ((module, line a, line b, text a, text b), ...) of the lines that match


def _stub_lines(module: str, stubs: dict[str, str]) -> set[str]:
    return {line.strip() for line in stubs.get(module, "").splitlines() if line.strip()}


def normalise(text: str, stub: set[str] = frozenset()) -> Source:
    """Tokens per line: names -> ID, numbers -> N, strings -> S, keywords and operators kept, comments dropped;
    tokens on a line the handout's stub holds too are left out (its signatures and docstrings)."""
    raw = text.splitlines()
    per_line: dict[int, list[str]] = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        tokens = []  # not Python: compared as nothing rather than guessed at
    for tok in tokens:
        row = tok.start[0]
        if row - 1 < len(raw) and raw[row - 1].strip() in stub:
            continue
        if tok.type == tokenize.NAME:
            word = tok.string if keyword.iskeyword(tok.string) else "ID"
        elif tok.type == tokenize.NUMBER:
            word = "N"
        elif tok.type == tokenize.STRING:
            word = "S"
        elif tok.type == tokenize.OP:
            word = tok.string
        elif tok.type == tokenize.INDENT:
            word = "{"
        elif tok.type == tokenize.DEDENT:
            word = "}"
        else:
            continue
        per_line.setdefault(row, []).append(word)
    lines = [" ".join(per_line.get(n, [])) for n in range(1, len(raw) + 1)]
    stream = [w for n in sorted(per_line) for w in per_line[n]]
    shingles = {zlib.crc32(" ".join(stream[i:i + SHINGLE]).encode()) % FEATURES
                for i in range(max(0, len(stream) - SHINGLE + 1))}
    return Source(text, lines, shingles)


def course_folder(name: str) -> Path | None:
    """A folder of the course's own files beside the lab's (exercises/, solutions/), read as files: never through
    the import path, where Spark's job zip (SparkContext.addPyFile) may come first, and a zip has no files."""
    import lab

    folder = Path(lab.__file__).resolve().parents[1] / name
    return folder if (folder / "__init__.py").is_file() else None


def handout_stubs() -> dict[str, str]:
    """The stubs of the handout this grader ships (exercises/*.py), by module path."""
    root = course_folder("exercises")
    return {f"exercises/{p.name}": p.read_text(encoding="utf-8") for p in sorted(root.glob("*.py"))} if root else {}


def reference_files() -> dict[str, str]:
    """solutions/*.py as the exercise files they answer (exercises/<name>.py); none in a handout."""
    root = course_folder("solutions")
    return {f"exercises/{p.name}": p.read_text(encoding="utf-8") for p in sorted(root.glob("*.py"))
            if p.name != "__init__.py"} if root else {}


def documents(files: dict[str, dict[str, str]], stubs: dict[str, str]):
    """(owner, scope, shingles) of every exercise file big enough and of every whole submission, and the
    normalised sources. files: owner -> module path -> text."""
    sources = {owner: {m: normalise(t, _stub_lines(m, stubs)) for m, t in mods.items() if m.endswith(".py")}
               for owner, mods in files.items()}
    docs = []
    for owner, mods in sorted(sources.items()):
        whole = set()
        for module, src in sorted(mods.items()):
            whole |= src.shingles
            if len(src.shingles) >= MIN_SHINGLES:
                docs.append((owner, module, src.shingles))
        if len(whole) >= MIN_WHOLE_SHINGLES:
            docs.append((owner, WHOLE, whole))
    return docs, sources


def candidates(spark, storage, docs, path: str) -> list[tuple[int, int, float]]:
    """Pairs of documents of one scope (their positions in docs, a < b) whose Jaccard similarity may reach the
    lower threshold, with that similarity. MinHash LSH (Spark ML) gives the candidates: the pairs whose MinHash
    values agree in at least one of HASH_TABLES tables, as its approxSimilarityJoin finds them, but joined on the
    hash values alone (that join carries both documents' vectors through a distinct: 38 s for 300 students, against
    4 s here); their exact similarity is then computed on Spark from the shingles, as that join computes it. The
    documents reach Spark as files it reads itself (executors run no Python)."""
    from pyspark.ml.feature import MinHashLSH
    from pyspark.ml.functions import vector_to_array
    from pyspark.sql import functions as F

    vectors, shingles, scopes = [], [], {}
    for i, (_, scope, found) in enumerate(docs):
        ordered = sorted(found)
        vectors.append(f"{i} " + " ".join(f"{s + 1}:1" for s in ordered))
        shingles.append(json.dumps({"id": i, "scope": scopes.setdefault(scope, len(scopes)), "shingles": ordered}))
    storage.write(path, ("\n".join(vectors) + "\n").encode())
    storage.write(path + ".jsonl", ("\n".join(shingles) + "\n").encode())
    data = spark.read.format("libsvm").option("numFeatures", str(FEATURES)).load(storage.for_spark(path))
    model = MinHashLSH(inputCol="features", outputCol="hashes", numHashTables=HASH_TABLES, seed=SEED).fit(data)
    keys = (model.transform(data)
            .select(F.col("label").cast("int").alias("id"), F.posexplode("hashes").alias("table", "h"))
            .select("id", "table", vector_to_array("h")[0].alias("value")))
    pairs = (keys.alias("a").join(keys.alias("b"), ["table", "value"])
             .select(F.col("a.id").alias("a"), F.col("b.id").alias("b")).where("a < b").distinct())
    meta = spark.read.schema("id INT, scope INT, shingles ARRAY<INT>").json(storage.for_spark(path + ".jsonl"))
    side = {x: meta.select(F.col("id").alias(x), F.col("scope").alias(f"scope_{x}"), F.col("shingles").alias(f"s_{x}"))
            for x in ("a", "b")}
    # MinHashLSH's own distance: 1 - |A and B| / |A or B|, in doubles.
    lowest = min(WHOLE_THRESHOLD, EXERCISE_THRESHOLD)
    rows = (pairs.join(side["a"], "a").join(side["b"], "b").where("scope_a = scope_b")
            .selectExpr("a", "b", "size(array_intersect(s_a, s_b)) AS common", "size(s_a) + size(s_b) AS sizes")
            .selectExpr("a", "b", "1D - CAST(common AS DOUBLE) / CAST(sizes - common AS DOUBLE) AS distance")
            .where(F.col("distance") < F.lit(1.0 - lowest + 1e-9)).collect())
    return [(r["a"], r["b"], 1.0 - r["distance"]) for r in rows]


def matching_lines(a: dict[str, Source], b: dict[str, Source], scope: str, limit: int = 60) -> tuple:
    """The lines of a and b that match once normalised, side by side (runs of two lines or more)."""
    out = []
    for module in ([scope] if scope != WHOLE else sorted(set(a) & set(b))):
        sa, sb = a.get(module), b.get(module)
        if not sa or not sb:
            continue
        ka = [(n, line) for n, line in enumerate(sa.lines) if line]
        kb = [(n, line) for n, line in enumerate(sb.lines) if line]
        matcher = difflib.SequenceMatcher(None, [x for _, x in ka], [x for _, x in kb], autojunk=False)
        text_a, text_b = sa.text.splitlines(), sb.text.splitlines()
        for block in matcher.get_matching_blocks():
            if block.size < 2:
                continue
            for k in range(block.size):
                na, nb = ka[block.a + k][0], kb[block.b + k][0]
                out.append((module, na + 1, nb + 1, text_a[na], text_b[nb]))
    return tuple(out[:limit])


def find(spark, storage, files: dict[str, dict[str, str]], path: str, *, stubs: dict[str, str] | None = None,
         with_solutions: bool = True) -> list[Pair]:
    """The pairs above the thresholds, most similar first."""
    files = dict(files)
    if with_solutions:
        reference = reference_files()
        if reference:
            files[SOLUTIONS] = reference
    docs, sources = documents(files, handout_stubs() if stubs is None else stubs)
    if len(docs) < 2:
        return []
    pairs = []
    for i, j, similarity in candidates(spark, storage, docs, path):
        (a, scope, _), (b, scope_b, _) = docs[i], docs[j]
        threshold = WHOLE_THRESHOLD if scope == WHOLE else EXERCISE_THRESHOLD
        if scope != scope_b or a == b or similarity < threshold:
            continue
        a, b = sorted((a, b), key=lambda o: (o == SOLUTIONS, o))
        pairs.append(Pair(scope, a, b, round(similarity, 3), matching_lines(sources[a], sources[b], scope)))
    return sorted(pairs, key=lambda p: (-p.similarity, p.scope != WHOLE, p.scope, p.a, p.b))


# ---- outputs ------------------------------------------------------------------------------------------------

def to_csv(pairs: list[Pair]) -> str:
    import csv

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["scope", "student_a", "student_b", "similarity", "matching_lines_a", "matching_lines_b"])
    for p in pairs:
        w.writerow([p.scope, p.a, p.b, f"{p.similarity:.3f}", _ranges(p, 1), _ranges(p, 2)])
    return buf.getvalue()


def _ranges(p: Pair, side: int) -> str:
    """file:first-last of each run of matching lines, e.g. exercises/leader.py:17-23."""
    runs: list[list] = []
    for m in p.matches:
        module, line = m[0], m[side]
        if runs and runs[-1][0] == module and runs[-1][2] == line - 1:
            runs[-1][2] = line
        else:
            runs.append([module, line, line])
    return "; ".join(f"{m}:{a}-{b}" if a != b else f"{m}:{a}" for m, a, b in runs)


def section_html(pairs: list[Pair], compared: int) -> str:
    e = html.escape
    parts = ["<h2>Similar submissions</h2>",
             f"<p>{compared} submissions with their exercise files compared with each other and with "
             f"<code>solutions/</code>: whole submissions at a similarity of {WHOLE_THRESHOLD:.2f} or more, single "
             f"exercise files at {EXERCISE_THRESHOLD:.2f} or more (Jaccard similarity of their token shingles, "
             "names and literals abstracted, the handout's stub lines left out). Nothing is scored from it: "
             "it says where to look.</p>"]
    if not pairs:
        return "\n".join(parts + ["<p>No similar pair.</p>"])
    parts.append("<table><tr><th>scope</th><th>student</th><th>student</th><th>similarity</th></tr>" + "".join(
        f"<tr><td>{e(p.scope)}</td><td>{e(p.a)}</td><td>{e(p.b)}</td><td>{p.similarity:.2f}</td></tr>"
        for p in pairs) + "</table>")
    for p in pairs:
        rows = "".join(f"<tr><td>{e(m)}:{la}</td><td><pre>{e(ta)}</pre></td><td>{lb}</td><td><pre>{e(tb)}</pre>"
                       f"</td></tr>" for m, la, lb, ta, tb in p.matches)
        # folded until opened: a class has many pairs, each a long table of code side by side
        parts.append(f"<details><summary>{e(p.a)} and {e(p.b)}: {e(p.scope)}, {p.similarity:.2f} "
                     f"({len(p.matches)} matching lines side by side)</summary>"
                     f"<table class=\"side\"><tr><th>line</th><th>{e(p.a)}</th><th>line</th><th>{e(p.b)}</th></tr>"
                     f"{rows}</table></details>")
    return "\n".join(parts)


def submission_files(storage, submissions_dir: str, subs, limits) -> dict[str, dict[str, str]]:
    """student -> module path -> text of the exercise files (files/exercises/*.py) of the given gradable version 2
    submissions, (student, source) pairs, read through the loader's checked archive and folder views."""
    from lab.grade.archive import UNREADABLE, open_box
    from lab.grade.storage import Rejected
    from lab.grade.submissions import FILES_DIR

    out: dict[str, dict[str, str]] = {}
    for student, source in subs:
        try:
            box = open_box(storage, submissions_dir, source, limits)
            mods = {}
            for rel in box.files_under(FILES_DIR):
                module = rel[len(FILES_DIR) + 1:]
                if module.endswith(".py"):
                    mods[module] = box.read(rel, limits.max_meta_bytes).decode("utf-8", errors="replace")
        except (Rejected, *UNREADABLE):
            continue  # graded already; only its similarity is not computed
        if mods:
            out[student] = mods
    return out


def write(spark, storage, submissions_dir: str, subs, limits, staging: str, out: str, say) -> tuple[str, dict]:
    """similarity.csv, and report.html's section with, per student, the pairs that name them (`similar_to`);
    subs: (student, source) of the submissions to compare."""
    from lab.grade.storage import join

    files = submission_files(storage, submissions_dir, subs, limits)
    pairs = find(spark, storage, files, join(staging, "shingles.libsvm")) if files else []
    storage.write(join(out, "similarity.csv"), to_csv(pairs).encode("utf-8", "backslashreplace"))
    say(f"similarity: {len(files)} submissions with exercise files compared; {len(pairs)} similar pairs listed")
    return section_html(pairs, len(files)), similar_to(pairs)


def similar_to(pairs: list[Pair]) -> dict[str, list[tuple[str, str, float]]]:
    """student -> (the other one, scope, similarity) of every listed pair that names them, most similar first."""
    out: dict[str, list[tuple[str, str, float]]] = {}
    for p in pairs:
        out.setdefault(p.a, []).append((p.b, p.scope, p.similarity))
        out.setdefault(p.b, []).append((p.a, p.scope, p.similarity))
    return {s: sorted(found, key=lambda x: (-x[2], x[0], x[1])) for s, found in out.items()}
