"""The vector machinery of blocks and memories (`vectors.Indexer`): embedding, the in-memory
or sqlite-vec index, catch-up indexing. The SQL it runs lives in `store/`."""
