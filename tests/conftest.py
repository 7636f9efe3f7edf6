import os

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("TFCOURSE_STRICT_FONTS", "1")

import pytest  # noqa: E402
import torch  # noqa: E402


@pytest.fixture
def one_thread():
    """小模型用 1 个线程更快（机器忙时尤其如此），结果也不随核数变；测完恢复。"""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
