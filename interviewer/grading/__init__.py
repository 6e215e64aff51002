"""Grading: reading an answer, the offline, reference and model graders, and their calibration."""
