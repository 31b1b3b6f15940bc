//! Unit tests of the transcript.
