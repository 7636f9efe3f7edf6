import os

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("TFCOURSE_STRICT_FONTS", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

if os.environ.get("PYTEST_XDIST_WORKER"):
    # make test 用 2 个 xdist 进程跑在 2 个核上：每个进程只用 1 个线程。线程数超过核数时，
    # OpenMP 线程互相等待，小模型的训练测试会慢上好几倍。
    torch.set_num_threads(1)


@pytest.fixture
def one_thread():
    """小模型用 1 个线程更快（机器忙时尤其如此），结果也不随核数变；测完恢复。"""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def pytest_collection_modifyitems(config, items):
    """标记 once_on_second_path 的测试（重训一个模型那样要一两分钟的数值对照）只跑一遍：在 make numerics
    换上的另一条 CPU 路径上（ATEN_CPU_CAPABILITY 设了值时）；本机默认路径的那一遍跳过。"""
    if os.environ.get("ATEN_CPU_CAPABILITY"):
        return
    skip = pytest.mark.skip(reason="只在另一条 CPU 路径上跑一遍（make numerics）")
    for item in items:
        if "once_on_second_path" in item.keywords:
            item.add_marker(skip)
