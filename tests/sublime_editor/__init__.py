"""Whole flows of the Sublime adapter through our fake Sublime, observed by real MCP clients."""
