"""The test suite. Its OpenMP threads (PyTorch's and CTranslate2's, libgomp) sleep when they wait instead of
spinning: the loop runs two pytest workers beside the service's replicas on two cores, where a spinning thread
burns the core another process needs (the transformers engine's tests took 90 s instead of 47 s beside two busy
processes). Set here, before any test module or conftest loads those libraries; the service the tests start
inherits it (its engines run one thread each, where the setting changes nothing)."""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
