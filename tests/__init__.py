"""The test suite: core, real-client conformance, the adapter on our own fake Sublime."""
