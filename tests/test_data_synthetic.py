"""第 4 章的合成任务：位置 t 的标签 = (前一个词, 第一个词)。"""
import pytest
import torch

from tfcourse.data.synthetic import previous_and_first


def test_shapes_dtypes_and_label_definition():
    x, y = previous_and_first(50, 7, vocab_size=5, generator=torch.Generator().manual_seed(0))
    assert x.shape == (50, 7) and y.shape == (50, 6)
    assert x.dtype == torch.int64 and y.dtype == torch.int64
    assert int(x.min()) >= 0 and int(x.max()) < 5
    for t in range(1, 7):                                   # 逐个位置按定义核对
        assert torch.equal(y[:, t - 1], x[:, t - 1] * 5 + x[:, 0])
    assert torch.equal(y // 5, x[:, :-1]) and torch.equal(y % 5, x[:, :1].expand(-1, 6))   # 两部分都能解码回来
    assert int(y.max()) < 25


def test_same_generator_seed_gives_same_data_and_all_classes_appear():
    a = previous_and_first(2000, 4, generator=torch.Generator().manual_seed(3))
    b = previous_and_first(2000, 4, generator=torch.Generator().manual_seed(3))
    assert all(torch.equal(u, v) for u, v in zip(a, b))
    assert torch.unique(a[1]).numel() == 36                 # 默认 6 个词 → 36 类，均匀随机时都会出现


def test_shortest_sequence_has_one_label_equal_to_first_token_twice():
    x, y = previous_and_first(10, 2, vocab_size=3, generator=torch.Generator().manual_seed(1))
    assert y.shape == (10, 1)
    assert torch.equal(y[:, 0], x[:, 0] * 3 + x[:, 0])      # 位置 1 的前一个词就是第一个词


@pytest.mark.parametrize("kwargs, message", [
    ({"n": 0, "length": 5}, "样本数"),
    ({"n": 3, "length": 1}, "至少为 2"),
    ({"n": 3, "length": 5, "vocab_size": 1}, "词表大小"),
    ({"n": 3, "length": 2.5}, "序列长度"),
])
def test_invalid_arguments_raise_chinese_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        previous_and_first(**kwargs)
