"""The Ray cluster of the Ray tests (``cluster`` fixture, shared by the test session):
a head node and one worker node on 127.0.0.1, one CPU each, in a short temporary folder
of their own (logs included), stopped and removed at the end."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

import dptext

LOOPBACK = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@pytest.fixture(scope="session")
def cluster():
    """A head and a worker node on 127.0.0.1: the address, their folder (logs included,
    removed afterwards) and the ``Cluster`` (to add or kill nodes)."""
    import ray
    from ray._private import ray_constants
    from ray.cluster_utils import Cluster

    temp = tempfile.mkdtemp(prefix="dpray")  # short: Ray's socket paths must fit 107 bytes
    env = ("RAY_TMPDIR", "PYTHONPATH", "RAY_USAGE_STATS_ENABLED", LOOPBACK)
    saved = {k: os.environ.get(k) for k in env}
    src = str(Path(dptext.__file__).resolve().parents[1])  # workers import this dptext
    os.environ["RAY_TMPDIR"] = temp
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"  # no usage report leaves the machine
    # one machine: every address stays 127.0.0.1 (else Ray swaps it for the host's IP);
    # read by Ray at import (this process: patched below) and by the nodes it starts
    os.environ[LOOPBACK] = "0"
    cluster_mode = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (src, saved["PYTHONPATH"]) if p)
    folder = Path(temp) / "ray"  # where Ray puts its sessions (and the cluster's address)
    folder.mkdir()
    node = dict(num_cpus=1, node_ip_address="127.0.0.1", object_store_memory=80 * 2**20)
    c = Cluster(initialize_head=True,
                head_node_args=dict(node, temp_dir=str(folder), include_dashboard=False))
    try:
        c.add_node(**node)
        c.wait_for_nodes()
        yield c.address, folder, c
    finally:
        if ray.is_initialized():
            ray.shutdown()
        c.shutdown()
        ray_constants.ENABLE_RAY_CLUSTER = cluster_mode
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(temp, ignore_errors=True)
