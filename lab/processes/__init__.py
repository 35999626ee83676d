"""The real-process adapters: the node process, the supervisor that starts and faults them, and the clients."""
