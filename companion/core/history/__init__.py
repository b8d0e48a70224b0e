"""A turn's history: checkpoints of the workspace (the private content store, its pins, the folder
watch), what a turn changed (change sets), restores, a chat's turns and what its agent wrote.
Imports only core/files and core/system: never the server or the editor model."""
