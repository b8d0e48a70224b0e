"""The path policy (which paths are the workspace's, what is excluded) and the safe file I/O every
sharing and writing path goes through: fd-based reads and writes, text with its line endings and
encoding, listings, URIs, the linear line diff. Imports only core/system."""
