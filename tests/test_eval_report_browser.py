"""The HTML report opened in headless Chromium: it renders, plots are present, no errors."""

from __future__ import annotations

import pytest

from eval_browser import Browser, available

pytest.importorskip("websocket")
pytestmark = pytest.mark.skipif(not available(), reason="chromium not installed "
                                                        "(scripts/install-chromium.sh)")


def test_report_renders_in_chromium(bbc_report, tmp_path):
    browser = Browser()
    try:
        browser.open((bbc_report / "report.html").as_uri())
        assert browser.evaluate("document.title") == "dptext evaluation report"
        images = browser.evaluate(
            "Array.from(document.images).map(i => [i.alt, i.complete, i.naturalWidth])")
        alts = [a for a, _, _ in images]
        assert len(images) >= 6, alts
        assert all(done and width > 100 for _, done, width in images), images
        for needed in ("Accuracy on real test data", "Real vs synthetic documents (t-SNE)",
                       "Entity leakage", "NLI score distribution"):
            assert needed in alts
        sections = browser.evaluate("Array.from(document.querySelectorAll('section')).map(s=>s.id)")
        assert sections[:2] == ["summary", "utility"]
        assert {"leakage", "fairness", "coherence", "fidelity"} <= set(sections)
        rows = browser.evaluate("document.querySelectorAll('table.summary tbody tr').length")
        assert rows >= 5
        assert browser.errors() == []
        browser.screenshot(tmp_path / "report.png")
        assert (tmp_path / "report.png").stat().st_size > 10_000
    finally:
        browser.close()
