"""The questions a lecture puts to its room (Peer Instruction): one open at a time, one answer per page (changed at
will until the instructor closes it), counted but never named, and revealed after the step has played.

Every page sees the same view of a question: its prompt, its choices and how many have answered. Nobody sees the
answers' distribution, nor which choice is right, before the reveal. The lecture's answers are kept for a CSV.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
import secrets
import threading
import time
from dataclasses import dataclass, field

from lab.i18n import localize, say
from web.questions import Question

SEAT = re.compile(r"^[A-Za-z0-9_-]{8,64}$")  # a page's own random name for itself (kept in its local storage)
MOST_SEATS = 5000  # answers one question takes: a lecture hall, not a flood
OPEN, CLOSED, REVEALED = "open", "closed", "revealed"


@dataclass
class Asked:
    """A question put to the room, and its answers: seat -> the choice it holds now."""

    number: int
    question: Question
    asked_at: float
    answers: dict[str, int] = field(default_factory=dict)
    state: str = OPEN
    right: int | None = None  # known at the reveal (a live read's, only once it is made)
    stage: object = None  # the outcome the cluster on the stage showed, when it is not the right one
    counts: list[int] | None = None
    why: object = None  # why the answer is what it is, said from what the room watched (None: the question's own)


def seat_of(claimed, fallback: str) -> str:
    """The seat a page answers from: the name it keeps for itself, else its connection's."""
    return claimed if isinstance(claimed, str) and SEAT.match(claimed) else fallback


class Room:
    """The lecture's questions. `publish(event, payload)` sends to every page; `spawn(fn)` runs in the background."""

    def __init__(self, publish, spawn=None, sleep=time.sleep, count_every: float = 0.25):
        self.publish = publish
        self.spawn = spawn or (lambda fn: threading.Thread(target=fn, daemon=True).start())
        self.sleep = sleep
        self.count_every = count_every  # the count reaches the pages this often at most, however fast they answer
        self.lock = threading.Lock()
        self.asked: list[Asked] = []
        self.shown: Asked | None = None  # the question on every page (open, closed or revealed), until dismissed
        self.salt = secrets.token_hex(8)  # seats are written to the CSV as hashes, never as the pages' names

    # ---- the instructor's ---------------------------------------------------------------------------------

    def ask(self, question: Question) -> dict:
        with self.lock:
            if self.shown is not None and self.shown.state != REVEALED:
                raise RuntimeError(say("a question is already open: close it first"))
            asked = self.shown = Asked(len(self.asked) + 1, question, time.time())
            self.asked.append(asked)
        self.publish("question", self.view(asked))
        self.spawn(lambda: self._count_loop(asked))
        return {"ok": True, "question": self.view(asked)}

    def close(self) -> Asked:
        """No more answers: the step may play."""
        with self.lock:
            asked = self.shown
            if asked is None or asked.state != OPEN:
                raise RuntimeError(say("no question is open"))
            asked.state = CLOSED
        self.publish("question", self.view(asked))
        return asked

    def reveal(self, asked: Asked, right: int, stage=None, why=None) -> dict:
        """The step has played: the distribution of the answers, the right choice, why, and what the stage showed
        when it departs from the lab's rule. `why`: the reason said from the stage's own states (what the room
        watched), used when the stage agrees with the lab's answer; when it departs, the rule is said without
        figures (the model's would tell of another run)."""
        with self.lock:
            asked.state, asked.right = REVEALED, right
            asked.stage = stage if stage is not None and stage != asked.question.values[right] else None
            if asked.stage is not None:
                from web.questions import rule_why

                asked.why = rule_why(asked.question.ask)
            elif why is not None:
                asked.why = why
            counts = [0] * len(asked.question.labels)
            for choice in asked.answers.values():
                counts[choice] += 1
            asked.counts = counts
        view = self.view(asked)
        self.publish("question", view)
        return view

    def dismiss(self) -> dict:
        with self.lock:
            if self.shown is not None and self.shown.state == OPEN:
                self.shown.state = CLOSED  # dismissed unanswered: it stays in the lecture's record
            self.shown = None
        self.publish("question", None)
        return {"ok": True}

    # ---- every page's -----------------------------------------------------------------------------------

    def answer(self, seat: str, number, choice) -> dict:
        with self.lock:
            asked = self.shown
            if asked is None or asked.number != number:
                return {"ok": False, "error": say("that question is no longer asked")}
            if asked.state != OPEN:
                return {"ok": False, "error": say("answers are closed")}
            if not isinstance(choice, int) or isinstance(choice, bool) or not 0 <= choice < len(asked.question.labels):
                return {"ok": False, "error": say("choose one of the choices shown")}
            if seat not in asked.answers and len(asked.answers) >= MOST_SEATS:
                return {"ok": False, "error": say("this question has all the answers it can take")}
            asked.answers[seat] = choice  # a second answer replaces the first
        return {"ok": True, "id": number, "choice": choice}

    def mine(self, seat: str) -> int | None:
        asked = self.shown
        return asked.answers.get(seat) if asked is not None else None

    def view(self, asked: Asked | None = None) -> dict | None:
        """What every page is shown: never who answered what, and before the reveal neither the distribution nor
        the right choice."""
        asked = asked or self.shown
        if asked is None:
            return None
        q = asked.question
        view = {"id": asked.number, "kind": q.ask.kind, "prompt": q.prompt, "choices": list(q.labels),
                "state": asked.state, "count": len(asked.answers), "source": q.source}
        if asked.state == REVEALED:
            view.update(counts=list(asked.counts), right=asked.right, why=asked.why or q.why)
            if asked.stage is not None:
                view["stage"] = say("The cluster on the stage showed {outcome}: it departs from the lab's rule here.",
                                    outcome=q.value_label(asked.stage))
        return view

    def _count_loop(self, asked: Asked) -> None:
        """The count as it grows, a few times a second at most: one message per page, not one per answer."""
        shown = 0
        while asked.state == OPEN and self.shown is asked:
            count = len(asked.answers)
            if count != shown:
                shown = count
                self.publish("question_count", {"id": asked.number, "count": count})
            self.sleep(self.count_every)
        if len(asked.answers) != shown and self.shown is asked:
            self.publish("question_count", {"id": asked.number, "count": len(asked.answers)})

    # ---- the lecture's record -----------------------------------------------------------------------------

    COLUMNS = ("question", "asked", "scenario", "truncation", "before_step", "kind", "prompt", "choices", "right",
               "seat", "answer", "correct")

    def csv(self) -> str:
        """Every answer of the lecture, one a row (a question nobody answered has a row of its own); a seat is a
        hash that tells one page's answers from another's, and nothing else."""
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(self.COLUMNS)
        with self.lock:
            asked = list(self.asked)
        for a in asked:
            q = a.question
            labels = [str(localize(label, "en")) for label in q.labels]
            right = labels[a.right] if a.right is not None else ""
            head = [a.number, time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(a.asked_at)),
                    q.source.get("scenario", "live"), q.source.get("truncation", ""), q.source.get("step", ""),
                    q.ask.kind, str(q.prompt), " | ".join(labels), right]
            rows = sorted(a.answers.items(), key=lambda item: self._hash(item[0]))
            if not rows:
                writer.writerow(head + ["", "", ""])
            for seat, choice in rows:
                correct = "" if a.right is None else ("yes" if choice == a.right else "no")
                writer.writerow(head + [self._hash(seat), labels[choice], correct])
        return out.getvalue()

    def _hash(self, seat: str) -> str:
        return hashlib.sha256((self.salt + seat).encode()).hexdigest()[:10]
