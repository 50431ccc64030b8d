"""Documents: text extraction per format, chunking, and ingestion as document_chunk blocks."""
