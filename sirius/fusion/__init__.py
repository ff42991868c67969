"""Fusion: schedules, arrangements, code generation and post-fusion passes."""
