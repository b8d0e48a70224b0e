"""Sublime Text entry point of Gemini Companion (placeholder until the adapter lands)."""
