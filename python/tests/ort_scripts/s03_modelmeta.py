"""get_modelmeta: the ModelProto's metadata, custom map included."""
import os
import tempfile

import onnx
import onnxruntime as ort

import models

# Removed when the script exits, as a user's script would leave nothing behind.
scratch = tempfile.TemporaryDirectory()

path = models.mul_add(os.path.join(scratch.name, "plain.onnx"))
model = onnx.load(path)
model.producer_name = "scripts"
model.producer_version = "1.2"
model.domain = "ai.example"
model.model_version = 7
model.doc_string = "a product, a bias and a ReLU"
model.graph.doc_string = "the graph's own description"
onnx.helper.set_model_props(model, {"author": "xonnx tests", "license": "MIT"})
meta_path = models.save(model, os.path.join(scratch.name, "meta.onnx"))

meta = ort.InferenceSession(meta_path, providers=["CPUExecutionProvider"]).get_modelmeta()
assert meta.producer_name == "scripts", meta.producer_name
assert meta.graph_name == "mul_add"
assert meta.domain == "ai.example"
assert meta.description == "a product, a bias and a ReLU"
assert meta.graph_description == "the graph's own description"
assert meta.version == 7
assert meta.custom_metadata_map == {"author": "xonnx tests", "license": "MIT"}

plain = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).get_modelmeta()
assert plain.custom_metadata_map == {} and plain.version == 0 and plain.description == ""
