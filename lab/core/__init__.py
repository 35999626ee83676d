"""The replication core: the replica and the values it takes and gives. No sockets, files, threads or clocks."""
