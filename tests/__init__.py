"""The test suite: see README.md in this folder for its layout."""
