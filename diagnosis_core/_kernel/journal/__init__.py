"""The §12 journal machinery shared by both workflows: entries, codec, MAC chain, fold."""
