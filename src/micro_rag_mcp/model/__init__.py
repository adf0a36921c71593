"""The embedding model: weights, the ONNX graph and its cache, the encoder, its handle."""
