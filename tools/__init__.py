"""Maintainer tools: the Package Control repository file, its check, and the developer install."""
