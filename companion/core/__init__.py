"""The core shared by every room (moving here from the top of `companion/`)."""
