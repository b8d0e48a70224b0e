"""Installability: dependencies.json, repository.json, the library closure, graceful failure, dev install."""
