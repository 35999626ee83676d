"""The seeded simulator, its teaching scenarios (scenarios/*.txt, run by lab.harness), and the explorer's world: the
same cluster whose network waits for a choice."""
