"""The block memory graph (seed 004): blocks, typed relationships, walks, retrieval, learning;
`api.py` holds the request/result types its functions take and return."""
