"""Runtimes behind one protocol: ``reference`` (opkit's generated kernels), onnxruntime,
onnx.reference, third-party runtimes and any ``module:Class``. Every lookup by name goes through
``registry`` (``registry.get`` for opkit's protocol, ``registry.backend_api_class`` for onnx's
Backend API)."""
