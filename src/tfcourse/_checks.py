"""输入校验的小工具：让错误信息说清"期望什么、拿到了什么"。"""
from __future__ import annotations

import numbers

import numpy as np


def positive_int(value, name: str) -> int:
    """确认 value 是正整数（bool 不算），返回 int；否则抛出中文 ValueError。"""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} 应为正整数，实际得到 {value!r}（类型 {type(value).__name__}）。")
    if value <= 0:
        raise ValueError(f"{name} 应为正整数（≥ 1），实际得到 {value}。")
    return int(value)


def finite_number(value, name: str) -> float:
    """确认 value 是有限实数，返回 float。"""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} 应为实数，实际得到 {value!r}（类型 {type(value).__name__}）。")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} 应为有限实数，实际得到 {value}。")
    return value


def as_float_array(value, name: str, ndim: int | tuple[int, ...]) -> np.ndarray:
    """把 value 转成 float64 数组并检查维数；ndim 可以是一个或几个允许的维数。"""
    allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} 应为数值数组，无法转换：{exc}") from None
    if arr.ndim not in allowed:
        want = " 或 ".join(f"{d} 维" for d in allowed)
        raise ValueError(f"{name} 应为 {want}数组，实际形状为 {arr.shape}（{arr.ndim} 维）。")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} 含有 NaN 或无穷大。")
    return arr


def describe_shape(x) -> str:
    """错误信息里描述"拿到了什么"：torch 张量给出形状，别的数组给出类型和形状，其他东西给出类型名。"""
    shape = getattr(x, "shape", None)
    if shape is None:
        return type(x).__name__
    if type(x).__name__ == "Tensor":
        return str(tuple(shape))
    return f"{type(x).__name__}，形状 {tuple(shape)}"


class ModelConfig:
    """TransformerConfig、BertConfig、GPTConfig 共用的校验与方法（它们都是冻结的 dataclass）。

    子类在类属性 POSITIVE 里列出必须是正整数的字段；__post_init__ 里调用 self.check_common()。
    """

    POSITIVE: tuple[str, ...] = ()

    def check_common(self) -> None:
        cls = type(self).__name__
        for name in self.POSITIVE:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
                raise ValueError(f"{cls}.{name} 应为正整数，实际为 {value!r}。")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model 必须能被 n_heads 整除（每个头分到 d_model / n_heads 维）："
                f"d_model={self.d_model}，n_heads={self.n_heads}，余 {self.d_model % self.n_heads}。"
            )
        if isinstance(self.dropout, bool) or not isinstance(self.dropout, numbers.Real) \
                or not 0.0 <= float(self.dropout) < 1.0:
            raise ValueError(f"{cls}.dropout 应在 [0, 1) 之间，实际为 {self.dropout!r}。")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def replace(self, **changes):
        """返回改了几个字段的新配置（配置本身不可变）。"""
        import dataclasses
        return dataclasses.replace(self, **changes)
