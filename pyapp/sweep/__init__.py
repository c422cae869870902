"""The headless sweep (`python -m pyapp sweep`): the page driven by Playwright, its files."""
