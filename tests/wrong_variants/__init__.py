"""Deliberately wrong answers, one per exercise: `hwm-lab exercise check` must catch each, naming the rule."""
