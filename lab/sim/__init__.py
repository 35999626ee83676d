"""The seeded simulator and the teaching scenarios, which run on it and on real processes alike."""
