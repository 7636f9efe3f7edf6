import os

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("TFCOURSE_STRICT_FONTS", "1")
