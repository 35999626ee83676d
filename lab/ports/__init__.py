"""The driver that applies a replica's output, and the ports it applies it through, each beside its twin:
log storage (the write-ahead log, an in-memory log), durable state (file, memory), the trace (file, memory, off)
and the wire format of the TCP transport; and the fault vocabulary every cluster speaks (cluster.py)."""
