"""无障碍审计，暗色主题：与 test_accessibility.py 相同的检查（那个文件按文件分给测试进程，这里是另一半）。"""
from __future__ import annotations

import pytest

from test_accessibility import PAGES, check_page


@pytest.mark.parametrize("path", PAGES)
def test_page_passes_the_wcag_audit_in_the_dark_theme(browser, site_url, path):
    check_page(browser, site_url, path, "dark")
