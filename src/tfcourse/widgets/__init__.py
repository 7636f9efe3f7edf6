"""交互小部件（基于 anywidget）：Python 计算，浏览器只负责显示和选择。第 1 章引入（记忆探索器、热力图、注意力游乐场），第 3、5、6、11、13、15、16 章各添一个；章末的自测是 Quiz（第 14 章引入）。

需要扫参数的小部件会收到包里预先算好的整张网格，所以在没有内核的静态网站上也能照常交互；
在活的内核里，读者的选择会同步回 Python（例如 heatmap.selected）。
"""
from .architecture_map import ArchitectureMap
from .attention_playground import AttentionPlayground
from .bpe_explorer import BPEMergeExplorer
from .heatmap import AttentionHeatmap
from .knowledge_map import KnowledgeMap
from .pe_explorer import PositionalEncodingExplorer
from .rope_explorer import RopeExplorer
from .quiz import Quiz
from .rnn_explorer import RNNMemoryExplorer, format_state
from .sample_board import SampleBoard
from .sampling_explorer import SamplingExplorer
from .scaling_explorer import ScalingExplorer

__all__ = ["ArchitectureMap", "AttentionPlayground", "AttentionHeatmap", "BPEMergeExplorer", "KnowledgeMap", "PositionalEncodingExplorer", "Quiz", "RopeExplorer", "RNNMemoryExplorer", "SampleBoard", "SamplingExplorer", "ScalingExplorer", "format_state"]
