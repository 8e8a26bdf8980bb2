//! The ACS read cache (placeholder until the cache room lands).
