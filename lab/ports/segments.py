"""The log's segments as the write-ahead log (lab.ports.wal) and its memory twin (lab.ports.memlog) both keep them:
the record format and the segment names, the one check of exercise 5's truncation plan, and what a truncation did.

A record is a 24-byte header, struct `<IIQQ` = (payload length, CRC32, index, generation), then the UTF-8 payload.
The CRC is zlib.crc32 over index and generation (packed `<QQ`) and the payload bytes.
"""

from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

from lab.core.interface import SegmentInfo, TruncationPlan
from lab.core.messages import Entry

__all__ = ["SEGMENT_BYTES", "HEADER", "MAX_PAYLOAD", "SUFFIX", "segment_name", "encode", "decode", "BadRecord",
           "Truncation", "PlanLeftEntries", "check_plan"]

SEGMENT_BYTES = 4 * 1024 * 1024
HEADER = struct.Struct("<IIQQ")  # payload length, crc32, index, generation
CRC_PREFIX = struct.Struct("<QQ")  # index, generation, as covered by the CRC
MAX_PAYLOAD = 16 * 1024 * 1024  # guards the scan against garbage lengths
SUFFIX = ".wal"


class BadRecord(Exception):
    """A record that does not check out."""


def segment_name(first_index: int) -> str:
    return f"{first_index:020d}{SUFFIX}"


def encode(entry: Entry) -> bytes:
    """One record: header then payload."""
    payload = entry.payload.encode("utf-8")
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"payload of index {entry.index} is {len(payload)} bytes, over the maximum {MAX_PAYLOAD}")
    crc = zlib.crc32(payload, zlib.crc32(CRC_PREFIX.pack(entry.index, entry.generation)))
    return HEADER.pack(len(payload), crc, entry.index, entry.generation) + payload


def decode(data, pos: int, expected_index: int) -> tuple[Entry, int]:
    """Decode the record at `pos` of `data`, which must carry `expected_index`; returns it and where the next starts."""
    end_of_header = pos + HEADER.size
    if end_of_header > len(data):
        raise BadRecord(f"short header ({len(data) - pos} of {HEADER.size} bytes)")
    length, crc, index, generation = HEADER.unpack_from(data, pos)
    if length > MAX_PAYLOAD:
        raise BadRecord(f"payload length {length} exceeds the maximum {MAX_PAYLOAD}")
    end = end_of_header + length
    if end > len(data):
        raise BadRecord(f"short payload ({len(data) - end_of_header} of {length} bytes)")
    payload = bytes(data[end_of_header:end])
    if zlib.crc32(payload, zlib.crc32(CRC_PREFIX.pack(index, generation))) != crc:
        raise BadRecord("CRC mismatch")
    if index != expected_index:
        raise BadRecord(f"index {index} where {expected_index} was expected")
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRecord(f"payload is not UTF-8: {exc}") from None
    return Entry(index=index, generation=generation, payload=text), end


# ---- truncation -------------------------------------------------------------------------------------------------


class Truncation(NamedTuple):
    """What a truncation did to the log storage (traced as `wal_truncated`): the plan asked to remove from_index
    and everything after it; log_end is where the plan left the log (from_index - 1 when it was right);
    segments and deleted are the first indexes of the segments left and of those deleted."""

    from_index: int
    log_end: int
    segments: list
    deleted: list


class PlanLeftEntries(RuntimeError):
    """A truncation plan (exercise 5) left entries at or after the index it was to remove."""

    def __init__(self, message: str, truncation: Truncation):
        super().__init__(message)
        self.truncation = truncation


def check_plan(plan: TruncationPlan, segments: list[SegmentInfo], author: str) -> None:
    """Refuse (ValueError) a plan that names a file that is not one of `segments`, or cuts one where no record
    starts or ends. `segments` are the log's own, not the copies the plan's author was handed; `author` names the
    implementation in the error."""
    by_path = {segment.path: segment for segment in segments}
    unknown = [path for path in (*plan.delete, plan.cut_path) if path is not None and path not in by_path]
    if unknown:
        raise ValueError(f"truncation plan of {author!r} names files that are not segments: {unknown}")
    if plan.cut_path is not None:
        cut = by_path[plan.cut_path]
        if plan.cut_offset not in cut.offsets.values() and plan.cut_offset != cut.size:
            raise ValueError(f"truncation plan of {author!r} cuts {plan.cut_path} at {plan.cut_offset}, which is not "
                             "a record boundary")
