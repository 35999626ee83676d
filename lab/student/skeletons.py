"""The hints the handout's skeletons raise (exercises/*.py, `raise NotImplementedError(...)`), as sentences of the
catalogue: a hint the student has not changed is said in the reader's language, any other as it is written."""

from __future__ import annotations

from lab.i18n import say

HINTS = {str(text): text for text in (
    say("exercise 1: return the largest index held by at least len(match_indexes) // 2 + 1 nodes (hint: sort from "
        "largest to smallest and count)"),
    say("exercise 2: raise match_index[follower] (never lower it), compute the majority index, and return it only "
        "if it is above current_hwm AND its entry is of the current generation; else current_hwm"),
    say("exercise 3: check (prev_index, prev_generation), skip entries you hold, truncate at the first conflict, "
        "append the rest, and answer match_index = prev_index + len(entries)"),
    say("exercise 4: return None when 1 <= index <= high_water_mark, else 'not available: index I is above the "
        "high-water mark H'"),
    say("exercise 5: delete the segments that start after `index`; cut the one holding it at offsets[index]"),
    say("exercise 6: walk back from log.log_end while the entry's generation is above of_generation"),
    say("exercise 6: everything after end_index that this follower holds must go"),
)}


def hint(text: str):
    """The skeleton's hint `text` as a sentence of the catalogue, or `text` itself when the student changed it."""
    return HINTS.get(text, text)
